// `harness run --queue`: an outside agent's episodes played by `turnwise worker --agents` processes.
// Each pending (task, sample) becomes a job on the agent queue (AGENT_QUEUE_NAME) — the task, the
// sample, the agent's command line and flags, the upstream — with the id a local rollout would give it
// (`run-<run>-task-<seed>-sample-<k>-v0`). The run id is fixed by the run directory (its host, path and
// creation time), so a resumed harness names the same jobs: one still waiting or being played delivers
// its result to the resumed producer, a failed one is put back fresh.
//
// On the worker (AgentStation) an episode runs exactly as `harness run` runs it here (playAgentEpisode):
// the agent spawned in a process group of its own (the worker's watchdog stops it if the worker dies),
// its model calls recorded by a proxy of the worker's, the env served over MCP by the worker's own
// `turnwise mcp` with the (task, sample)'s seeds, the reward from the env's verifier or --reward run
// there. The trajectory — its turns hold every call — comes back to the producer, which stores it as it
// arrives; the worker's proxy file and the MCP servers' files are its own, removed when it stops.
//
// The agent command, the --reward command and the agent's API key variable must exist on every worker
// (the variable's NAME travels, never its value). A worker runs these jobs only when started with
// --agents: each is a shell command run on its machine, given by whoever can write to the Redis.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Task, Trajectory } from '../core/types.ts';
import { decodeTrajectory, jobId } from '../rollout/queue.ts';
import type { RedisRolloutQueue, ResultSink } from '../rollout/queue-redis.ts';
import { type RunningProxy, startProxy } from '../serve/proxy.ts';
import { AgentGroups, PID_FILE } from './groups.ts';
import { type AgentHost, type AgentSpec, playAgentEpisode } from './run.ts';

/** One agent episode as a job: plain JSON. */
export interface AgentJob {
  run: string;
  task: Task;
  sample: number;
  /** The episode's index in the run (its row in the producer's store). */
  idx: number;
  spec: AgentSpec;
  /** The model API the worker's proxy forwards to. */
  upstream: string;
  /** The environment variable (on the worker) whose value the agent gets as OPENAI_API_KEY. */
  apiKeyEnv?: string;
  /** Serve the task's env over MCP (TURNWISE_MCP), with the run's seed. */
  mcp: boolean;
  runSeed: number;
}

/** The producer's run id on the queue: the same for every resume of one run directory. */
export function agentRunId(dir: string, created: string): string {
  const h = createHash('sha256').update(`${hostname()}\n${dir}\n${created}`).digest('hex');
  return `harness-${h.slice(0, 16)}`;
}

/** The job data a worker reads back, checked (producer and worker may be different versions). */
export function asAgentJob(x: unknown): AgentJob {
  const j = x as Partial<AgentJob> | null;
  const s = j?.spec as Partial<AgentSpec> | undefined;
  const ok =
    typeof j === 'object' &&
    j !== null &&
    typeof j.run === 'string' &&
    typeof j.task === 'object' &&
    j.task !== null &&
    typeof j.task.env === 'string' &&
    Number.isInteger(j.task.seed) &&
    Number.isInteger(j.sample) &&
    Number.isInteger(j.idx) &&
    Number.isInteger(j.runSeed) &&
    typeof j.upstream === 'string' &&
    typeof j.mcp === 'boolean' &&
    (j.apiKeyEnv === undefined || typeof j.apiKeyEnv === 'string') &&
    typeof s === 'object' &&
    s !== null &&
    typeof s.cmd === 'string' &&
    Number.isInteger(s.budget) &&
    typeof s.revealBudget === 'boolean' &&
    typeof s.timeoutMs === 'number' &&
    (s.reward === undefined || typeof s.reward === 'string');
  if (!ok) throw new Error(`not an agent job this worker can read: ${JSON.stringify(x).slice(0, 200)}`);
  return j as AgentJob;
}

export interface AgentQueueRun {
  tasks: readonly Task[];
  samples: number;
  upstream: string;
  apiKeyEnv?: string;
  mcp: boolean;
  runSeed: number;
  /** The run directory (with `created`, it names the run on the queue). */
  dir: string;
  signal?: AbortSignal;
}

/**
 * The producer's side (HarnessOptions.queue): the pending episodes as jobs, each result stored as it
 * arrives (any order, each once). Resolves when all are in, or when the run is aborted (the jobs not
 * yet taken are withdrawn; those being played finish on their workers, unused — a resume reruns them).
 * A job that fails (a worker that cannot run the agent, after its retries) ends the run with the reason.
 */
