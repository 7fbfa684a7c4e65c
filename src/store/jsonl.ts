// JSON Lines: one value per line. Writes are buffered and flushed in large chunks (a trajectory stream
// of millions of turns must not be bound by syscalls); reads validate every line against a schema and
// report the file and line of the first bad one.
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import type { z } from 'zod';
import { InputError } from '../core/errors.ts';
import type { Trajectory } from '../core/types.ts';
import { fromZod } from '../core/validate.ts';
import { asTrajectory, TrajectorySchema } from './schema.ts';

const CHUNK = 1 << 20;

export class JsonlWriter {
  private fd: number;
  private buffer: string[] = [];
  private size = 0;
  readonly path: string;

  /** Opens `path` for writing (truncating), or for appending with `append`. */
  constructor(path: string, options: { append?: boolean } = {}) {
    this.path = path;
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
    if (this.size >= CHUNK) this.flush();
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
    fsyncSync(this.fd);
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

/** Every line of a JSONL file, parsed and validated; blank lines are skipped. */
export function readJsonl<S extends z.ZodType>(path: string, schema: S, field = '--in'): z.infer<S>[] {
  const text = readText(path, field);
  const out: z.infer<S>[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line.length === 0) continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      throw InputError.raw(`${path}:${i + 1}`, `not valid JSON (${(e as Error).message})`);
    }
    out.push(fromZod(schema, value, `${path}:${i + 1}`));
  }
  return out;
}

export function readTrajectories(path: string, field = '--in'): Trajectory[] {
  const trajectories = readJsonl(path, TrajectorySchema, field).map(asTrajectory);
  if (trajectories.length === 0) throw new InputError(field, path, 'the file holds no trajectories');
  return trajectories;
}
