// The openai: policy's run-wide options over real HTTP: rpm spaces the requests of every episode of a
// run, tpm holds them while the window's reported tokens are spent, max_context ends an episode as
// `context` before any request; through the CLI: --api-key-env (a 401 without it; the key in no
// output, trajectory, cache or store), openai:env#MODEL, --price → cost, bad options as one line.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  envConfig,
  envs,
  makeOpenAIPolicy,
  makeTasks,
  OraclePolicy,
  type RunningServer,
  rollout,
  startServer,
} from '../../src/index.ts';
import { RateLimiter } from '../../src/policies/limits.ts';
import { inProcess, turnwise } from '../cli/run.ts';
import { startServe } from '../fixtures/serve-process.ts';

const config = envConfig('frozenlake', { map: '4x4', slippery: true });
const env = envs.make({ ...config, seed: 0 });
const running: (RunningServer | Server)[] = [];
after(async () => {
  for (const s of running) {
    if ('url' in s) await s.close();
    else {
      s.closeAllConnections();
      s.close();
    }
  }
});

/** turnwise serve in front of which a node:http proxy notes when each chat request arrives. */
async function timedServer(): Promise<{ url: string; arrivals: number[] }> {
  const inner = await startServer({ policy: new OraclePolicy({ eps: 0.2 }, 'oracle:eps=0.2'), env });
  running.push(inner);
  const arrivals: number[] = [];
  const proxy = createServer((req, res) => {
    if (req.method === 'POST') arrivals.push(performance.now());
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const r = await fetch(inner.url.replace(/\/v1$/, '') + (req.url ?? ''), {
        method: req.method,
        headers: { 'content-type': 'application/json' },
        body: req.method === 'POST' ? Buffer.concat(chunks).toString() : undefined,
      });
      res.writeHead(r.status, { 'content-type': 'application/json' });
      res.end(await r.text());
    });
  });
  running.push(proxy);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`, arrivals };
}

const run = (spec: string, tasks = 2, budget = 3) => {
  const policy = makeOpenAIPolicy(spec, env.spec);
  return policy.connect().then(() =>
    rollout({
      tasks: makeTasks(config, tasks, 3),
      samples: 2,
      budget,
      revealBudget: true,
      runSeed: 1,
      policy,
      concurrency: 4,
      makeEnv: envs.make,
    }),
  );
};

test('rpm spaces the requests of all concurrent episodes 60000/rpm ms apart; without it they overlap', async () => {
  const free = await timedServer();
  await run(`openai:${free.url}#oracle`);
  const limited = await timedServer();
  await run(`openai:${limited.url}#oracle,rpm=600`); // 100 ms apart
  const gaps = (xs: number[]) => xs.slice(1).map((x, i) => x - xs[i]);
  assert.ok(limited.arrivals.length >= 8, `${limited.arrivals.length} requests`);
  assert.equal(limited.arrivals.length, free.arrivals.length);
  // The k-th send is ≥ 100·k ms after the first; an arrival lags its send by the transit time, so the
  // k-th arrival is ≥ 100·k ms after the first one less the first one's transit (loaded machine: ≤ 60).
  const first = limited.arrivals[0];
  for (const [k, x] of limited.arrivals.entries()) {
    assert.ok(x - first >= 100 * k - 60, `arrival ${k} at ${x - first} ms`);
  }
  assert.ok(Math.min(...gaps(free.arrivals)) < 50, 'unlimited, four episodes overlap');
});

test('tpm: a request waits while the window already holds tpm reported tokens (window shortened)', async () => {
  const limiter = new RateLimiter(undefined, 250, 400);
  const t0 = performance.now();
  const admitted: number[] = [];
  for (let i = 0; i < 4; i++) {
    await limiter.wait();
    admitted.push(performance.now() - t0);
    limiter.spend(100);
  }
  // 100 + 100 + 100 ≥ 250: the fourth waits until the first leaves the 400 ms window.
  assert.ok(admitted[2] < 100, JSON.stringify(admitted));
  assert.ok(admitted[3] >= 400, JSON.stringify(admitted));
});

