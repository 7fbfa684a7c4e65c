// `turnwise harness run`: an outside agent (any program, any language) run once per (task, sample) as a
// subprocess, its model calls recorded by the proxy (serve/proxy.ts) under a turn budget, its reward
// taken from the env's own verifier (the MCP episode's trajectory line), a scorer command, or what the
// agent posted to its session. The stages of one episode: open a session → spawn the agent with its
// environment → wait (time limit) → read the reward → one trajectory, stored in one transaction.
//
// Resume: a finished episode is one row of the run store (DIR/run.sqlite, key = episode index), inserted
// atomically, so a harness killed at any point (kill -9 included) re-runs only the episodes with no row.
// An interrupted episode starts again in a fresh proxy session (attempt a+1), never appended to the old.
//
// No agent outlives its harness (groups.ts): each runs in its own process group, killed when its episode
// ends, when the run is aborted (SIGINT/SIGTERM in the CLI → `signal`), by the run's watchdog when the
// harness dies without a word (kill -9), and, failing all that, by the next resume's sweep of the pid file.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InputError } from '../core/errors.ts';
import type { Task, Trajectory } from '../core/types.ts';
import { type RunningProxy, startProxy } from '../serve/proxy.ts';
import type { CallEvent, SessionMeta } from '../serve/proxy-record.ts';
import { isTurnCall, sessionTrajectory } from '../serve/proxy-record.ts';
import { DirLock } from '../store/lock.ts';
import { asTrajectory, TrajectorySchema } from '../store/schema.ts';
import { RunStore } from '../store/sqlite.ts';
import { AgentGroups, groupExists, PID_FILE, sweepGroups } from './groups.ts';

export interface HarnessOptions {
  /** The agent's command line, run by /bin/sh. */
  cmd: string;
  tasks: readonly Task[];
  samples: number;
  /** Turn budget: model calls per episode, enforced at the proxy. */
  budget: number;
  /** Tell the agent the budget (TURNWISE_BUDGET) and the MCP server the turns left. */
  revealBudget: boolean;
  /** The upstream API base the proxy forwards to. */
  upstream: string;
  /** The run directory: run.sqlite, proxy.sqlite, trajectories.jsonl, episodes/. */
  out: string;
  /** A scorer command: the session's trajectory as JSON on stdin, a number on stdout. */
  reward?: string;
  concurrency: number;
  /** Wall time per episode. */
  timeoutMs: number;
  /** Passed as OPENAI_API_KEY (a placeholder otherwise). */
  apiKey?: string;
  /** The command line that serves sample `sample` of a task's env over MCP — with that (task, sample)'s
   * own env stream, as an in-process rollout seeds it — and appends its trajectory to `store` (composed
   * by the CLI, which alone knows the env registry); absent: TURNWISE_MCP is not set. */
  mcpCommand?: (task: Task, sample: number, store: string) => string;
  /** What identifies the run in its store; a resumed run must match it. */
  config: Record<string, unknown>;
  /** Plays the pending episodes (indices) elsewhere — `harness run --queue`, composed by the CLI:
   * each finished one handed to `record` as it arrives, in any order, once; resolves when all are, or
   * when `signal` aborts (those not finished are left for the resume). `created` identifies the run
   * across resumes (its store's creation time). Absent: the episodes run here. */
  queue?: (
    pending: readonly number[],
    spec: AgentSpec,
    created: string,
    record: (idx: number, t: Trajectory) => void,
  ) => Promise<void>;
  /** Called as each episode finishes (done so far, total). */
  onProgress?: (done: number, total: number) => void;
  /** Aborts the run: running agents are stopped (SIGTERM, then SIGKILL), their episodes left unrecorded
   * for the resume, no new episode starts, and the result says `interrupted`. */
  signal?: AbortSignal;
}

export interface HarnessResult {
  trajectories: Trajectory[];
  /** Episodes run by this call (the rest were in the store already). */
  ran: number;
  resumed: number;
  dir: string;
  /** The run was aborted: `trajectories` are the episodes finished so far; rerun to resume. */
  interrupted: boolean;
  /** Agents of an earlier, killed harness found still running by this run's sweep (group ids). */
  swept: number[];
}

