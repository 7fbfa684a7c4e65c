// The limits an openai: policy shares across every episode of a run (one policy object serves them all):
// `concurrency` requests in flight (Semaphore), `rpm` requests a minute spaced evenly and `tpm` tokens a
// minute over a sliding window (RateLimiter).

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Semaphore {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(n: number) {
    this.free = n;
  }

  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next !== undefined) next();
    else this.free++;
  }
}

/** rpm: requests spaced 60000/rpm ms apart; tpm: a request waits while the last minute's reported
 * tokens reach tpm. One limiter per policy, so every episode of a run shares it. */
export class RateLimiter {
  private next = 0;
  private readonly spent: { at: number; tokens: number }[] = [];
  private readonly rpm: number | undefined;
  private readonly tpm: number | undefined;
  /** The window of both limits (a minute; shorter only in tests). */
  private readonly windowMs: number;

  constructor(rpm: number | undefined, tpm: number | undefined, windowMs = 60_000) {
    this.rpm = rpm;
    this.tpm = tpm;
    this.windowMs = windowMs;
  }

  async wait(): Promise<void> {
    if (this.rpm !== undefined) {
      const now = performance.now();
      const at = Math.max(now, this.next);
      this.next = at + this.windowMs / this.rpm;
      if (at > now) await sleep(at - now);
    }
    if (this.tpm === undefined) return;
    for (;;) {
      const now = performance.now();
      while (this.spent.length > 0 && this.spent[0].at <= now - this.windowMs) this.spent.shift();
      const used = this.spent.reduce((s, x) => s + x.tokens, 0);
      if (used < this.tpm) return;
      await sleep(this.spent[0].at + this.windowMs - now + 1);
    }
  }

  spend(tokens: number): void {
    if (this.tpm !== undefined && tokens > 0) this.spent.push({ at: performance.now(), tokens });
  }
}
