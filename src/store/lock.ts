// A directory lock for anything that writes a run: `lock` holds {pid, host, started}. It is created
// with its content in one step — written to a private file, then hard-linked to `lock`, which fails
// if `lock` exists — so of two writers exactly one gets it and a lock is never seen half-written. A
// lock whose process is gone (same host, pid not alive) is stale and is taken over under a second
// exclusive file, `lock.takeover`: its holder re-reads `lock`, and only if it is still the same stale
// content replaces it, so two processes taking over one stale lock cannot both win. Everything that
// could damage a run (a second writer, a resume of a live run) is refused here, before any other file
// of the run is touched.
import { closeSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../core/errors.ts';

export const LOCK_FILE = 'lock';

interface LockInfo {
  pid: number;
  host: string;
  started: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but is not ours.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

function parse(text: string): LockInfo | null {
  try {
    const x = JSON.parse(text) as LockInfo;
    return typeof x.pid === 'number' && typeof x.host === 'string' ? x : null;
  } catch {
    return null;
  }
}

function tryUnlink(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/** Creates `path` holding `text`, atomically; false when it exists. */
function createWith(path: string, text: string, field: string, dir: string): boolean {
  const tmp = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  let fd: number;
  try {
    fd = openSync(tmp, 'wx');
  } catch (e) {
    throw new InputError(field, dir, `cannot lock it (${(e as NodeJS.ErrnoException).code})`);
  }
  try {
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, path);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new InputError(field, dir, `cannot lock it (${(e as NodeJS.ErrnoException).code})`);
  } finally {
    tryUnlink(tmp);
  }
}

export class DirLock {
  readonly path: string;
  private readonly mine: string;
  private released = false;

  private constructor(path: string, mine: string) {
    this.path = path;
    this.mine = mine;
  }

  /** Takes the lock of `dir` (which must exist) or refuses, naming `field`, the holder and how. */
  static acquire(dir: string, field: string): DirLock {
    const path = join(dir, LOCK_FILE);
    const mine = `${JSON.stringify({ pid: process.pid, host: hostname(), started: new Date().toISOString() })}\n`;
    for (let attempt = 0; attempt < 50; attempt++) {
      if (createWith(path, mine, field, dir)) return new DirLock(path, mine);
      const text = readText(path);
      if (text === null) continue; // released meanwhile: try again
      const held = parse(text);
      if (held !== null && (held.host !== hostname() || alive(held.pid))) {
        throw new InputError(
          field,
          dir,
          `is in use by process ${held.pid} on ${held.host} since ${held.started}; wait for it to finish or stop it`,
        );
      }
      // Stale (its process is gone) or unreadable: take it over, one process at a time.
      const guard = `${path}.takeover`;
      if (!createWith(guard, mine, field, dir)) {
        const g = parse(readText(guard) ?? '');
        if (g !== null && g.host === hostname() && !alive(g.pid)) tryUnlink(guard); // a dead taker
        continue;
      }
      try {
        if (readText(path) === text) tryUnlink(path);
      } finally {
        tryUnlink(guard);
      }
    }
    throw new InputError(field, dir, 'cannot lock it: other processes keep taking its lock');
  }

  /** Releases the lock if it is still ours (idempotent). */
  release(): void {
    if (this.released) return;
    this.released = true;
    if (readText(this.path) === this.mine) tryUnlink(this.path);
  }
}
