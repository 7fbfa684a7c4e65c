// The contracts of issue 12 through the real CLI: `turnwise serve --policy oracle:eps=0.2` in a child
// process (readiness = its --json line), and `turnwise eval | rollout | compare --policy openai:…`
// against it, equal to the in-process figures — plainly, through --faults (only the retry counts
// differ) and from a replay cache with the server stopped; NLL/LLR through the scoring endpoint of two
// served policies; a served env of other params refused at connect.
import assert from 'node:assert/strict';
import type { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { turnwise } from '../cli/run.ts';
import { startServe } from '../fixtures/serve-process.ts';

const children: ReturnType<typeof spawn>[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
});

function startTracked(args: string[]) {
  const s = startServe(args);
  children.push(s.child);
  return { ready: s.ready, stop: async () => assert.equal(await s.stop(), 0) };
}

const ok = async (args: string[]) => {
  const r = await turnwise(args);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  return r;
};
const evalArgs = ['eval', '--slippery', '--tasks', '4', '--samples', '6', '--K', '1,2,4', '--T', '10,30'];
const evalArgsRest = ['--resamples', '200', '--seed', '2', '--json'];
/** What Pass@(K,T) must agree on: the estimates, the intervals, the per-task successes. */
const pass = (stdout: string) => {
  const r = JSON.parse(stdout);
  return JSON.stringify([r.mode, r.K, r.T, r.passKT, r.ci95, r.perTask]);
};

test('eval: served oracle:eps=0.2 gives the in-process Pass@(K,T) — plainly, through faults, and from a cache with the server down', async () => {
  const local = await ok([...evalArgs, '--policy', 'oracle:eps=0.2', ...evalArgsRest]);
  const plain = startTracked(['--policy', 'oracle:eps=0.2', '--slippery']);
  const faulty = startTracked([
    '--policy',
    'oracle:eps=0.2',
    '--slippery',
    '--faults',
    '429=0.1,500=0.1,hang=0.02,malformed=0.1,seed=7',
  ]);
  const [url, faultyUrl] = await Promise.all([plain.ready, faulty.ready]);
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-contract-'));
  const cache = join(dir, 'c.sqlite');
  const served = await ok([
    ...evalArgs,
    '--policy',
    `openai:${url}#oracle`,
    '--cache',
    cache,
    ...evalArgsRest,
  ]);
  const throughFaults = await ok([
    ...evalArgs,
    '--policy',
    `openai:${faultyUrl}#oracle,timeout=400ms,backoff=1ms,retries=20`,
    ...evalArgsRest,
  ]);
  await plain.stop();
  await faulty.stop();
  const replayed = await ok([
    ...evalArgs,
    '--policy',
    `openai:${url}#oracle`,
    '--cache',
    cache,
    ...evalArgsRest,
  ]);
  assert.equal(pass(served.stdout), pass(local.stdout));
  assert.equal(pass(throughFaults.stdout), pass(local.stdout));
  assert.equal(pass(replayed.stdout), pass(local.stdout));
  // Not vacuous: the estimates are neither 0 nor 1 everywhere.
  const p = JSON.parse(local.stdout).passKT.flat() as number[];
  assert.ok(
    p.some((x) => x > 0 && x < 1),
    JSON.stringify(p),
  );
  // The totals: plain run all 200; the faulty one retried 429s and 500s; the replay made no request.
  const totals = (s: string) => JSON.parse(s).requests;
  const a = totals(served.stdout);
  assert.equal(a.retries, 0);
  assert.deepEqual(Object.keys(a.byStatus), ['200']);
  assert.equal(a.byStatus['200'], a.requests);
  assert.ok(a.promptTokens > 0 && a.completionTokens > 0);
  const f = totals(throughFaults.stdout);
  assert.ok(f.retries > 0 && f.byStatus['429'] > 0 && f.byStatus['500'] > 0, JSON.stringify(f));
  assert.equal(f.requests - f.retries, a.requests, 'one answered request per turn, as without faults');
  const attempts = Object.values(f.byStatus as Record<string, number>).reduce((s, x) => s + x, 0);
  assert.equal(attempts, f.requests);
  assert.ok(f.byStatus['200'] > a.requests, 'malformed bodies come with status 200 and are retried');
  assert.equal(f.failed, 0);
  const r = totals(replayed.stdout);
  assert.equal(r.requests, 0);
  assert.equal(r.cached, a.requests);
});

