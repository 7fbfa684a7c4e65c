// `--queue` end to end, as a user runs it: a real redis-server on a free loopback port, `turnwise worker`
// processes (each in a directory of its own: they share no disk with the producer), and the producer a
// `turnwise` process too. Contracts: a rollout whose worker is SIGKILLed mid-run completes with every
// (task, sample) once and --out byte-identical to the local run; eval and compare print what they print
// locally; a 20-iteration GRPO run (tabular and MLP) ends with the local run's figures, store and
// policy.safetensors bytes; a policy the workers cannot open fails the producer in one line. Refusals
// that need no Redis (a bad URL, an unreachable server, flags that cannot go with --queue) come first.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { QUEUE_NAME } from '../../src/rollout/queue-redis.ts';
import { type Command as DocCommand, type Page, parsePage } from '../docs/pages.ts';
import { freePort, MISSING, REDIS_SERVER, type RedisServer, SKIP, startRedis } from '../rollout/redis.ts';
import { inProcess, node, type Ran } from './run.ts';
import { storeRows } from './train-run.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const REPO = fileURLToPath(new URL('../../', import.meta.url));
/** The page whose Redis walk-through this file runs (its blocks say so in their marker). */
const PAGE = 'docs/scale-out.md';
const RUNS_HERE = 'test/cli/queue.test.ts runs these commands';
const DOCS_PORT = '6390';

/** The marker text of the block a command is in (the comment line before its opening fence). */
function markerOf(page: Page, cmd: DocCommand): string {
  let i = cmd.line - 1;
  while (i > 0 && !page.lines[i].startsWith('```')) i--;
  i--;
  while (i > 0 && page.lines[i].trim() === '') i--;
  return page.lines[i] ?? '';
}

/** Lines as the docs test compares them: trailing spaces and blank lines dropped, wall seconds equal. */
function comparable(lines: readonly string[]): string[] {
  const out = lines.map((l) => l.trimEnd().replace(/\bin \d+(\.\d+)? s\b/g, 'in N s'));
  while (out.length > 0 && out.at(-1) === '') out.pop();
  return out;
}
const root = mkdtempSync(join(tmpdir(), 'turnwise-queue-cli-'));
after(() => rmSync(root, { recursive: true, force: true }));

let dirs = 0;
const fresh = (name: string): string => {
  const d = join(root, `${name}-${dirs++}`);
  mkdirSync(d, { recursive: true });
  return d;
};

/** A command line without quoting: its words. */
const words = (line: string): string[] => line.split(' ');

/** One line on stderr, `turnwise: …`, exit 2, nothing on stdout. */
function refusedWith(r: Ran, line: string): void {
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stderr, `turnwise: ${line}\n`);
  assert.equal(r.stdout, '');
}

test('a bad --queue is refused in one line before any work, by every command that takes it', async () => {
  const dir = fresh('bad');
  const why = 'expected redis://HOST:PORT[/DB], e.g. redis://127.0.0.1:6379';
  for (const argv of [
    ['rollout', '--policy', 'random', '--episodes', '2', '--out', 'x.jsonl'],
    ['eval', '--policy', 'random', '--tasks', '2', '--samples', '2', '--K', '1', '--T', '5'],
    ['compare', '--a', 'random', '--b', 'oracle', '--tasks', '2', '--samples', '2', '--K', '1', '--T', '5'],
    ['train', '--policy', 'tabular', '--iters', '1', '--out', 'run'],
    ['worker'],
    ['queue', 'status'],
  ]) {
    refusedWith(
      await inProcess([...argv, '--queue', 'localhost:6379'], dir),
      `--queue: got "localhost:6379"; ${why}`,
    );
  }
  assert.deepEqual(readdirSync(dir), []);
});

test('an unreachable Redis is refused in one line, exit 2, before any output is opened', async () => {
  const dir = fresh('down');
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  const line = `--queue: got "${url}"; cannot reach Redis there (ECONNREFUSED); start redis-server or fix the address`;
  refusedWith(
    await node(
      [BIN, 'rollout', '--policy', 'random', '--episodes', '2', '--out', 'x.jsonl', '--queue', url],
      { cwd: dir },
    ),
    line,
  );
  for (const argv of [
    ['eval', '--policy', 'random', '--tasks', '2', '--samples', '2', '--K', '1', '--T', '5'],
    ['train', '--policy', 'tabular', '--iters', '1', '--out', 'run'],
    ['worker'],
    ['queue', 'status'],
  ])
    refusedWith(await inProcess([...argv, '--queue', url], dir), line);
  assert.deepEqual(readdirSync(dir), []);
});

