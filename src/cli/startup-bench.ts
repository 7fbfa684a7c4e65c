// `turnwise bench cli`: the CLI's start-up against bare `node -e 0`, in one run. Each round starts every
// command once, in turn, so that a load that comes and goes on the machine falls on all of them alike;
// the figures are medians of wall time and means of CPU time (user + system of the child, read from
// /proc/self/stat's cutime/cstime where Linux has it: what a busy machine disturbs least).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

/** The commands timed, beside bare node: the help, a light command, and a refusal (bad input). */
export const STARTUP_COMMANDS: Record<string, string[]> = {
  help: ['--help'],
  'env oracle': ['env', 'oracle', 'frozenlake', '--budget', '10'],
  refusal: ['rollout', '--policy', 'random', '--episodes', '3', '--budget', 'x'],
};

interface Figure {
  wallMs: number;
  /** Absent where the platform does not say how much CPU children used. */
  cpuMs?: number;
}

export interface StartupResult {
  rounds: number;
  bare: Figure;
  commands: Record<string, Figure & { ratio: number; ratioCpu?: number; exitCode: number | null }>;
}

/** CPU milliseconds used so far by this process's waited-for children (Linux), or undefined. */
function childrenCpuMs(): number | undefined {
  if (!existsSync('/proc/self/stat')) return undefined;
  // Fields after the command name (which may hold spaces) start at state; cutime and cstime are the
  // 16th and 17th fields of the line, in clock ticks (USER_HZ = 100 on Linux).
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(rest[13]) + Number(rest[14])) / 100) * 1000;
}

function timeOnce(args: string[]): { wallMs: number; cpuMs?: number; exitCode: number | null } {
  const cpu0 = childrenCpuMs();
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { stdio: 'ignore', env: { ...process.env, NO_COLOR: '1' } });
  const wallMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu1 = childrenCpuMs();
  return {
    wallMs,
    cpuMs: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0,
    exitCode: r.status,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** `bin`: the CLI's script (the running one: process.argv[1] when `turnwise bench cli` runs). */
export function startupBench(bin: string, rounds: number): StartupResult {
  const runs: Record<string, ReturnType<typeof timeOnce>[]> = { bare: [] };
  for (const name of Object.keys(STARTUP_COMMANDS)) runs[name] = [];
  // One untimed start first: a stale precompiled copy is rebuilt there, not in a timed run.
  timeOnce([bin, '--version']);
  for (let r = 0; r < rounds; r++) {
    runs.bare!.push(timeOnce(['-e', '0']));
    for (const [name, args] of Object.entries(STARTUP_COMMANDS)) runs[name]!.push(timeOnce([bin, ...args]));
  }
  const figure = (xs: ReturnType<typeof timeOnce>[]): Figure => {
    const cpu = xs.map((x) => x.cpuMs);
    return {
      wallMs: median(xs.map((x) => x.wallMs)),
      ...(cpu.every((c) => c !== undefined) ? { cpuMs: mean(cpu as number[]) } : {}),
    };
  };
  const bare = figure(runs.bare!);
  const commands: StartupResult['commands'] = {};
  for (const name of Object.keys(STARTUP_COMMANDS)) {
    const f = figure(runs[name]!);
    commands[name] = {
      ...f,
      ratio: f.wallMs / bare.wallMs,
      ...(f.cpuMs !== undefined && bare.cpuMs !== undefined ? { ratioCpu: f.cpuMs / bare.cpuMs } : {}),
      exitCode: runs[name]![0]!.exitCode,
    };
  }
  return { rounds, bare, commands };
}
