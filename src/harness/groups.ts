// The agents' process groups, and who stops them when the harness cannot. Each agent runs as the leader
// of its own process group (spawn detached = setsid), so its children — an MCP server among them — are
// stopped with it by one kill(-pgid). Three lines of defence, for three ways a harness ends:
//   1. it stops normally, or on SIGINT/SIGTERM: it kills the groups itself (run.ts);
//   2. it dies without running any code (kill -9, an OOM kill): ONE watchdog process per run holds a pipe
//      from the harness and is told every group as it starts and ends; the kernel closes the pipe when
//      the harness dies, however it died, and the watchdog then stops every group it still knows
//      (SIGTERM, SIGKILL after a grace period) and exits;
//   3. the watchdog itself was killed too (a kill of the whole session, a reboot of the container): the
//      run directory's pid file lists the groups that may have survived, and a resumed run sweeps them.
// A pid is reused once its process (and its group) is gone, so every kill is checked against the start
// time the kernel gave the leader (/proc/PID/stat, field 22): a process with the same pid and another
// start time is a stranger, never killed. A group whose leader has exited but whose members live on
// cannot have been reused (POSIX keeps a process-group id reserved while the group has members).
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Writable } from 'node:stream';

/** The pid file of a run directory: the groups of the agents that were running, one JSON object a line. */
export const PID_FILE = 'agents.pids';

export interface GroupEntry {
  /** The leader's pid = the group id. */
  pid: number;
  /** The leader's start time in clock ticks since boot (/proc/PID/stat); null where there is no /proc. */
  start: number | null;
  /** What it was running (the proxy session), for a reader of the file. */
  session: string;
}

/** A process's state letter, process group and start time (/proc/PID/stat fields 3, 5 and 22, in
 * clock ticks since boot), or undefined when it does not exist (or there is no /proc). */
function procStat(pid: number): { state: string; pgrp: number; start: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], pgrp: Number(fields[2]), start: Number(fields[19]) };
  } catch {
    return undefined;
  }
}

/** The start time of a process (clock ticks since boot), or undefined when it does not exist (or no /proc). */
export function procStart(pid: number): number | undefined {
  return procStat(pid)?.start;
}

/**
 * Whether process group `pid` has a member left that is alive. kill(-pid, 0) answers for the kernel's
 * group (ESRCH: none; EPERM: it exists, not ours), but that group also holds zombies — dead processes
 * waiting for their parent to reap them; an orphaned agent's parent is init, which may take seconds —
 * so where /proc can tell, a group whose members are all zombies has ended: nothing in it runs.
 */