export const RUN_ID = 'harness';
/** Bytes of the agent's stderr kept for an error's message. */
const TAIL = 2000;
/** After SIGTERM, how long an agent may take to exit before SIGKILL. */
const KILL_GRACE_MS = 2000;
/** How long the MCP server (the agent's child) may take to append its line after the agent exited. */
const MCP_LINE_WAIT_MS = 5000;

/** Quotes a word for /bin/sh. */
export const shellQuote = (s: string): string =>
  /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stderr: string;
  stdout: string;
  /** Stopped because the run was aborted (not the agent's failure: the episode is not recorded). */
  aborted: boolean;
  /** The process group the command led (its children, an MCP server among them, are in it). */
  pid?: number;
}

interface Spawned {
  groups: AgentGroups;
  /** What the group is running, for the pid file. */
  label: string;
  signal?: AbortSignal;
}

/** Runs a shell command in its own process group, held in `groups` until the caller releases it; on
 * timeout or abort the whole group is stopped. */
function runCommand(
  cmd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  g: Spawned,
  stdin?: string,
): Promise<Exit> {
  return new Promise((done) => {
    if (g.signal?.aborted) {
      done({ code: null, signal: null, timedOut: false, aborted: true, stderr: '', stdout: '' });
      return;
    }
    const child: ChildProcess = spawn('/bin/sh', ['-c', cmd], {
      env,
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    if (child.pid !== undefined) g.groups.add(child.pid, g.label);
    let stderr = '';
    let stdout = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString('utf8')).slice(-TAIL);
    });
    child.stdout?.on('data', (d: Buffer) => {
      stdout = (stdout + d.toString('utf8')).slice(-64 * 1024);
    });
    if (stdin !== undefined) {
      child.stdin?.on('error', () => {}); // a scorer that does not read its input is not an error
      child.stdin?.end(stdin);
    }
    let timedOut = false;
    let aborted = false;
    const group = (signal: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, signal);
      } catch {
        // Already gone.
      }
    };
    let kill: NodeJS.Timeout | undefined;
    const stop = () => {
      if (kill !== undefined) return;
      group('SIGTERM');
      kill = setTimeout(() => group('SIGKILL'), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, timeoutMs);
    const onAbort = () => {
      aborted = true;
      stop();
    };
    g.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (e) => {
      stderr += `\n${e.message}`;
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (kill !== undefined) clearTimeout(kill);
      g.signal?.removeEventListener('abort', onAbort);
      done({ code, signal, timedOut, aborted, stderr, stdout, pid: child.pid });
    });
  });
}

/** The env's own trajectory from the MCP store file, waiting briefly for the server to write it — while
 * the agent's process group (where its MCP server runs) has members: once it is empty nobody will, and
 * an agent that never started the server costs no wait. */
