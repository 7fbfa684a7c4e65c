// JSON Lines: one value per line. Writes are buffered and flushed in large chunks (a trajectory stream
// of millions of turns must not be bound by syscalls), or each as it comes with `eager` (a run that
// crashes, or is killed, leaves every line written before it in the file); reads validate every line
// against a schema and report the file and line of the first bad one.
import { isAscii, isUtf8 } from 'node:buffer';
import { closeSync, fsyncSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import type { z } from 'zod';
import { InputError } from '../core/errors.ts';
import type { Trajectory } from '../core/types.ts';
import { fromZod } from '../core/validate.ts';
import { fastTrajectory } from './fast-trajectory.ts';
import { asTrajectory, TrajectorySchema } from './schema.ts';

const CHUNK = 1 << 20;

export class JsonlWriter {
  private fd: number;
  private buffer: string[] = [];
  private size = 0;
  private readonly chunk: number;
  readonly path: string;

  /** Opens `path` for writing (truncating), or for appending with `append`; with `eager`, every value is
   * written to the file when it is given (one write per line), else in chunks of 1 MiB. */
  constructor(path: string, options: { append?: boolean; eager?: boolean } = {}) {
    this.path = path;
    this.chunk = options.eager ? 0 : CHUNK;
    try {
      this.fd = openSync(path, options.append ? 'a' : 'w');
    } catch (e) {
      throw new InputError(
        '--out',
        path,
        `cannot write it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    }
  }

  write(value: unknown): void {
    const line = `${JSON.stringify(value)}\n`;
    this.buffer.push(line);
    this.size += line.length;
    if (this.size >= this.chunk) this.flush();
  }

  flush(): void {
    if (this.buffer.length === 0) return;
    writeSync(this.fd, this.buffer.join(''));
    this.buffer = [];
    this.size = 0;
  }

  /** Flushes, makes the data durable and closes the file. */
  close(): void {
    this.flush();
    try {
      fsyncSync(this.fd);
    } catch (e) {
      // A device or pipe (/dev/null, a FIFO) cannot be synced, and need not be.
      if ((e as NodeJS.ErrnoException).code !== 'EINVAL') throw e;
    }
    closeSync(this.fd);
  }
}

export function readText(path: string, field = '--in'): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new InputError(
      field,
      path,
      `cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
}

/** The longest line the reader takes: a trajectory line is far shorter, so a longer one is an unbounded
 * stream or not a trajectory file, refused with its number before memory grows without limit (a line
 * of V8's longest string, ~512 MiB, could not even be decoded). An object so that a test can lower it. */
export const LINE_LIMIT = { bytes: 128 * 1024 * 1024 };

/** The lines of a file, read in 1 MiB chunks (never the whole file as one string: V8 strings stop at
 * ~512 MB), with their 1-based numbers; blank lines are skipped. A chunk is cut at its last newline byte
 * (0x0A never occurs inside a multi-byte UTF-8 character) and the rest carried over as bytes, so each
 * chunk decodes on its own — as Latin-1 when it is ASCII, the usual case (the same string, ~4× faster
 * than UTF-8 decoding) — and a line longer than the buffer grows it, up to LINE_LIMIT. With `utf8`,
 * a line that is not valid UTF-8 (JSON text is UTF-8, RFC 8259 §8.1; decoding would silently turn its
 * bad bytes into U+FFFD, and two different names into one) is refused, or counted in `utf8.skipped`
 * and skipped; without, it is decoded so. */
export function* fileLines(
  path: string,
  field = '--in',
  utf8?: { skipped?: SkippedLines },
): Generator<[line: string, number: number, offset: number, bytes: number]> {
  const refuse = (e: unknown) =>
    new InputError(
      field,
      path,
      `cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  const tooLong = (number: number) =>
    InputError.raw(
      `${path}:${number}`,
      `line longer than ${LINE_LIMIT.bytes} bytes, the longest a line may be (is ${field} a trajectory file?)`,
    );
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw refuse(e);
  }
  let buf = Buffer.allocUnsafe(CHUNK);
  let carried = 0; // bytes of an unfinished line at buf[0, carried)
  let base = 0; // the file offset of buf[0]
  let number = 0;
  try {
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buf, carried, buf.length - carried, null);
      } catch (e) {
        throw refuse(e);
      }
      const end = carried + n;
      const cut = n === 0 ? end : buf.lastIndexOf(10, end - 1);
      if (cut < 0) {
        // No newline yet: buf[0, end) is one unfinished line. Read on (into a bigger buffer when this
        // one is full), unless it is too long already.
        if (end > LINE_LIMIT.bytes) throw tooLong(number + 1);
        if (end === buf.length) {
          const bigger = Buffer.allocUnsafe(Math.min(buf.length * 2, LINE_LIMIT.bytes + 1));
          buf.copy(bigger, 0, 0, end);
          buf = bigger;
        }
        carried = end;
        continue;
      }
      // An ASCII chunk is decoded once (its character indices are its byte offsets); another line by line.
      const text = isAscii(buf.subarray(0, cut)) ? buf.toString('latin1', 0, cut) : undefined;
      for (let p = 0; p <= cut; ) {
        let q = text === undefined ? buf.indexOf(10, p) : text.indexOf('\n', p);
        if (q === -1 || q > cut) q = cut;
        number++;
        if (q - p > LINE_LIMIT.bytes) throw tooLong(number);
        if (utf8 !== undefined && text === undefined && !isUtf8(buf.subarray(p, q))) {
          const bad = InputError.raw(
            `${path}:${number}`,
            'not valid UTF-8 (a trajectory file is UTF-8 text, as JSON is)',
          );
          if (utf8.skipped === undefined) throw bad;
          utf8.skipped.add(number, bad.message);
          p = q + 1;
          continue;
        }
        const line = trim(text === undefined ? buf.toString('utf8', p, q) : text.slice(p, q));
        if (line.length > 0) yield [line, number, base + p, q - p];
        p = q + 1;
      }
      if (n === 0) return;
      buf.copy(buf, 0, cut + 1, end);
      carried = end - cut - 1;
      base += cut + 1;
    }
  } finally {
    closeSync(fd);
  }
}

/** Lines of a file read again by the offsets and lengths fileLines gave (a second pass over chosen
 * lines, without holding them). */
export class LineReader {
  private readonly fd: number;
  private buf = Buffer.allocUnsafe(1 << 16);

  constructor(
    readonly path: string,
    readonly field = '--in',
  ) {
    try {
      this.fd = openSync(path, 'r');
    } catch (e) {
      throw new InputError(
        field,
        path,
        `cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    }
  }

  /** The line fileLines yielded at `offset` (`bytes` long); refused if the file has changed under it. */
  read(offset: number, bytes: number): string {
    if (bytes > this.buf.length) this.buf = Buffer.allocUnsafe(bytes);
    const n = readSync(this.fd, this.buf, 0, bytes, offset);
    if (n !== bytes)
      throw new InputError(this.field, this.path, `changed while being read (line at byte ${offset})`);
    return trim(this.buf.toString('utf8', 0, bytes));
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** `s.trim()`, skipped when neither end can be white space (JSON lines: `{` and `}`). */
const trim = (s: string): string =>
  s.length > 0 &&
  s.charCodeAt(0) > 32 &&
  s.charCodeAt(0) < 128 &&
  s.charCodeAt(s.length - 1) > 32 &&
  s.charCodeAt(s.length - 1) < 128
    ? s
    : s.trim();

/** Every line of a JSONL file, parsed and validated one at a time (memory: one line), with its place
 * (`file:line`) for messages about it. */
function* validatedLines<S extends z.ZodType>(
  path: string,
  schema: S,
  field: string,
): Generator<[value: z.infer<S>, where: string]> {
  for (const [line, number] of fileLines(path, field, {})) {
    const where = `${path}:${number}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      throw InputError.raw(where, `not valid JSON (${(e as Error).message})`);
    }
    yield [fromZod(schema, value, where), where];
  }
}

/** Every line of a JSONL file, parsed and validated one at a time (memory: one line). */
export function* iterateJsonl<S extends z.ZodType>(
  path: string,
  schema: S,
  field = '--in',
): Generator<z.infer<S>> {
  for (const [value] of validatedLines(path, schema, field)) yield value;
}

/**
 * The lines a reader skipped instead of refusing (`--skip-invalid`): how many, and the first one's
 * number and the message it would have been refused with. Only bad lines are skipped — an unreadable
 * file is still refused.
 */
export class SkippedLines {
  count = 0;
  first: { line: number; reason: string } | null = null;

  add(line: number, reason: string): void {
    this.count++;
    if (this.first === null) this.first = { line, reason };
  }

  toJSON(): { count: number; first: { line: number; reason: string } | null } {
    return { count: this.count, first: this.first };
  }

  /** One line for the log: how many lines of `path` were skipped, and the first one's reason. */
  note(path: string): string {
    if (this.first === null) return `${path}: no invalid lines`;
    return `skipped ${this.count} invalid line${this.count === 1 ? '' : 's'} of ${path}; the first, line ${this.first.line}: ${this.first.reason}`;
  }
}

/** A line's trajectory, validated (schema, then `check`); throws InputError naming `where`. */
export function parseTrajectoryLine(
  line: string,
  where: string,
  check?: (t: Trajectory, where: string) => void,
): Trajectory {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    throw InputError.raw(where, `not valid JSON (${(e as Error).message})`);
  }
  // The common shape is checked by hand (as zod would, ~10× faster); the rest, and every message, by zod.
  const t = fastTrajectory(value) ?? asTrajectory(fromZod(TrajectorySchema, value, where));
  check?.(t, where);
  return t;
}

/** `parse()`, or — with `skipped` — undefined after counting the line that parse refused. */
export function orSkip<T>(parse: () => T, number: number, skipped: SkippedLines | undefined): T | undefined {
  if (skipped === undefined) return parse();
  try {
    return parse();
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    skipped.add(number, e.message);
    return undefined;
  }
}

/** The refusal of a file that yielded nothing: empty, or (with skipped lines) nothing valid. */
export function noTrajectories(path: string, field: string, skipped: SkippedLines | undefined): InputError {
  if (skipped === undefined || skipped.count === 0)
    return new InputError(field, path, 'the file holds no trajectories');
  return new InputError(
    field,
    path,
    `the file holds no valid trajectories (${skipped.count} lines skipped; the first, ${skipped.first!.reason})`,
  );
}

/**
 * A trajectory file read in passes without holding it: `scan()` gives each valid trajectory with its
 * place (line number, byte offset and length; `check` may refuse one by its place; with `skipped`, a
 * line that would be refused is counted there and skipped instead; a file with none is refused once
 * read through), and `open()` a reader of trajectories back by that place (credit/file.ts).
 */
export class TrajectoryFile {
  constructor(
    readonly path: string,
    readonly field = '--in',
    private readonly check?: (t: Trajectory, where: string) => void,
    private readonly skipped?: SkippedLines,
  ) {}

  *scan(): Generator<[trajectory: Trajectory, line: number, offset: number, bytes: number]> {
    let any = false;
    for (const [line, number, offset, bytes] of fileLines(this.path, this.field, {
      skipped: this.skipped,
    })) {
      const where = `${this.path}:${number}`;
      const t = orSkip(() => parseTrajectoryLine(line, where, this.check), number, this.skipped);
      if (t === undefined) continue;
      any = true;
      yield [t, number, offset, bytes];
    }
    if (!any) throw noTrajectories(this.path, this.field, this.skipped);
  }

  open(): { read(line: number, offset: number, bytes: number): Trajectory; close(): void } {
    const reader = new LineReader(this.path, this.field);
    return {
      read: (line, offset, bytes) => parseTrajectoryLine(reader.read(offset, bytes), `${this.path}:${line}`),
      close: () => reader.close(),
    };
  }
}

/** The trajectories of a file, one at a time (TrajectoryFile's scan without the places). */
export function* iterateTrajectories(
  path: string,
  field = '--in',
  check?: (t: Trajectory, where: string) => void,
  skipped?: SkippedLines,
): Generator<Trajectory> {
  for (const [t] of new TrajectoryFile(path, field, check, skipped).scan()) yield t;
}

export function readTrajectories(
  path: string,
  field = '--in',
  check?: (t: Trajectory, where: string) => void,
  skipped?: SkippedLines,
): Trajectory[] {
  return [...iterateTrajectories(path, field, check, skipped)];
}