export async function queueAgentEpisodes(
  queue: RedisRolloutQueue,
  o: AgentQueueRun,
  pending: readonly number[],
  spec: AgentSpec,
  created: string,
  record: (idx: number, t: Trajectory) => void,
): Promise<void> {
  const run = agentRunId(o.dir, created);
  const jobs = new Map<string, AgentJob>();
  for (const idx of pending) {
    const task = o.tasks[Math.floor(idx / o.samples)];
    const sample = idx % o.samples;
    const job: AgentJob = {
      run,
      task,
      sample,
      idx,
      spec,
      upstream: o.upstream,
      mcp: o.mcp,
      runSeed: o.runSeed,
    };
    if (o.apiKeyEnv !== undefined) job.apiKeyEnv = o.apiKeyEnv;
    jobs.set(jobId(run, task.seed, sample, 0), job);
  }
  const waiting = new Set(jobs.keys());
  const sink: ResultSink = {
    awaits: (id) => waiting.has(id),
    settle: (id, wire) => {
      if (!waiting.delete(id)) return false;
      record(jobs.get(id)!.idx, decodeTrajectory(wire));
      return true;
    },
    missing: () => [...waiting],
    get complete() {
      return waiting.size === 0;
    },
  };
  try {
    await queue.submit(run, jobs, 'agent', sink, { signal: o.signal, replaceFailed: true });
  } catch (e) {
    if (o.signal?.aborted !== true) throw e;
  }
}

/** After SIGTERM, how long an agent may take to exit before SIGKILL (as a local harness run). */
const KILL_GRACE_MS = 2000;

/**
 * The worker's side: where its agents run — one recording proxy per upstream, one set of process groups
 * (and its watchdog), one directory, all made at the first job and removed at close.
 */
export class AgentStation {
  private readonly mcpCommand: (
    task: Task,
    sample: number,
    o: { runSeed: number; budget: number; revealBudget: boolean; store: string },
  ) => string;
  private dir: string | undefined;
  private groups: AgentGroups | undefined;
  private readonly proxies = new Map<string, Promise<RunningProxy>>();

  /** `mcpCommand`: the command line serving (task, sample)'s env over MCP (the CLI composes it). */
  constructor(mcpCommand: AgentStation['mcpCommand']) {
    this.mcpCommand = mcpCommand;
  }

  private host(): { dir: string; groups: AgentGroups } {
    if (this.dir === undefined || this.groups === undefined) {
      this.dir = mkdtempSync(join(tmpdir(), 'turnwise-agents-'));
      mkdirSync(join(this.dir, 'episodes'));
      this.groups = new AgentGroups(join(this.dir, PID_FILE), KILL_GRACE_MS);
    }
    return { dir: this.dir, groups: this.groups };
  }

  private proxy(upstream: string, dir: string): Promise<RunningProxy> {
    let p = this.proxies.get(upstream);
    if (p === undefined) {
      p = startProxy({ upstream, store: join(dir, `proxy-${this.proxies.size}.sqlite`) });
      p.catch(() => this.proxies.delete(upstream));
      this.proxies.set(upstream, p);
    }
    return p;
  }

  /** One job: its episode played here, its trajectory returned; throws why it cannot be played. */
  async play(data: unknown, id: string): Promise<Trajectory> {
    const job = asAgentJob(data);
    let apiKey: string | undefined;
    if (job.apiKeyEnv !== undefined) {
      apiKey = process.env[job.apiKeyEnv];
      if (apiKey === undefined || apiKey === '')
        throw new Error(`${job.apiKeyEnv} (the agent's API key) is not set in this worker's environment`);
    }
    const { dir, groups } = this.host();
    const { budget, revealBudget } = job.spec;
    const host: AgentHost = {
      proxy: await this.proxy(job.upstream, dir),
      groups,
      dir: join(dir, 'episodes'),
      apiKey,
      mcpCommand: job.mcp
        ? (task, sample, store) =>
            this.mcpCommand(task, sample, { runSeed: job.runSeed, budget, revealBudget, store })
        : undefined,
    };
    const t = await playAgentEpisode(host, job.spec, job.task, job.sample, id);
    if (t === undefined) throw new Error('the episode was stopped');
    return t;
  }

  /** Every agent still running stopped, the proxies closed, the directory removed. */
  async close(): Promise<void> {
    this.groups?.close();
    for (const p of this.proxies.values()) await (await p.catch(() => undefined))?.close();
    this.proxies.clear();
    if (this.dir !== undefined) rmSync(this.dir, { recursive: true, force: true });
  }
}