async function mcpLine(path: string, group: number | undefined): Promise<Trajectory | undefined> {
  const deadline = Date.now() + MCP_LINE_WAIT_MS;
  for (;;) {
    const last = group !== undefined && !groupExists(group);
    if (existsSync(path)) {
      const lines = readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '');
      if (lines.length > 0) {
        const parsed = TrajectorySchema.safeParse(JSON.parse(lines[lines.length - 1]));
        return parsed.success ? asTrajectory(parsed.data) : undefined;
      }
    }
    if (last || Date.now() > deadline) return undefined;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The --reward scorer's number, or why there is none. */
async function scorerReward(
  cmd: string,
  t: Trajectory,
  timeoutMs: number,
  g: Spawned,
): Promise<number | string> {
  const r = await runCommand(cmd, process.env, timeoutMs, g, JSON.stringify(t));
  if (r.pid !== undefined) g.groups.release(r.pid);
  if (r.aborted) return 'aborted';
  if (r.timedOut) return `the --reward command timed out after ${timeoutMs / 1000} s`;
  if (r.code !== 0) return `the --reward command exited with ${r.code ?? r.signal}: ${r.stderr.trim()}`;
  const x = Number(r.stdout.trim());
  if (r.stdout.trim() === '' || !Number.isFinite(x)) {
    return `the --reward command printed ${JSON.stringify(r.stdout.trim().slice(0, 80))}, not a number`;
  }
  return x;
}

/** The statuses of refused calls, counted: "400", "400 ×3, 429". */
function statusList(events: readonly CallEvent[]): string {
  const counts = new Map<number, number>();
  for (const e of events) counts.set(e.status, (counts.get(e.status) ?? 0) + 1);
  return [...counts].map(([s, n]) => (n === 1 ? String(s) : `${s} ×${n}`)).join(', ');
}

/**
 * Why an episode failed on the agent's side, or undefined. It crashed or timed out — unless the proxy
 * had refused a call past the budget (`budgetRefused`): an agent that does not handle the refusal exits
 * non-zero, and the budget, not the agent, ended the episode. Or it ended without a model call answered
 * (every call refused — the refused calls' statuses are said — or none made): it never acted, so
 * neither a budget nor a verdict applies, whatever its env's record says.
 */
function agentError(
  events: readonly CallEvent[],
  exit: Exit | undefined,
  timeoutMs: number,
  budgetRefused: boolean,
): string | undefined {
  if (exit === undefined) return undefined;
  const crashed = !budgetRefused && (exit.timedOut || exit.code !== 0);
  const acted = events.some(isTurnCall);
  if (!crashed && acted) return undefined;
  const parts: string[] = [];
  if (!acted) {
    const refused = events.filter((e) => e.status < 200 || e.status >= 300);
    parts.push(
      refused.length === 0
        ? 'the agent made no model call'
        : `no model call answered (${refused.length} refused: ${statusList(refused)})`,
    );
  }
  parts.push(
    exit.timedOut
      ? `the agent timed out after ${timeoutMs / 1000} s`
      : `the agent exited with ${exit.code ?? exit.signal}`,
  );
  const tail = exit.stderr.trim().split('\n').slice(-20).join('\n');
  return `${parts.join('; ')}; stderr: ${tail}`;
}

/**
 * The episode's trajectory: turns = the proxy session's model calls; the outcome from, in order, the
 * agent's end (a crash or a timeout, or no model call answered: `error`, with the refused calls'
 * statuses and the stderr tail), the budget (a call refused past it, or the env's own budget spent:
 * `budget`), then the reward: the env's verifier (MCP line: its success, return and failure kind), or
 * the scorer, or the session's posted reward.
 */
export function episodeTrajectory(
  meta: SessionMeta,
  events: readonly CallEvent[],
  o: { id: string; exit?: Exit; timeoutMs: number; env?: Trajectory; scorer?: number | string },
): Trajectory {
  const m: SessionMeta = { ...meta };
  // The env's own budget ran out (its turns are tool calls, which an agent may make several of per
  // model call): the episode is truncated as much as a refused model call would have made it. An MCP
  // episode truncated short of its budget ended because its client (the agent) left: neither a budget
  // nor a verdict of the env.
  const envSpent = o.env?.outcome.end === 'truncated' && o.env.outcome.turns >= o.env.budget;
  const envVerdict = o.env?.outcome.end === 'terminated' || envSpent;
  if (o.env !== undefined) {
    m.reward = { value: o.env.outcome.return, success: o.env.outcome.success, reason: 'env verifier (MCP)' };
    if (envSpent) m.truncated = true;
  } else if (typeof o.scorer === 'number') {
    m.reward = { value: o.scorer, reason: '--reward' };
  }
  const error =
    agentError(events, o.exit, o.timeoutMs, meta.truncated) ??
    (typeof o.scorer === 'string' ? o.scorer : undefined);
  const { mergeMismatches: _, ...t } = sessionTrajectory(m, events, error === undefined ? {} : { error });
  t.id = o.id;
  // The env's verdict on a failure (wrong-answer, irreversible, its own budget) beats the default kind.
  const envFailure = envVerdict ? o.env?.outcome.failure : undefined;
  if (
    t.outcome.end === 'terminated' &&
    !t.outcome.success &&
    envFailure !== null &&
    envFailure !== undefined
  ) {
    t.outcome.failure = envFailure;
  }
  return t;
}

/** The CLI's check of a run directory before any work: a resumed run must be the same run. */
function openStore(dir: string, config: Record<string, unknown>): RunStore {
  const store = new RunStore(join(dir, 'run.sqlite'), '--out');
  const row = store.run(RUN_ID);
  if (row === undefined) store.createRun(RUN_ID, 'harness', config);
  else if (JSON.stringify(row.config) !== JSON.stringify(config)) {
    store.close();
    throw new InputError(
      '--out',
      dir,
      `holds a different harness run (${JSON.stringify(row.config).slice(0, 120)}…); give another --out or the same flags`,
    );
  }
  return store;
}

/** Writes the JSONL file whole (temp file + rename): a reader never sees half of it. */
function writeJsonl(path: string, ts: readonly Trajectory[]): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, ts.map((t) => `${JSON.stringify(t)}\n`).join(''));
  renameSync(tmp, path);
}

