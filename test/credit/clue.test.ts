// Clue credit: a hand-made group against hand-computed values (λ, ρ both ways), the properties the method
// is for (useful turns of failed trajectories positive, redundant turns of a success negative, the outcome
// on the answer turn only), the refusal of trajectories without clue accounting, the registry's spec and
// defaults, and on real search rollouts the clue term against the env's own accounting.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StepInfo, Trajectory } from '../../src/core/types.ts';
import {
  applyFlags,
  CLUE_DEFAULTS,
  clue,
  creditBatch,
  METHOD_PARAMS,
  methodOptions,
  parseMethodSpec,
} from '../../src/credit/index.ts';
import { envConfig, envSpec, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { close, traj } from './fixtures.ts';

const N = 4;
const info = (tool: string, clues: string[], extra: StepInfo = {}): StepInfo => ({
  tool,
  clues,
  cluesNeeded: N,
  redundant: clues.length === 0 && tool !== 'answer',
  ...extra,
});
const search = (...clues: string[]) => ({ info: info('search', clues) });
const open = (...clues: string[]) => ({ info: info('open', clues) });

// One task, three samples (N = 4 clues: a 2-hop question).
//   A succeeds: search +1, open +1, a redundant search, open +2, the right answer (reward 1);
//   B fails:    search +1, a wrong answer;
//   C fails:    a redundant open, a search that shows 2 clues, then the budget ends it.
const A = traj(
  [
    search('locate:a'),
    open('fact:a.r'),
    search(),
    open('locate:b', 'fact:b.s'),
    { reward: 1, info: info('answer', [], { success: true }) },
  ],
  { seed: 1 },
);
const B = traj(
  [search('locate:a'), { info: info('answer', [], { success: false, failure: 'wrong-answer' }) }],
  {
    seed: 1,
  },
);
const C = traj([open(), search('locate:a', 'fact:a.r')], { seed: 1, end: 'truncated' });

test('clue credit on a hand-made group equals the hand-computed values', () => {
  // R = (1, 0, 0): mean 1/3, population std √(2/9) = √2/3, so A^O = (√2, −1/√2, −1/√2) (ε = 0).
  const aA = Math.SQRT2;
  const aB = -1 / Math.SQRT2;
  // λ = 1, ρ = 1: a clue is +1/4, a turn with none −1/4, the outcome on the answer turn only.
  close(clue([A, B, C], { eps: 0 }), [
    [0.25, 0.25, -0.25, 0.5, aA],
    [0.25, aB - 0.25],
    [-0.25, 0.5],
  ]);
  // λ = 2, ρ = 0.5: a clue is +1/2, a turn with none −1/4.
  close(clue([A, B, C], { eps: 0, lambda: 2, penalty: 0.5 }), [
    [0.5, 0.5, -0.25, 1, aA],
    [0.5, aB - 0.25],
    [-0.25, 1],
  ]);
  // Without the std: A^O = R − mean = (2/3, −1/3, −1/3).
  close(clue([A, B, C], { std: false }), [
    [0.25, 0.25, -0.25, 0.5, 2 / 3],
    [0.25, -1 / 3 - 0.25],
    [-0.25, 0.5],
  ]);
});

test('the properties: useful turns of failures positive, redundant turns of a success negative', () => {
  const rows = clue([A, B, C]);
  assert.ok(rows[1][0] > 0 && rows[2][1] > 0, 'useful turns inside failed trajectories');
  assert.ok(rows[0][2] < 0, 'a redundant turn inside the success');
  // A dead group (every sample fails): no outcome contrast, and still the clue credit.
  close(clue([B, C]), [
    [0.25, -0.25],
    [-0.25, 0.5],
  ]);
  // A group of one likewise.
  close(clue([C]), [[-0.25, 0.5]]);
});

test('trajectories without clue accounting are refused, naming the turn', () => {
  assert.throws(
    () => clue([traj([0, 1])]),
    /--method: got "clue"; needs trajectories with clue accounting .* turn 0 of h\d+ \(frozenlake\) has none/,
  );
});

test('train: --credit clue is refused before any work off search, accepted on it', () => {
  assert.throws(
    () => parseTrainConfig({ env: envConfig('frozenlake', { map: '4x4' }), credit: { method: 'clue' } }),
    /config\.credit\.method: got "clue"; reads the clue accounting the search env records on every turn; env\.env is frozenlake/,
  );
  const c = parseTrainConfig({
    env: envConfig('search', { mode: 'choose' }),
    policy: { kind: 'mlp', hidden: [8] },
    credit: { method: 'clue', penalty: 0.5 },
  });
  assert.deepEqual(c.credit, { method: 'clue', penalty: 0.5 });
});

test('registry: the spec and flags set λ and ρ; the declared defaults are the estimator’s', () => {
  const [spec] = applyFlags([parseMethodSpec('clue:penalty=0.5')], { lambda: '2' });
  assert.deepEqual(spec.params, { penalty: 0.5, lambda: 2 });
  assert.deepEqual(methodOptions('clue', spec.params), { penalty: 0.5, lambda: 2 });
  assert.throws(() => parseMethodSpec('clue:penalty=-1'), /penalty/);
  assert.throws(() => parseMethodSpec('clue:gamma=0.5'), /clue takes lambda, penalty, std, eps/);
  const declared = Object.fromEntries(
    Object.entries(METHOD_PARAMS.clue.shape).map(([k, s]) => [k, s.parse(undefined)]),
  );
  assert.deepEqual(declared, { ...CLUE_DEFAULTS });
  const batch = [A, B, C, traj([open('x'), search()], { seed: 2 })];
  for (const t of batch.slice(3))
    for (const turn of t.turns) (turn.info as { cluesNeeded: number }).cluesNeeded = 2;
  const unset = creditBatch(batch, 'clue', methodOptions('clue', {}));
  assert.deepEqual(creditBatch(batch, 'clue', methodOptions('clue', declared)), unset);
  for (const [k, v] of Object.entries(declared)) {
    const other = typeof v === 'boolean' ? !v : Number(v) / 2;
    assert.notDeepEqual(creditBatch(batch, 'clue', methodOptions('clue', { [k]: other })), unset, k);
  }
});

test('on search rollouts the clue term is the env’s accounting: Σ new clues = clues held at the end', async () => {
  for (const params of [{ mode: 'choose' }, {}]) {
    const tasks = makeTasks(envConfig('search', params), 6, 40);
    const spec = envSpec(tasks[0]);
    const policy = makePolicy(params.mode === 'choose' ? 'mlp:hidden=8' : 'random', spec);
    const ts: Trajectory[] = await rollout({ tasks, samples: 4, policy, makeEnv, budget: 12, runSeed: 3 });
    const rows = creditBatch(ts, 'clue', methodOptions('clue', { eps: 0 }));
    const aO = creditBatch(ts, 'grpo', methodOptions('grpo', { eps: 0 }));
    ts.forEach((t, i) => {
      const last = t.turns[t.turns.length - 1].info as { cluesHeld: number; cluesNeeded: number };
      let sum = 0;
      t.turns.forEach((turn, k) => {
        const n = (turn.info.clues as string[]).length;
        sum += n;
        const answer = turn.info.tool === 'answer';
        const nothing = n === 0 && !(answer && turn.info.success === true) ? 1 : 0;
        const want = (answer ? aO[i][k] : 0) + (n - nothing) / last.cluesNeeded;
        assert.ok(Math.abs(rows[i][k] - want) < 1e-12, `${t.id} turn ${k}`);
      });
      assert.equal(sum, last.cluesHeld, t.id);
    });
  }
});