test('rollout --out: served equals in-process in actions and log-probs; each turn traces its HTTP status', async () => {
  const serve = startTracked(['--policy', 'oracle:eps=0.2', '--slippery']);
  const url = await serve.ready;
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-contract-'));
  const common = ['rollout', '--slippery', '--tasks', '3', '--samples', '3', '--budget', '25', '--seed', '6'];
  await ok([...common, '--policy', `openai:${url}#oracle`, '--out', join(dir, 'a.jsonl')]);
  await ok([...common, '--policy', 'oracle:eps=0.2', '--out', join(dir, 'b.jsonl')]);
  await serve.stop();
  const read = (f: string) =>
    readFileSync(join(dir, f), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
  const a = read('a.jsonl');
  const b = read('b.jsonl');
  const essence = (ts: { turns: { action: number; logp: number }[]; outcome: unknown }[]) =>
    ts.map((t) => JSON.stringify([t.turns.map((u) => [u.action, u.logp]), t.outcome]));
  assert.deepEqual(essence(a), essence(b));
  for (const t of a) for (const u of t.turns) assert.equal(u.trace.status, 200);
});

test('compare of two served policies: NLL and LLR through /v1/completions equal the in-process figures', async () => {
  const A = startTracked(['--policy', 'oracle:eps=0.2', '--slippery']);
  const B = startTracked(['--policy', 'random', '--slippery']);
  const [ua, ub] = await Promise.all([A.ready, B.ready]);
  const common = [
    '--slippery',
    '--tasks',
    '3',
    '--samples',
    '4',
    '--K',
    '1,2',
    '--T',
    '10,20',
    '--states',
    '6',
    '--actions',
    '4',
    '--continuations',
    '2',
    '--resamples',
    '100',
    '--seed',
    '3',
    '--json',
  ];
  const served = JSON.parse(
    (await ok(['compare', '--a', `openai:${ua}#oracle`, '--b', `openai:${ub}#random`, ...common])).stdout,
  );
  const local = JSON.parse(
    (await ok(['compare', '--a', 'oracle:eps=0.2', '--b', 'random', ...common])).stdout,
  );
  await A.stop();
  await B.stop();
  assert.ok(served.likelihood !== null);
  // Served, the policies write text (one token per action in their traces): the per-token and
  // per-trajectory figures come on top, and per token is per action for the NLLs.
  const { perToken, perTrajectory, ...perAction } = served.likelihood;
  assert.deepEqual(perAction, local.likelihood);
  assert.equal(local.likelihood.perToken, undefined);
  assert.deepEqual(perToken.tokens, perAction.actions);
  for (const k of ['nllAunderA', 'nllAunderB', 'nllBunderB', 'nllBunderA'])
    assert.equal(perToken[k], perAction[k], k);
  assert.deepEqual(perTrajectory.trajectories, { a: 12, b: 12 });
  // Values that could be wrong: random's NLL is ln 4 exactly; the oracle's is below it.
  assert.equal(local.likelihood.nllBunderB, Math.log(4));
  assert.ok(local.likelihood.nllAunderA < 1 && local.likelihood.actions.a > 50);
  assert.deepEqual(served.passKT.diff, local.passKT.diff);
});

test('a served env of other params is refused at connect: one line, exit 2', async () => {
  const serve = startTracked(['--policy', 'oracle']); // not slippery
  const url = await serve.ready;
  const r = await turnwise(['eval', '--slippery', '--tasks', '2', '--policy', `openai:${url}#oracle`]);
  await serve.stop();
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stdout, '');
  assert.match(
    r.stderr,
    /--policy: http:\/\/127\.0\.0\.1:\d+\/v1 serves frozenlake \{.*"slippery":false.*\}, but this run's env is frozenlake \{.*"slippery":true.*\}; give the same env flags to both/,
  );
  assert.equal(r.stderr.trim().split('\n').length, 1);
});