test('max_context: a prompt over it ends the episode as failure kind context, before any request', async () => {
  const s = await timedServer();
  const none = await run(`openai:${s.url}#oracle,max_context=50`);
  assert.equal(s.arrivals.length, 0);
  for (const t of none) {
    assert.equal(t.outcome.failure, 'context');
    assert.equal(t.turns.length, 0);
    assert.match(t.outcome.error ?? '', /the prompt \(about \d+ tokens\) is over max_context=50/);
  }
  // A window that holds a few turns: the history outgrows it mid-episode.
  const later = await run(`openai:${s.url}#oracle,max_context=260`, 2, 40);
  const ended = later.filter((t) => t.outcome.failure === 'context');
  assert.ok(
    ended.length > 0 && ended.every((t) => t.turns.length > 0),
    JSON.stringify(later.map((t) => t.outcome)),
  );
});

test('--api-key-env: 401 without the key; with it the run works and the key is in no output or file', async () => {
  const SECRET = 'sk-turnwise-test-5f3a9c';
  const serve = startServe(['--policy', 'oracle:eps=0.2', '--slippery', '--api-key-env', 'SERVE_KEY'], {
    SERVE_KEY: SECRET,
  });
  const url = await serve.ready;
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-key-'));
  const args = ['rollout', '--slippery', '--tasks', '2', '--samples', '2', '--budget', '10', '--json'];
  const refused = await turnwise([...args, '--policy', `openai:${url}#oracle`]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /^turnwise: --policy: got "http:.*"; the server refused the key \(HTTP 401\)/);
  assert.equal(refused.stderr.trim().split('\n').length, 1);
  const unset = await turnwise([
    ...args,
    '--policy',
    `openai:${url}#oracle`,
    '--api-key-env',
    'NO_SUCH_VAR_X',
  ]);
  assert.equal(unset.code, 2);
  assert.match(unset.stderr, /--api-key-env: got "NO_SUCH_VAR_X"; this environment variable is not set/);
  process.env.MY_TEST_KEY = SECRET;
  process.env.OPENAI_BASE_URL = url;
  try {
    const ok = await turnwise([
      ...args,
      '--policy',
      'openai:env#oracle', // the URL from OPENAI_BASE_URL
      '--api-key-env',
      'MY_TEST_KEY',
      '--out',
      join(dir, 't.jsonl'),
      '--db',
      join(dir, 'runs.sqlite'),
      '--cache',
      join(dir, 'cache.sqlite'),
      '--price',
      '0.5,2',
    ]);
    assert.equal(ok.code, 0, ok.stderr);
    const summary = JSON.parse(ok.stdout);
    assert.equal(summary.episodes, 4);
    const t = summary.requests;
    assert.ok(t.requests > 0 && t.promptTokens > 0);
    assert.equal(t.cost, (t.promptTokens * 0.5 + t.completionTokens * 2) / 1e6);
    for (const out of [ok.stdout, ok.stderr]) assert.ok(!out.includes(SECRET));
    const files = readdirSync(dir);
    assert.ok(files.includes('t.jsonl') && files.includes('runs.sqlite') && files.includes('cache.sqlite'));
    for (const f of files) assert.ok(!readFileSync(join(dir, f)).includes(SECRET), `${f} holds the key`);
    assert.ok(readFileSync(join(dir, 't.jsonl'), 'utf8').includes('"status":200'), 'the run wrote its turns');
  } finally {
    delete process.env.MY_TEST_KEY;
    delete process.env.OPENAI_BASE_URL;
  }
  serve.child.kill('SIGTERM');
  assert.equal(await serve.exited, 0);
});

test('bad openai options and flags: one line naming the option and the value, exit 2, no episode', async () => {
  const cases: [string[], RegExp][] = [
    [
      ['rollout', '--episodes', '1', '--policy', 'openai:http://127.0.0.1:9/v1#m,rpm=0'],
      /--policy openai\.rpm: got "0"; expected an integer from 1/,
    ],
    [
      ['rollout', '--episodes', '1', '--policy', 'openai:http://127.0.0.1:9/v1#m,max_context=big'],
      /--policy openai\.max_context: got "big"/,
    ],
    [
      ['eval', '--tasks', '1', '--policy', 'openai:http://127.0.0.1:9/v1#m', '--price', '1'],
      /--price: got "1"; expected IN,OUT/,
    ],
    [['probe', 'http://127.0.0.1:9/v1#m,tpm=x'], /probe URL#MODEL openai\.tpm: got "x"/],
    [
      ['probe', 'http://127.0.0.1:9/v1'],
      /probe URL#MODEL: got "openai:http:\/\/127\.0\.0\.1:9\/v1"; expected openai:URL#MODEL/,
    ],
  ];
  // In the shared worker: the --api-key-env test above sees a real process refuse in one line.
  for (const [args, re] of cases) {
    const r = await inProcess(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
});
