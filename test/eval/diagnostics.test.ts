import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import type { Oracle, Policy, Task } from '../../src/core/types.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { compare } from '../../src/eval/compare.ts';
import { evaluate, resolveMode, runPassCounts } from '../../src/eval/evaluate.ts';
import { exactSuccess } from '../../src/eval/exact.ts';
import { failures } from '../../src/eval/failures.ts';
import { likelihood } from '../../src/eval/likelihood.ts';
import { recovery } from '../../src/eval/recovery.ts';
import { collectStates, makeErrorStates, type Recorded, turnsLeft } from '../../src/eval/states.ts';
import { stepQuality } from '../../src/eval/step-quality.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { summarize } from '../../src/rollout/summary.ts';

type AnyPolicy = Policy<unknown, unknown>;
const slippery4 = envConfig('frozenlake', { map: '4x4', slippery: true });
const tasks = (n: number, seed = 0): Task[] => makeTasks(slippery4, n, seed);
const spec = makeEnv(tasks(1)[0]).spec;
const policy = (s: string): AnyPolicy => makePolicy(s, spec);
const oracleOf = (task: Task) => makeEnv(task).oracle!() as Oracle<unknown>;

async function recorded(p: AnyPolicy, n: number, samples: number, seed: number): Promise<Recorded[]> {
  const run = await runPassCounts({
    envs,
    tasks: tasks(n, seed),
    samples,
    T: [100],
    policy: p,
    runSeed: seed,
    keep: true,
  });
  return run.atTmax;
}

test('prefix mode is refused for a budget-aware policy; the default picks the valid mode', () => {
  assert.throws(
    () => resolveMode(policy('oracle'), 'prefix'),
    (e: unknown) =>
      e instanceof InputError &&
      e.field === '--mode' &&
      /sees the turns left.*--mode separate/.test(e.message),
  );
  assert.equal(resolveMode(policy('oracle')), 'separate');
  assert.equal(resolveMode(policy('random')), 'prefix');
  assert.equal(resolveMode(policy('oracle:horizon=100'), 'separate'), 'separate');
});

test('for a budget-blind policy, separate mode reproduces prefix mode exactly (common random numbers)', async () => {
  for (const s of ['random', 'oracle:eps=0.3,horizon=100']) {
    const o = { tasks: tasks(6, 2), samples: 16, T: [5, 12, 40], policy: policy(s), runSeed: 2 };
    const prefix = await runPassCounts({ envs, ...o, mode: 'prefix' });
    const separate = await runPassCounts({ envs, ...o, mode: 'separate' });
    assert.deepEqual(prefix.counts, separate.counts, s);
    assert.ok(
      prefix.counts.c.some((c) => c > 0),
      s,
    );
  }
});

test('budget-aware oracle in separate mode: Pass@(1,T) agrees with the exact V*_T; rows and columns increase', async () => {
  const ts = tasks(25, 7);
  const oracle = policy('oracle');
  const r = await evaluate({
    envs,
    tasks: ts,
    samples: 40,
    K: [1, 2, 8],
    T: [10, 20],
    policy: oracle,
    runSeed: 7,
    resamples: 300,
  });
  assert.equal(r.mode, 'separate');
  r.T.forEach((T, j) => {
    const exact = exactSuccess(makeEnv(ts[0]), oracle, T)!;
    const se = Math.sqrt((exact * (1 - exact)) / 1000);
    assert.ok(Math.abs(r.passKT[0][j] - exact) < 4 * se, `T=${T}: ${r.passKT[0][j]} vs ${exact}`);
    const [lo, hi] = r.ci95[0][j];
    assert.ok(lo <= r.passKT[0][j] && r.passKT[0][j] <= hi);
  });
  assert.equal(exactSuccess(makeEnv(ts[0]), oracle, 20)!.toFixed(4), '0.1991');
  for (let k = 0; k < r.K.length; k++) {
    for (let j = 0; j < r.T.length; j++) {
      if (k > 0) assert.ok(r.passKT[k][j] >= r.passKT[k - 1][j], `K at ${k},${j}`);
      if (j > 0) assert.ok(r.passKT[k][j] >= r.passKT[k][j - 1], `T at ${k},${j}`);
    }
  }
  assert.equal(r.perTask.length, 25);
  assert.deepEqual(Object.keys(r.perTask[0].successWithin), ['10', '20']);
});

