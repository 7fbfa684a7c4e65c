// Where the CLI writes: results to stdout, progress and warnings to stderr (progress only on a TTY,
// and never when CI is set). Colour honours NO_COLOR.
export function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

export function json(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

export function warn(text: string): void {
  process.stderr.write(`turnwise: ${text}\n`);
}

/** Whether stderr is a terminal a person watches (progress bars), not a log (CI, a pipe). */
export const interactive = (): boolean => process.stderr.isTTY === true && !process.env.CI;

/** A one-line progress indicator on stderr for TTYs; silent otherwise (logs stay clean). */
export class Progress {
  private readonly label: string;
  private readonly total: number;
  private last = 0;
  private readonly enabled = interactive();
  private shown = 0;
  private note = '';

  constructor(label: string, total: number) {
    this.label = label;
    this.total = total;
  }

  update(done: number, extra = ''): void {
    if (!this.enabled) return;
    this.shown = done;
    const now = Date.now();
    if (now - this.last < 100 && done < this.total) return;
    this.last = now;
    const width = 24;
    const frac = this.total > 0 ? Math.min(1, done / this.total) : 1;
    const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '.');
    const text = [extra, this.note].filter((x) => x !== '').join(' | ');
    process.stderr.write(`\r${this.label} [${bar}] ${done}/${this.total} ${text}\x1b[K`);
  }

  /** A status shown beside the bar from now on (a rollout queue's counts), redrawn at once. */
  setNote(note: string): void {
    this.note = note;
    this.update(this.shown);
  }

  done(): void {
    if (this.enabled) process.stderr.write('\r\x1b[K');
  }
}

/** One row of an aligned text table with the given column widths (the first column left-aligned). */
export const tableRow = (cells: readonly string[], widths: readonly number[]): string =>
  cells
    .map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
    .join('  ')
    .trimEnd();

/** Formats rows as an aligned text table (first row = header). */
export function table(rows: readonly (readonly (string | number)[])[]): string {
  const cells = rows.map((r) => r.map(String));
  const widths: number[] = [];
  for (const r of cells) {
    r.forEach((c, i) => {
      widths[i] = Math.max(widths[i] ?? 0, [...c].length);
    });
  }
  const lines = cells.map((r) => tableRow(r, widths));
  if (lines.length > 1) lines.splice(1, 0, widths.map((w) => '-'.repeat(w)).join('  '));
  return lines.join('\n');
}

/** Writes text to stdout in ~1 MiB pieces (stdout is synchronous for files and pipes: memory stays
 * bounded however long the output). */
export class Chunked {
  private parts: string[] = [];
  private size = 0;

  write(text: string): void {
    this.parts.push(text);
    this.size += text.length;
    if (this.size >= 1 << 20) this.flush();
  }

  flush(): void {
    if (this.parts.length > 0) process.stdout.write(this.parts.join(''));
    this.parts = [];
    this.size = 0;
  }
}

export function fmt(x: number | null | undefined, digits = 4): string {
  if (x === null || x === undefined || Number.isNaN(x)) return '-';
  return x.toFixed(digits);
}

/** Resolves once SIGINT or SIGTERM came and `close` (a server's) finished: a server command's end. */
export function untilSignal(close: () => Promise<void>): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      close().then(resolve, resolve);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