test('what cannot go with --queue is refused in one line', async () => {
  const dir = fresh('with');
  const q = ['--queue', 'redis://127.0.0.1:1'];
  refusedWith(
    await inProcess(['rollout', '--policy', 'random', '--episodes', '2', '--cache', 'c.sqlite', ...q], dir),
    '--cache: got "c.sqlite"; cannot go with --queue: the replay cache is a file of this process; give it to no queued run',
  );
  refusedWith(
    await inProcess(['eval', '--in', 'x.jsonl', ...q], dir),
    '--in: got "x.jsonl"; cannot go with --queue: a recorded file is read here, with no episode to play',
  );
  refusedWith(
    await inProcess(['train', '--algo', 'es', '--iters', '1', '--out', 'run', ...q], dir),
    '--queue: got "redis://127.0.0.1:1"; cannot go with algo es (its fitness evaluations run in worker threads of this process)',
  );
  assert.deepEqual(readdirSync(dir), []);
});

interface Worker {
  name: string;
  child: ChildProcess;
  log: () => string;
  exited: Promise<number | null>;
}

describe('--queue with worker processes on a real Redis', { skip: SKIP }, () => {
  let redis: RedisServer | undefined;
  let url = '';
  const workers: Worker[] = [];

  before(async () => {
    if (REDIS_SERVER === undefined) return; // CI without redis-server: each test fails, saying so
    redis = await startRedis();
    url = redis.url;
  });
  beforeEach(() => {
    if (redis === undefined) throw new Error(MISSING);
  });
  after(async () => {
    for (const w of workers) w.child.kill('SIGKILL');
    await redis?.stop();
  });

  /** `turnwise worker` in a directory of its own, once it says it is listening. */
  async function startWorker(name: string, extra: string[] = []): Promise<Worker> {
    const child = spawn(
      process.execPath,
      [BIN, 'worker', '--queue', url, '--name', name, '--concurrency', '2', ...extra],
      {
        cwd: fresh(`worker-${name}`),
        env: { ...process.env, NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let log = '';
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    await new Promise<void>((resolve, reject) => {
      child.stderr.on('data', (d) => {
        log += d;
        if (log.includes('listening on')) resolve();
      });
      void exited.then((code) => reject(new Error(`worker ${name} exited (${code}):\n${log}`)));
    });
    const w = { name, child, log: () => log, exited };
    workers.push(w);
    return w;
  }

  /** SIGTERM: the worker finishes what it plays and exits 0. */
  async function stop(ws: Worker[]): Promise<void> {
    for (const w of ws) w.child.kill('SIGTERM');
    for (const w of ws) assert.equal(await w.exited, 0, w.log());
    workers.splice(0, workers.length, ...workers.filter((w) => !ws.includes(w)));
  }

  const tw = (args: string[], cwd: string) => node([BIN, ...args], { cwd });

  test('two workers, one SIGKILLed mid-run: every (task, sample) once, --out byte-identical to the local run', async () => {
    const dir = fresh('kill');
    const a = await startWorker('wa', ['--lock-ms', '1000']);
    const b = await startWorker('wb', ['--lock-ms', '1000']);
    const conn = new Redis({ host: '127.0.0.1', port: redis!.port, maxRetriesPerRequest: null });
    const queue = new Queue(QUEUE_NAME, { connection: conn });
    const eventsConn = conn.duplicate();
    const last = (await conn.xrevrange(`bull:${QUEUE_NAME}:events`, '+', '-', 'COUNT', 1))[0]?.[0];
    const events = new QueueEvents(QUEUE_NAME, { connection: eventsConn, lastEventId: last ?? '0-0' });
    await events.waitUntilReady();
    const stalled = new Set<string>();
    events.on('stalled', ({ jobId }) => stalled.add(jobId));
    let completed = 0;
    events.on('completed', () => completed++);
    // Once wa holds a job with others done: stop it, and if it still holds one, SIGKILL it. (A stopped
    // process changes nothing: what it held when stopped, it holds when killed.)
    let killedHolding: string[] = [];
    let busy = false;
    const killed = new Promise<void>((resolve) => {
      events.on('active', async () => {
        if (busy || killedHolding.length > 0 || completed < 20) return;
        busy = true;
        a.child.kill('SIGSTOP');
        const held = (await queue.getActive()).filter((j) => j.processedBy === 'wa').map((j) => j.id!);
        if (held.length > 0) {
          killedHolding = held;
          a.child.kill('SIGKILL');
          resolve();
        } else a.child.kill('SIGCONT');
        busy = false;
      });
    });
    const args = words(
      'rollout --env code --policy oracle:eps=0.2 --tasks 60 --samples 4 --budget 12 --seed 5',
    );
    try {
      const [queued] = await Promise.all([tw([...args, '--out', 'q.jsonl', '--queue', url], dir), killed]);
      assert.equal(queued.code, 0, queued.stderr);
      assert.equal(await a.exited, null, 'wa died of SIGKILL');
      for (const id of killedHolding)
        assert.ok(stalled.has(id), `${id}, held by the killed worker, was put back`);
      const local = await tw([...args, '--out', 'l.jsonl'], dir);
      assert.equal(local.code, 0, local.stderr);
      const q = readFileSync(join(dir, 'q.jsonl'));
      assert.ok(q.equals(readFileSync(join(dir, 'l.jsonl'))), '--out differs from the local run');
      const ids = q
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).id as string);
      assert.equal(ids.length, 240);
      assert.equal(new Set(ids).size, 240, 'each (task, sample) once');
      // The printed summary is the local one (wall time apart, which `rollout` does not print).
      assert.equal(queued.stdout.replace('q.jsonl', 'l.jsonl'), local.stdout);
    } finally {
      await events.close();
      await queue.close();
      eventsConn.disconnect();
      conn.disconnect();
      await stop([b]);
      workers.splice(workers.indexOf(a), 1);
    }
  });

  test('eval and compare print what they print locally; a checkpoint reaches workers with no shared disk', async () => {
    const dir = fresh('eval');
    const ws = [await startWorker('e1'), await startWorker('e2')];
    try {
      const status = await tw(['queue', 'status', '--queue', url, '--json'], dir);
      assert.equal(status.code, 0, status.stderr);
      const s = JSON.parse(status.stdout);
      assert.equal(s.url, url);
      assert.equal(s.queue, 'turnwise-episodes');
      assert.deepEqual(
        s.workers.map((w: { name: string; concurrency: number; pid: number }) => [
          w.name,
          w.concurrency,
          w.pid,
        ]),
        ws.map((w) => [w.name, 2, w.child.pid]),
      );
      assert.deepEqual(s.stalled, []);
      const trained = await tw(
        words('train --map 4x4 --slippery --policy tabular --seed 2 --iters 5 --out runs/t --json'),
        dir,
      );
      assert.equal(trained.code, 0, trained.stderr);
      for (const args of [
        words(
          'eval --map 4x4 --slippery --policy oracle:eps=0.2 --tasks 8 --samples 16 --K 1,4 --T 10,50 --resamples 200 --seed 2 --json',
        ),
        words(
          'eval --map 4x4 --slippery --policy runs/t --tasks 6 --samples 8 --K 1,4 --T 10,30 --resamples 100 --seed 3',
        ),
        words(
          'eval --random --size 4 --p 0.8 --slippery --policy oracle --mode separate --tasks 5 --samples 4 --K 1,2 --T 5,20 --resamples 100 --json',
        ),
        words(
          'compare --map 4x4 --slippery --a runs/t --b oracle:temp=0.5 --tasks 6 --samples 8 --K 1,4 --T 20,60 --resamples 200 --seed 2 --states 40 --json',
        ),
      ]) {
        const local = await tw(args, dir);
        const queued = await tw([...args, '--queue', url], dir);
        assert.equal(local.code, 0, local.stderr);
        assert.equal(queued.code, 0, queued.stderr);
        assert.equal(queued.stdout, local.stdout, args.join(' '));
      }
    } finally {
      await stop(ws);
    }
  });

  test("20 GRPO iterations through the queue: the local run's figures, store and policy.safetensors bytes", async () => {
    const dir = fresh('train');
    const ws = [await startWorker('t1'), await startWorker('t2')];
    try {
      for (const args of [
        words('train --map 4x4 --slippery --policy tabular --seed 1 --iters 20 --json'),
        words(
          'train --policy mlp --random --size 4 --p 0.8 --slippery --train-seeds 0:500 --test-seeds 1000000:1000050 --iters 20 --groups 8 --eval-episodes 100 --seed 1 --json',
        ),
      ]) {
        const local = await tw([...args, '--out', 'local'], dir);
        const queued = await tw([...args, '--out', 'queued', '--queue', url], dir);
        assert.equal(local.code, 0, local.stderr);
        assert.equal(queued.code, 0, queued.stderr);
        const figures = (r: Ran) => {
          const { seconds: _s, out: _o, ...rest } = JSON.parse(r.stdout);
          return rest;
        };
        assert.deepEqual(figures(queued), figures(local), args[4]);
        assert.ok(
          readFileSync(join(dir, 'queued/policy.safetensors')).equals(
            readFileSync(join(dir, 'local/policy.safetensors')),
          ),
          'policy.safetensors differs',
        );
        const [q, l] = [storeRows(join(dir, 'queued')), storeRows(join(dir, 'local'))];
        assert.equal(q.t, l.t, 'stored trajectories');
        assert.equal(q.m, l.m, 'stored metrics');
        rmSync(join(dir, 'local'), { recursive: true });
        rmSync(join(dir, 'queued'), { recursive: true });
      }
    } finally {
      await stop(ws);
    }
  });

  test('a policy the workers cannot open fails the producer in one line, naming the worker and the reason', async () => {
    const dir = fresh('replay');
    const ws = [await startWorker('r1')];
    try {
      // rec.jsonl is in the producer's directory, not the worker's.
      writeFileSync(
        join(dir, 'rec.jsonl'),
        [0, 1, 2].map((task) => JSON.stringify({ task, sample: 0, actions: [1, 2, 2, 1, 2] })).join('\n'),
      );
      const r = await tw(
        [
          'rollout',
          '--policy',
          'replay:rec.jsonl',
          '--tasks',
          '3',
          '--samples',
          '1',
          '--budget',
          '5',
          '--queue',
          url,
        ],
        dir,
      );
      assert.equal(r.code, 2);
      assert.equal(r.stdout, '');
      assert.match(
        r.stderr,
        /^turnwise: --queue: episode run-rollout-[0-9a-f]{8}\.1-task-\d-sample-0-v0 failed: worker r1 cannot open the policy: .*rec\.jsonl.*\n$/,
      );
      assert.ok(ws[0].log().includes('failed: worker r1 cannot open the policy'), ws[0].log());
    } finally {
      await stop(ws);
    }
  });

  test('on a terminal the producer shows the queue (done per worker, queued, running, retried, failed); in a log, nothing', async () => {
    const dir = fresh('tty');
    const ws = [await startWorker('p1'), await startWorker('p2')];
    const args = [
      'rollout',
      '--slippery',
      '--policy',
      'oracle:eps=0.2',
      '--tasks',
      '20',
      '--samples',
      '2',
      '--budget',
      '30',
      '--queue',
      url,
    ];
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
      delete env.CI; // CI turns progress off
      // util-linux's script(1) gives the command a terminal; what it wrote comes out on script's stdout.
      const shown = await new Promise<string>((resolve, reject) => {
        const child = spawn('script', ['-qec', [process.execPath, BIN, ...args].join(' '), '/dev/null'], {
          cwd: dir,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.on('error', reject);
        child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${out}`))));
      });
      // The line's erase-to-end (ESC [K) aside.
      const plain = shown.replaceAll('\u001b[K', '');
      const last =
        /queue: 40 done \((p1 (\d+), )?(p2 (\d+))?\), 0 queued, 0 running, 0 retried, 0 failed\r?\n/.exec(
          plain,
        );
      assert.ok(last, shown);
      assert.equal(Number(last[2] ?? 0) + Number(last[4] ?? 0), 40);
      assert.match(
        plain,
        /\rrollout \[[#.]{24}\] \d+\/40 queue: \d+ done/,
        'beside the progress bar while it runs',
      );
      const logged = await tw(args, dir);
      assert.equal(logged.code, 0);
      assert.equal(logged.stderr, '', 'nothing on stderr without a terminal');
    } finally {
      await stop(ws);
    }
  });

  test("docs/scale-out.md's walk-through runs as shown, against this test's Redis", async () => {
    const page = parsePage(PAGE, readFileSync(join(REPO, PAGE), 'utf8'));
    const cmds = page.commands.filter(
      (c) => c.marker.kind === 'not run' && markerOf(page, c).includes(RUNS_HERE),
    );
    assert.ok(cmds.length >= 10, `${cmds.length} commands`);
    // A Redis as fresh as the page's (earlier tests leave failed jobs, kept an hour for inspection).
    const conn = new Redis({ host: '127.0.0.1', port: redis!.port });
    await conn.flushall();
    conn.disconnect();
    const dir = fresh('docs');
    const shim = fresh('shim');
    writeFileSync(join(shim, 'turnwise'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
    chmodSync(join(shim, 'turnwise'), 0o755);
    const env = { ...process.env, NO_COLOR: '1', PATH: `${shim}:${process.env.PATH}` };
    const port = String(redis!.port);
    const servers: { child: ChildProcess; exited: Promise<number | null> }[] = [];
    const asShown = (out: string) => comparable(out.split(port).join(DOCS_PORT).split('\n'));
    try {
      for (const cmd of cmds) {
        const text = cmd.text.replace(new RegExp(`(?<=:)${DOCS_PORT}\\b`, 'g'), port);
        const shown = comparable(page.lines.slice(cmd.outStart, cmd.outEnd));
        const job = /^kill %(\d+)$/.exec(text);
        let out: string;
        if (job) {
          const server = servers[Number(job[1]) - 1];
          server.child.kill('SIGTERM');
          assert.equal(await server.exited, 0, `${cmd.text}: the worker did not stop cleanly`);
          out = '';
        } else if (cmd.background) {
          const child = spawn('/bin/sh', ['-c', `exec 2>&1\nexec ${text}`], {
            cwd: dir,
            env,
            stdio: ['ignore', 'pipe', 'ignore'],
          });
          const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
          servers.push({ child, exited });
          out = await new Promise<string>((resolve, reject) => {
            let got = '';
            child.stdout.on('data', (d) => {
              got += d;
              if (got.includes('listening on') && got.endsWith('\n')) resolve(got);
            });
            void exited.then((code) => reject(new Error(`${cmd.text}: exited (${code}):\n${got}`)));
          });
        } else {
          const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
            const child = spawn('/bin/sh', ['-c', `exec 2>&1\n${text}`], {
              cwd: dir,
              env,
              stdio: ['ignore', 'pipe', 'ignore'],
            });
            let got = '';
            child.stdout.on('data', (d) => (got += d));
            child.on('close', (code) => resolve({ code, out: got }));
          });
          assert.equal(r.code, 0, `${cmd.text}: exit ${r.code}\n${r.out}`);
          out = r.out;
        }
        assert.deepEqual(asShown(out), shown, `${PAGE}:${cmd.line} $ ${cmd.text}`);
      }
    } finally {
      for (const s of servers) s.child.kill('SIGTERM');
    }
  });

  test('train refuses a second policy that cannot travel (cross-policy sampling, guidance) in one line', async () => {
    const dir = fresh('cross');
    for (const [flags, what] of [
      [['--cross-policy', '0.5'], 'cross-policy sampling (crossPolicy.q > 0)'],
      [['--guidance', 'bread'], 'guidance (bread)'],
    ] as const)
      refusedWith(
        await inProcess(
          ['train', '--policy', 'tabular', '--iters', '1', '--out', 'run', ...flags, '--queue', url],
          dir,
        ),
        `--queue: got "${url}"; cannot go with ${what}: only the learner's own weights travel to the workers`,
      );
    assert.ok(!existsSync(join(dir, 'run', 'policy.safetensors')));
  });
});
