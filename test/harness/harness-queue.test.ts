// `harness run --queue`: an outside agent (a Python program speaking plain HTTP to $OPENAI_BASE_URL and
// MCP to $TURNWISE_MCP) played by `turnwise worker --agents` processes through a real Redis — the same
// episodes as the local harness run; a worker SIGKILLed mid-episode (its agents stopped by its
// watchdog, the episodes rerun elsewhere); a producer SIGKILLed and resumed; a worker that cannot run
// the agent (its API key variable missing) failing the run with that reason; a worker without --agents
// taking none of these jobs.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { groupExists } from '../../src/harness/groups.ts';
import {
  envConfig,
  envs,
  makePolicy,
  type RunningServer,
  startServer,
  type Trajectory,
} from '../../src/index.ts';
import { MISSING, REDIS_SERVER, type RedisServer, SKIP, startRedis } from '../rollout/redis.ts';
import { harnessRun } from './run-cli.ts';

const BIN = resolve('bin/turnwise.js');
const AGENT = resolve('test/fixtures/agent.py');
const root = mkdtempSync(join(tmpdir(), 'turnwise-harness-queue-'));

interface Child {
  child: ChildProcess;
  log: () => string;
  exited: Promise<number | null>;
}

function start(args: string[], env: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: root,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stdout?.on('data', (d) => {
    log += d;
  });
  child.stderr?.on('data', (d) => {
    log += d;
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, log: () => log, exited };
}

/** Polls a condition the test cannot be told of by an event (files written by other processes). */
async function until(what: string, ok: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** What the env decides of an episode, and the agent's moves (tool-call ids — the served model's call
 * counter —, latencies and timings differ by design). */
const played = (t: Trajectory) => ({
  id: t.id,
  task: t.task,
  actions: t.turns.map((u) => JSON.stringify(u.action).replace(/"id":"call_\d+_\d+",?/g, '')),
  rewards: t.turns.map((u) => u.reward),
  outcome: t.outcome,
});

const readRun = (out: string): Trajectory[] =>
  readFileSync(join(out, 'trajectories.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Trajectory);

describe('harness run --queue with worker processes on a real Redis', { skip: SKIP }, () => {
  let redis: RedisServer | undefined;
  let server: RunningServer;
  const children: Child[] = [];

  before(async () => {
    const env = envs.make({ ...envConfig('frozenlake', { map: '4x4', slippery: true }), seed: 0 });
    server = await startServer({ policy: makePolicy('oracle:horizon=100', env.spec), env });
    if (REDIS_SERVER === undefined) return; // CI without redis-server: each test fails, saying so
    redis = await startRedis();
  });
  beforeEach(() => {
    if (redis === undefined) throw new Error(MISSING);
  });
  after(async () => {
    for (const c of children) c.child.kill('SIGKILL');
    await server?.close();
    await redis?.stop();
  });

  /** `turnwise worker` (with --agents unless told otherwise), once it says it is listening. */
  async function worker(name: string, extra: string[] = ['--agents'], env: Record<string, string> = {}) {
    const w = start(['worker', '--queue', redis!.url, '--name', name, '--concurrency', '2', ...extra], env);
    children.push(w);
    await new Promise<void>((ok, fail) => {
      w.child.stderr?.on('data', () => {
        if (w.log().includes('listening on')) ok();
      });
      void w.exited.then((code) => fail(new Error(`worker ${name} exited (${code}):\n${w.log()}`)));
    });
    return w;
  }

  async function stop(w: Child): Promise<void> {
    w.child.kill('SIGTERM');
    assert.equal(await w.exited, 0, w.log());
  }

  const flags = (out: string, cmd: string, tasks: number, samples: number) => [
    'harness',
    'run',
    '--cmd',
    cmd,
    '--env',
    'frozenlake',
    '--map',
    '4x4',
    '--slippery',
    '--tasks',
    String(tasks),
    '--samples',
    String(samples),
    '--budget',
    '30',
    '--upstream',
    server.url,
    '--timeout',
    '120',
    '--seed',
    '3',
    '--out',
    out,
  ];

  test('two agent workers play the local run: the same episodes, each once, in the run store', async () => {
    const cmd = `AGENT_MODE=mcp AGENT_MODEL=oracle python3 ${AGENT}`;
    const local = await harnessRun(join(root, 'local'), flags(join(root, 'local'), cmd, 3, 2).slice(2, -2));
    const a = await worker('qa');
    const b = await worker('qb');
    // A worker without --agents is connected too: it must take none of these jobs.
    const plain = await worker('plain', []);
    const out = join(root, 'queued');
    const p = start([...flags(out, cmd, 3, 2), '--queue', redis!.url, '--json']);
    assert.equal(await p.exited, 0, p.log());
    const queued = readRun(out);
    assert.equal(queued.length, 6);
    assert.deepEqual(queued.map(played), local.map(played));
    assert.ok(
      local.some((t) => t.outcome.success) && local.some((t) => t.turns.length > 1),
      'the oracle plays several turns and reaches the goal somewhere',
    );
    const summary = JSON.parse(p.log().slice(p.log().indexOf('{'))) as { ran: number; episodes: number };
    assert.equal(summary.ran, 6);
    assert.equal(summary.episodes, 6);
    // The queue's view: which workers take agents' episodes, and nothing left on either queue.
    const status = start(['queue', 'status', '--queue', redis!.url, '--json']);
    assert.equal(await status.exited, 0, status.log());
    const s = JSON.parse(status.log()) as {
      workers: { name: string; agents: boolean; done: number }[];
      agentQueue: { queue: string; counts: { waiting: number; active: number; failed: number } };
    };
    assert.deepEqual(
      s.workers.map((w) => [w.name, w.agents]),
      [
        ['plain', false],
        ['qa', true],
        ['qb', true],
      ],
    );
    assert.equal(s.workers.find((w) => w.name === 'plain')!.done, 0);
    assert.equal(
      s.workers.filter((w) => w.agents).reduce((n, w) => n + w.done, 0),
      6,
    );
    assert.equal(s.agentQueue.queue, 'turnwise-agents');
    assert.deepEqual([s.agentQueue.counts.waiting, s.agentQueue.counts.active], [0, 0]);
    await Promise.all([stop(a), stop(b), stop(plain)]);
  });

  /** An agent that says it started (a file named by its sample and its shell's pid, the leader of its
   * process group) and waits for the test's go before it plays. */
  const gated = (marks: string) =>
    `touch "${marks}/$TURNWISE_SAMPLE.$$"; while [ ! -e "${marks}/go" ]; do sleep 0.05; done; AGENT_MODE=mcp AGENT_MODEL=oracle exec python3 ${AGENT}`;
  const starts = (marks: string) => readdirSync(marks).filter((f) => f !== 'go');

  test('a worker SIGKILLed mid-episode: its agents are stopped, the episodes rerun on another worker, each recorded once', async () => {
    const marks = join(root, 'marks-kill');
    mkdirSync(marks);
    const a = await worker('ka', ['--agents', '--lock-ms', '1000']);
    const out = join(root, 'killed');
    const p = start([...flags(out, gated(marks), 1, 2), '--queue', redis!.url]);
    children.push(p);
    await until('both episodes to start on worker ka', () => starts(marks).length === 2);
    const first = starts(marks).map((f) => Number(f.split('.')[1]));
    a.child.kill('SIGKILL');
    await a.exited;
    // Its watchdog stops the agents it was running.
    await until('the killed worker’s agents to be stopped', () => first.every((pid) => !groupExists(pid)));
    const b = await worker('kb', ['--agents', '--lock-ms', '1000']);
    await until('both episodes to start again on worker kb', () => starts(marks).length === 4);
    writeFileSync(join(marks, 'go'), '');
    assert.equal(await p.exited, 0, p.log());
    const ts = readRun(out);
    assert.deepEqual(
      ts.map((t) => t.id),
      ['harness-3-0', 'harness-3-1'],
    );
    assert.ok(ts.every((t) => t.outcome.failure !== 'error' && t.turns.length > 0));
    await stop(b);
  });

  test('a producer SIGKILLed while its episodes play resumes with the same command: each episode once', async () => {
    const marks = join(root, 'marks-resume');
    mkdirSync(marks);
    const w = await worker('ra', ['--agents', '--concurrency', '4']);
    const out = join(root, 'resumed');
    const argv = [...flags(out, gated(marks), 2, 1), '--queue', redis!.url, '--json'];
    const p1 = start(argv);
    children.push(p1);
    await until('both episodes to start', () => starts(marks).length === 2);
    p1.child.kill('SIGKILL');
    await p1.exited;
    const p2 = start(argv);
    writeFileSync(join(marks, 'go'), '');
    assert.equal(await p2.exited, 0, p2.log());
    const ts = readRun(out);
    assert.deepEqual(
      ts.map((t) => t.id),
      ['harness-3-0', 'harness-4-0'],
    );
    const summary = JSON.parse(p2.log().slice(p2.log().indexOf('{'))) as { ran: number; resumed: number };
    assert.deepEqual([summary.ran, summary.resumed], [2, 0]);
    // The jobs the killed producer added were the resumed one's (the same ids): still being played,
    // they delivered to it, or done before it listened, they were played again — never recorded twice.
    assert.ok(starts(marks).length >= 2 && starts(marks).length <= 4, starts(marks).join(' '));
    await stop(w);
  });

  test('a worker that cannot run the agent (its API key variable unset) fails the run with the reason, in one line', async () => {
    const w = await worker('nokey');
    const out = join(root, 'nokey');
    const p = start(
      [
        ...flags(out, `AGENT_MODE=mcp python3 ${AGENT}`, 1, 1),
        '--queue',
        redis!.url,
        '--api-key-env',
        'TW_HARNESS_KEY',
      ],
      { TW_HARNESS_KEY: 'sk-producer-only' },
    );
    assert.equal(await p.exited, 2, p.log());
    const lines = p.log().trim().split('\n');
    assert.equal(lines.length, 1, p.log());
    assert.match(
      lines[0],
      /^turnwise: --queue: episode run-harness-[0-9a-f]{16}-task-3-sample-0-v0 failed: worker nokey: TW_HARNESS_KEY \(the agent's API key\) is not set in this worker's environment$/,
    );
    assert.ok(!existsSync(join(out, 'trajectories.jsonl')));
    await stop(w);
  });
});

test('harness run --queue: an explicit --concurrency and a bad URL are refused in one line before any work', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-harness-queue-bad-'));
  const base = ['harness', 'run', '--cmd', 'true', '--env', 'frozenlake', '--budget', '3'];
  const run = async (args: string[]) => {
    const c = start([...base, '--upstream', 'http://127.0.0.1:9/v1', '--out', join(dir, 'o'), ...args]);
    return { code: await c.exited, log: c.log() };
  };
  const a = await run(['--queue', 'redis://127.0.0.1:1', '--concurrency', '2']);
  assert.equal(a.code, 2);
  assert.equal(
    a.log,
    '--concurrency: got "2"; cannot go with --queue: each worker\'s own --concurrency says how many agents it runs\n'.replace(
      /^/,
      'turnwise: ',
    ),
  );
  const b = await run(['--queue', 'http://x']);
  assert.equal(b.code, 2);
  assert.equal(
    b.log,
    'turnwise: --queue: got "http://x"; expected redis://HOST:PORT[/DB], e.g. redis://127.0.0.1:6379\n',
  );
  assert.deepEqual(readdirSync(dir), []);
});