/** What one agent episode is, besides its task: the run's own flags, as plain data (a queued run's job
 * carries it to a worker). */
export interface AgentSpec {
  cmd: string;
  budget: number;
  revealBudget: boolean;
  timeoutMs: number;
  reward?: string;
}

/** Where agent episodes run: a recording proxy, the agents' process groups, the directory of the MCP
 * servers' trajectory files — a harness run's own, or a worker's (harness/remote.ts). */
export interface AgentHost {
  proxy: RunningProxy;
  groups: AgentGroups;
  /** The episodes/ directory (each MCP server's trajectory file). */
  dir: string;
  apiKey?: string;
  /** The TURNWISE_MCP command line of (task, sample), writing its trajectory to `store`. */
  mcpCommand?: (task: Task, sample: number, store: string) => string;
  signal?: AbortSignal;
}

/**
 * One episode of the agent: a fresh proxy session (`<prefix>-a<attempt>`: an interrupted attempt's
 * calls stay in the proxy file, unused), the agent spawned with its environment, the reward read, and
 * its trajectory — or undefined when the run was aborted under it (nothing is recorded: a resume runs
 * it again).
 */
export async function playAgentEpisode(
  host: AgentHost,
  spec: AgentSpec,
  task: Task,
  sample: number,
  prefix: string,
): Promise<Trajectory | undefined> {
  const p = host.proxy;
  const prior = p.store.ids().filter((id) => id.startsWith(`${prefix}-a`)).length;
  const session = `${prefix}-a${prior}`;
  const meta = p.store.session(session);
  meta.meta.task = task;
  meta.meta.policy = `harness:${spec.cmd}`;
  meta.meta.budget = spec.budget;
  p.store.saveMeta(meta);
  const mcpStore = join(host.dir, `${session}.mcp.jsonl`);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    OPENAI_BASE_URL: p.sessionUrl(session),
    OPENAI_API_KEY: host.apiKey ?? 'turnwise-placeholder',
    TURNWISE_TASK: JSON.stringify(task),
    TURNWISE_SESSION: `${p.url}/s/${session}`,
    TURNWISE_SAMPLE: String(sample),
  };
  if (spec.revealBudget) env.TURNWISE_BUDGET = String(spec.budget);
  if (host.mcpCommand !== undefined) env.TURNWISE_MCP = host.mcpCommand(task, sample, mcpStore);
  const spawned: Spawned = { groups: host.groups, label: session, signal: host.signal };
  const exit = await runCommand(spec.cmd, env, spec.timeoutMs, spawned);
  const ok = !exit.timedOut && !exit.aborted && exit.code === 0;
  // The MCP server appends its line when its client (the agent) has gone: wait for it, then stop
  // whatever the agent left behind.
  const envT = host.mcpCommand !== undefined && ok ? await mcpLine(mcpStore, exit.pid) : undefined;
  if (exit.pid !== undefined) host.groups.release(exit.pid);
  // Stopped by the abort, not by its own doing: no row, so the resume runs it again.
  if (exit.aborted) return undefined;
  const id = `harness-${task.seed}-${sample}`;
  let scorer: number | string | undefined;
  if (envT === undefined && spec.reward !== undefined && ok) {
    const draft = episodeTrajectory(meta.meta, meta.events, { id, exit, timeoutMs: spec.timeoutMs });
    scorer = await scorerReward(spec.reward, draft, spec.timeoutMs, {
      ...spawned,
      label: `${session} --reward`,
    });
    if (host.signal?.aborted) return undefined;
  }
  const t = episodeTrajectory(meta.meta, meta.events, {
    id,
    exit,
    timeoutMs: spec.timeoutMs,
    env: envT,
    scorer,
  });
  t.budget = spec.budget;
  t.revealBudget = spec.revealBudget;
  return t;
}

