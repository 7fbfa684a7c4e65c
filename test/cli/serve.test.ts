// The real CLI: `turnwise serve` in a child process (readiness = its --json line on stdout), `turnwise
// rollout --policy openai:…` against it equal to the in-process rollout through faults, a clean stop on
// SIGTERM, and bad input as one line with exit code 2 before any episode.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startServe } from '../fixtures/serve-process.ts';
import { firstSpawned, turnwise } from './run.ts';

const essence = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const t = JSON.parse(l);
      return JSON.stringify([
        t.id,
        t.turns.map((u: Record<string, unknown>) => [u.observation, u.action, u.logp, u.info]),
        t.outcome,
      ]);
    });

test('rollout of openai:URL#oracle against turnwise serve (with faults) writes the in-process trajectories', async () => {
  const serve = startServe([
    '--policy',
    'oracle:eps=0.2',
    '--slippery',
    '--faults',
    '429=0.1,500=0.1,malformed=0.1,seed=7',
  ]);
  const url = await serve.ready;
  assert.match(serve.stderr(), /^listening on http:\/\/127\.0\.0\.1:\d+\/v1\n$/);
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-serve-'));
  const common = ['rollout', '--slippery', '--tasks', '2', '--samples', '3', '--budget', '20', '--seed', '4'];
  const served = await turnwise([
    ...common,
    '--policy',
    `openai:${url}#oracle,backoff=1ms`,
    '--out',
    join(dir, 'a.jsonl'),
    '--json',
  ]);
  const local = await turnwise([
    ...common,
    '--policy',
    'oracle:eps=0.2',
    '--out',
    join(dir, 'b.jsonl'),
    '--json',
  ]);
  assert.equal(served.code, 0, served.stderr);
  assert.equal(local.code, 0, local.stderr);
  assert.deepEqual(essence(join(dir, 'a.jsonl')), essence(join(dir, 'b.jsonl')));
  const a = JSON.parse(served.stdout);
  assert.equal(a.revealBudget, true, 'the served oracle is budget-aware: the listing says so');
  assert.equal(a.meanTurns, JSON.parse(local.stdout).meanTurns);
  const retries = readFileSync(join(dir, 'a.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .flatMap((l) => JSON.parse(l).turns.map((u: { trace: { retries: number } }) => u.trace.retries));
  assert.ok(
    retries.some((r: number) => r > 0),
    'the faults were met and retried',
  );
  serve.child.kill('SIGTERM');
  assert.equal(await serve.exited, 0);
});

test('bad input: unreachable URL, unlisted model, bad option, bad faults → one line, exit 2', async () => {
  const serve = startServe(['--policy', 'oracle']);
  const url = await serve.ready;
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const cases: [string[], RegExp][] = [
    [
      ['rollout', '--episodes', '2', '--policy', `openai:http://127.0.0.1:${port}/v1#oracle`],
      /cannot reach the server \(ECONNREFUSED\)/,
    ],
    [
      ['rollout', '--episodes', '2', '--policy', `openai:${url}#gpt-4`],
      /--policy: got "gpt-4"; the server does not list this model; it lists oracle/,
    ],
    [
      ['rollout', '--episodes', '2', '--policy', `openai:${url}#oracle,max_tokens=lots`],
      /openai\.max_tokens: got "lots"/,
    ],
    [
      ['eval', '--tasks', '2', '--policy', `openai:${url}#oracle,mode=json`],
      /openai\.mode: got "json"; expected tools or text/,
    ],
    [['serve', '--policy', 'oracle', '--faults', '429=0.7,500=0.7'], /--faults: .*sum to 1\.4/],
    [
      ['serve', '--policy', 'oracle', '--random', '--budget', '3'],
      /--budget: got "?3"?; only for tool envs; frozenlake is served from its text view/,
    ],
  ];
  for (const [i, [args, re]] of cases.entries()) {
    const r = await firstSpawned(i, args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
  serve.child.kill('SIGINT');
  assert.equal(await serve.exited, 0);
});