test('error states: the forced turn has positive regret, the state is live, replay reproduces the episode', async () => {
  const pool = await recorded(policy('random'), 8, 8, 1);
  const errors = await makeErrorStates(envs, [pool], 60, 1);
  assert.equal(errors.states.length, 60);
  assert.equal(errors.attempts, 60 + errors.terminal + errors.noBadAction);
  for (const st of errors.states) {
    const forced = st.history[st.history.length - 1];
    assert.equal(forced.forced, true);
    const oracle = oracleOf(st.task);
    const h = st.budget - forced.t;
    const s = oracle.state(forced.observation);
    assert.ok(oracle.v(h, s) - oracle.q(h, s)[forced.action as number] > 1e-12, 'regret > 0');
    assert.ok(turnsLeft(st) >= 1);
    const kind = makeEnv(st.task).text!(st.observation as number);
    assert.doesNotMatch(kind, /[X√]/, 'not in a hole or on the goal');
  }
  // Same seed, same states.
  const again = await makeErrorStates(envs, [pool], 60, 1);
  assert.deepEqual(
    again.states.map((s) => [s.observation, s.history.length]),
    errors.states.map((s) => [s.observation, s.history.length]),
  );
});

test('step quality: the budget-aware oracle is never beaten and has zero regret; random regret is exact', async () => {
  const pool = await recorded(policy('random'), 8, 8, 3);
  const states = collectStates([pool], 80, 3);
  const oracle = policy('oracle');
  const random = policy('random');
  const q = await stepQuality(envs, states, oracle, random, { actions: 16, seed: 3 });
  assert.equal(q.states, 80);
  assert.equal(q.bBetter, 0);
  assert.equal(q.regretA, 0);
  assert.equal(q.exact!.bBetter, 0);
  assert.equal(q.exact!.regretA, 0);
  assert.ok(Math.abs(q.aBetter! + q.ties! + q.bBetter! - 1) < 1e-12);
  // E[regret of random] = mean over states of V*_h(s) − mean_a Q*_h(s, a), computed here directly.
  let want = 0;
  for (const st of states) {
    const o = oracleOf(st.task);
    const h = turnsLeft(st);
    const s = o.state(st.observation);
    want += (o.v(h, s) - o.q(h, s).reduce((x, y) => x + y, 0) / 4) / states.length;
  }
  assert.ok(Math.abs(q.exact!.regretB - want) < 1e-12);
  assert.ok(Math.abs(q.regretB! - want) < 0.2 * want, `${q.regretB} vs ${want}`);
  // Random against itself: the exact figures are symmetric and the score is 1/2.
  const self = await stepQuality(envs, states, random, policy('random'), { actions: 16, seed: 3 });
  assert.ok(Math.abs(self.exact!.aBetter - self.exact!.bBetter) < 1e-12);
  assert.ok(Math.abs(self.exact!.score - 0.5) < 1e-12);
  assert.ok(Math.abs(self.score! - 0.5) < 0.05);
});

test('recovery: measured continuation success agrees with the exact V^π at the error states', async () => {
  const pool = await recorded(policy('oracle:horizon=100'), 8, 8, 4);
  const errors = await makeErrorStates(envs, [pool], 80, 4);
  const oracle = policy('oracle');
  const random = policy('random');
  const r = await recovery(envs, errors.states, oracle, random, {
    continuations: 8,
    seed: 4,
    resamples: 500,
  });
  assert.equal(r.states, 80);
  // The budget-aware oracle is optimal: its exact continuation value is V*_h(s), computed here directly.
  let want = 0;
  for (const st of errors.states) want += oracleOf(st.task).v(turnsLeft(st), st.observation as number) / 80;
  assert.ok(Math.abs(r.a.exact! - want) < 1e-12);
  for (const side of [r.a, r.b]) {
    const [lo, hi] = side.ci95!;
    assert.ok(lo <= side.success! && side.success! <= hi);
    assert.ok(Math.abs(side.success! - side.exact!) < 0.06, `${side.success} vs ${side.exact}`);
  }
  assert.ok(r.diff! > 0.3 && r.diffCi95![0] > 0);
});

test('likelihood: NLL of any action under random is ln 4; −∞ log-probs are counted, not averaged', async () => {
  const a = policy('oracle:horizon=100');
  const b = policy('random');
  const ra = (await recorded(a, 4, 16, 5)).map((r) => r.trajectory);
  const rb = (await recorded(b, 8, 32, 5)).map((r) => r.trajectory);
  const l = (await likelihood(envs, ra, rb, a, b))!;
  assert.equal(l.nllAunderB, Math.log(4));
  assert.equal(l.nllBunderB, Math.log(4));
  assert.equal(l.infinite.nllAunderB, 0);
  assert.equal(
    l.actions.a,
    ra.reduce((n, t) => n + t.turns.length, 0),
  );
  // Per action, LLR = log π_A + ln 4; on A's own successful trajectories no term is infinite.
  let llr = 0;
  let n = 0;
  for (const t of ra) {
    if (!t.outcome.success) continue;
    n++;
    for (const turn of t.turns) llr += turn.logp + Math.log(4);
  }
  assert.equal(l.successful.a, n);
  assert.ok(Math.abs(l.llrSuccessA! - llr / n) < 1e-9, `${l.llrSuccessA} vs ${llr / n}`);
  // Random's actions under the greedy oracle: most have probability 0 (NLL +∞), counted apart.
  assert.ok(l.infinite.nllBunderA > 0 && l.infinite.nllBunderA < l.actions.b);
  assert.ok(Number.isFinite(l.nllBunderA!));
  // B's successful trajectories with an action the greedy A never takes have LLR −∞: counted apart.
  let offSupport = 0;
  for (const t of rb) {
    if (!t.outcome.success) continue;
    const ctx = { history: [], turn: 0, rng: Rng.derive(0), env: makeEnv(t.task) };
    if (
      t.turns.some((turn) => a.logProb!({ ...ctx, observation: turn.observation }, turn.action) === -Infinity)
    )
      offSupport++;
  }
  assert.ok(l.successful.b > 0);
  assert.equal(l.infinite.llrSuccessB, offSupport);
  assert.equal(l.llrSuccessB === null, offSupport === l.successful.b);
  assert.doesNotMatch(JSON.stringify(l), /NaN|Infinity/);
});