export function groupExists(pid: number): boolean {
  try {
    process.kill(-pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const leader = procStat(pid);
  if (leader !== undefined && leader.pgrp === pid && leader.state !== 'Z') return true;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true; // no /proc: the kernel's word
  }
  for (const d of entries) {
    if (d.charCodeAt(0) < 48 || d.charCodeAt(0) > 57) continue; // not a process
    const s = procStat(Number(d));
    if (s !== undefined && s.pgrp === pid && s.state !== 'Z') return true;
  }
  return false;
}

/** Whether group `e` is still the group the harness started, with a member alive: its leader with the
 * same start time, or, the leader gone, members left in the group (a group id is not reused while it
 * has members). */
export function sameGroup(e: Pick<GroupEntry, 'pid' | 'start'>): boolean {
  if (e.start === null) return false;
  const start = procStart(e.pid);
  return (start === undefined || start === e.start) && groupExists(e.pid);
}

/** For a group the harness still holds: where there is no /proc to tell, the group's existence. */
const liveGroup = (e: GroupEntry): boolean => (e.start === null ? groupExists(e.pid) : sameGroup(e));

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

/**
 * The watchdog, run as `node -e WATCHDOG`: plain JavaScript with no imports of ours, so it starts in a
 * few tens of milliseconds without the TypeScript loader. Its stdin carries `+ PID START` (watch this
 * group) and `- PID` (it has ended); at end of input it stops what it still watches and exits. It runs in
 * a session of its own (detached), so a terminal's Ctrl-C, which the harness handles, does not kill it
 * first; it ignores SIGINT/SIGTERM/SIGHUP for the same reason — only its pipe decides. Without /proc
 * (start time null) it trusts its list, which the harness keeps current.
 */
export const WATCHDOG = String.raw`
const fs = require('node:fs');
const grace = Number(process.argv[1]);
const live = new Map();
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, () => {});
const start = (pid) => {
  try {
    const stat = fs.readFileSync('/proc/' + pid + '/stat', 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return undefined;
  }
};
const exists = (pid) => {
  try {
    process.kill(-pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
};
const same = (pid, s) => {
  const now = start(pid);
  return now !== undefined ? s === null || now === s : exists(pid);
};
const kill = (pid, signal) => {
  try {
    process.kill(-pid, signal);
  } catch {}
};
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  buf += d;
  const lines = buf.split('\n');
  buf = lines.pop();
  for (const line of lines) {
    const [op, pid, s] = line.split(' ');
    if (op === '+') live.set(Number(pid), s === 'null' ? null : Number(s));
    else if (op === '-') live.delete(Number(pid));
  }
});
const stop = () => {
  const mine = [...live].filter(([pid, s]) => same(pid, s)).map(([pid]) => pid);
  for (const pid of mine) kill(pid, 'SIGTERM');
  const deadline = Date.now() + grace;
  const poll = () => {
    const left = mine.filter(exists);
    if (left.length === 0) process.exit(0);
    if (Date.now() >= deadline) {
      for (const pid of left) kill(pid, 'SIGKILL');
      process.exit(0);
    }
    setTimeout(poll, 25);
  };
  poll();
};
process.stdin.on('end', stop);
process.stdin.on('error', stop);
`;

/**
 * The groups of one harness run: each is told to the watchdog and written to the pid file while it
 * lives. `close()` (the run is over) stops any group still live and lets the watchdog go.
 */
export class AgentGroups {
  private readonly live = new Map<number, GroupEntry>();
  private readonly watchdog: ChildProcess | undefined;
  private readonly pipe: Writable | undefined;

  constructor(
    private readonly pidFile: string,
    graceMs: number,
  ) {
    try {
      // The pid file's path is an argument it does not read: `ps` shows which run a watchdog guards.
      this.watchdog = spawn(process.execPath, ['-e', WATCHDOG, String(graceMs), pidFile], {
        stdio: ['pipe', 'ignore', 'ignore'],
        detached: true,
      });
      // A watchdog that cannot start (or has been killed) leaves the pid file as the last defence.
      this.watchdog.on('error', () => {});
      this.pipe = this.watchdog.stdin ?? undefined;
      this.pipe?.on('error', () => {});
      // Neither keeps the harness alive: the watchdog is the harness's, not the other way round.
      this.watchdog.unref();
      // (A child's stdio pipe is a net.Socket, which alone can be unref'd.)
      if (this.pipe instanceof Socket) this.pipe.unref();
    } catch {
      this.watchdog = undefined;
    }
    this.save();
  }

  /** The watchdog's pid (tests check that it is gone once the run is). */
  get watchdogPid(): number | undefined {
    return this.watchdog?.pid;
  }

  /** A group has started: its leader is `pid`. */
  add(pid: number, session: string): void {
    const start = procStart(pid) ?? null;
    this.live.set(pid, { pid, start, session });
    this.pipe?.write(`+ ${pid} ${start}\n`);
    this.save();
  }

  /** Stops a group (whatever its leader left running) and forgets it. */
  release(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
    const e = this.live.get(pid);
    if (e === undefined) return;
    if (liveGroup(e)) signalGroup(pid, signal);
    this.live.delete(pid);
    this.pipe?.write(`- ${pid}\n`);
    this.save();
  }

  /** The run is over: every group still live is killed, the pid file emptied, the watchdog let go. */
  close(): void {
    for (const pid of [...this.live.keys()]) this.release(pid);
    this.pipe?.end();
  }

  private save(): void {
    const tmp = `${this.pidFile}.tmp`;
    writeFileSync(tmp, [...this.live.values()].map((e) => `${JSON.stringify(e)}\n`).join(''));
    renameSync(tmp, this.pidFile);
  }
}

/** The entries of a pid file (none when it is missing; a torn or foreign line is skipped). */
export function readPidFile(path: string): GroupEntry[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  const entries: GroupEntry[] = [];
  for (const line of text.split('\n')) {
    try {
      const e = JSON.parse(line) as GroupEntry;
      if (Number.isInteger(e.pid) && e.pid > 1 && (e.start === null || Number.isFinite(e.start)))
        entries.push(e);
    } catch {
      // An empty or half-written line.
    }
  }
  return entries;
}

/**
 * The resume's sweep: stops the groups of a pid file that are still the groups the dead harness started
 * (same leader start time, or leaderless members), SIGTERM then SIGKILL after `graceMs`. An entry with
 * no start time (no /proc when it was written) cannot be told from a reused pid and is left alone.
 * Returns the groups it stopped.
 */
export async function sweepGroups(path: string, graceMs: number): Promise<number[]> {
  const mine = readPidFile(path).filter(sameGroup);
  for (const e of mine) signalGroup(e.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  for (;;) {
    const left = mine.filter((e) => groupExists(e.pid));
    if (left.length === 0) break;
    if (Date.now() >= deadline) {
      for (const e of left) signalGroup(e.pid, 'SIGKILL');
      break;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return mine.map((e) => e.pid);
}