export async function runHarness(o: HarnessOptions): Promise<HarnessResult> {
  const dir = resolve(o.out);
  mkdirSync(join(dir, 'episodes'), { recursive: true });
  const lock = DirLock.acquire(dir, '--out');
  let store: RunStore | undefined;
  let proxy: RunningProxy | undefined;
  let groups: AgentGroups | undefined;
  try {
    store = openStore(dir, o.config);
    // Agents a killed harness (and its watchdog) left behind: stopped before this run starts its own.
    const swept = await sweepGroups(join(dir, PID_FILE), KILL_GRACE_MS);
    const total = o.tasks.length * o.samples;
    const finished = new Set(
      (store.db.prepare('SELECT idx FROM trajectories WHERE run = ?').all(RUN_ID) as { idx: number }[]).map(
        (r) => r.idx,
      ),
    );
    const resumed = finished.size;
    const pending = Array.from({ length: total }, (_, i) => i).filter((i) => !finished.has(i));
    let done = resumed;
    o.onProgress?.(done, total);
    const s = store;
    const record = (idx: number, t: Trajectory) => {
      s.addTrajectories(RUN_ID, idx, [t]);
      done++;
      o.onProgress?.(done, total);
    };
    const spec: AgentSpec = {
      cmd: o.cmd,
      budget: o.budget,
      revealBudget: o.revealBudget,
      timeoutMs: o.timeoutMs,
      reward: o.reward,
    };
    if (o.queue !== undefined) {
      await o.queue(pending, spec, s.run(RUN_ID)!.created, record);
    } else {
      groups = new AgentGroups(join(dir, PID_FILE), KILL_GRACE_MS);
      proxy = await startProxy({ upstream: o.upstream, store: join(dir, 'proxy.sqlite'), budget: o.budget });
      const host: AgentHost = {
        proxy,
        groups,
        dir: join(dir, 'episodes'),
        apiKey: o.apiKey,
        mcpCommand: o.mcpCommand,
        signal: o.signal,
      };
      const queue = [...pending];
      const workers = Array.from({ length: Math.min(o.concurrency, queue.length) }, async () => {
        for (let idx = queue.shift(); idx !== undefined && !o.signal?.aborted; idx = queue.shift()) {
          const task = o.tasks[Math.floor(idx / o.samples)];
          const t = await playAgentEpisode(host, spec, task, idx % o.samples, `e${idx}`);
          if (t !== undefined) record(idx, t);
        }
      });
      await Promise.all(workers);
    }
    const trajectories = store.trajectories(RUN_ID);
    writeJsonl(join(dir, 'trajectories.jsonl'), trajectories);
    const interrupted = o.signal?.aborted === true;
    if (!interrupted) store.setStatus(RUN_ID, 'done');
    return { trajectories, ran: done - resumed, resumed, dir, interrupted, swept };
  } finally {
    groups?.close();
    await proxy?.close();
    store?.close();
    lock.release();
  }
}