test('compare of a policy with itself: zero Pass@(K,T) difference and LLR, identical recovery', async () => {
  const r = await compare({
    envs,
    tasks: tasks(4, 6),
    samples: 8,
    K: [1, 4],
    T: [10, 50],
    a: policy('oracle:eps=0.5,horizon=100'),
    b: policy('oracle:eps=0.5,horizon=100'),
    runSeed: 6,
    states: 30,
    actions: 8,
    continuations: 2,
    resamples: 200,
  });
  assert.deepEqual(r.passKT.diff, [
    [0, 0],
    [0, 0],
  ]);
  assert.deepEqual(r.passKT.diffCi95.flat(), [
    [0, 0],
    [0, 0],
    [0, 0],
    [0, 0],
  ]);
  assert.equal(r.recovery!.a.success, r.recovery!.b.success);
  assert.deepEqual(r.recovery!.diffCi95, [0, 0]);
  assert.equal(r.likelihood!.llrSuccessA, 0);
  assert.equal(r.likelihood!.nllAunderA, r.likelihood!.nllAunderB);
  assert.ok(Math.abs(r.stepQuality!.normal.exact!.score - 0.5) < 1e-12);
  assert.deepEqual(r.failures.a, r.failures.b);
});

test('failures: counts by kind and turns on success vs failure', async () => {
  const trs = (await recorded(policy('oracle:horizon=100'), 4, 32, 8)).map((r) => r.trajectory);
  const f = failures(trs);
  const s = summarize(trs);
  assert.equal(f.episodes, 128);
  assert.equal(f.successes, Math.round(s.success * 128));
  assert.equal(
    Object.values(f.byKind).reduce((x, y) => x + y, 0),
    128 - f.successes,
  );
  assert.deepEqual(f.byKind, { ...s.failures });
  assert.equal(f.meanTurnsSuccess, s.meanTurnsSuccess);
  const turnsFailed = trs.filter((t) => !t.outcome.success).reduce((n, t) => n + t.outcome.turns, 0);
  assert.equal(f.meanTurnsFailure, turnsFailed / (128 - f.successes));
});

test('every diagnostic accepts async envs and policies: compare gives the sync report, and closes its envs', async () => {
  let open = 0;
  let made = 0;
  const asyncEnvs = {
    ...envs,
    async make(t: Parameters<typeof makeEnv>[0]) {
      const env = makeEnv(t);
      const wrapped = Object.create(env) as ReturnType<typeof makeEnv>;
      wrapped.reset = async (seed: number) => env.reset(seed);
      wrapped.step = async (a: unknown) => env.step(a as never);
      // The state lives in the inner env: snapshots must reach it.
      wrapped.snapshot = () => env.snapshot?.();
      wrapped.restore = (snap: unknown, seed?: number) => env.restore?.(snap, seed);
      wrapped.close = async () => {
        open--;
      };
      made++;
      open++;
      return wrapped;
    },
  };
  const asyncOf = (p: ReturnType<typeof policy>) =>
    Object.assign(Object.create(p), { act: async (ctx: never) => p.act(ctx) }) as ReturnType<typeof policy>;
  const o = {
    tasks: tasks(3, 40),
    samples: 6,
    K: [1, 2],
    T: [10, 40],
    runSeed: 9,
    states: 12,
    actions: 4,
    continuations: 2,
    resamples: 100,
  };
  const a = policy('oracle:eps=0.3');
  const b = policy('random');
  const sync = await compare({ ...o, envs, a, b });
  const async_ = await compare({ ...o, envs: asyncEnvs, a: asyncOf(a), b: asyncOf(b) });
  assert.deepEqual(async_, sync);
  assert.ok(sync.recovery !== null && sync.recovery.states > 0 && sync.likelihood !== null);
  assert.ok(made > o.tasks.length * o.samples * 2);
  assert.equal(open, 0);
});
