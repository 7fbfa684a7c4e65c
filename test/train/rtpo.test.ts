// Algo rtpo (train/rtpo.ts): the stages of the backward update, the per-turn log-ratios, the drift the
// second stage sees after the first stage's Adam step (computed by hand), the one-stage case equal to
// GRPO's update on reverse-turn credit, and the config's refusal of another credit method.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import type { Trajectory } from '../../src/core/types.ts';
import { creditBatch } from '../../src/credit/index.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { checkTrainConfig, parseTrainConfig } from '../../src/train/config.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import type { PgUnits } from '../../src/train/pg-step.ts';
import { backwardStages, logRatios, rtpoUpdate } from '../../src/train/rtpo.ts';
import { setup } from '../../src/train/setup.ts';
import { policyUpdate } from '../../src/train/update.ts';

const slippery4 = { env: 'frozenlake', params: { map: '4x4', slippery: true } };
const [task] = makeTasks(envConfig('frozenlake', slippery4.params), 1, 0);

/** A trajectory of the fixed map from (cell, action, reward) turns, behaviour π = 1/4 (a fresh table). */
function traj(id: string, turns: [number, number, number][]): Trajectory {
  const ret = turns.reduce((a, [, , r]) => a + r, 0);
  return {
    id,
    task,
    policy: 'tabular',
    budget: 10,
    revealBudget: false,
    turns: turns.map(([observation, action, reward], t) => ({
      t,
      observation,
      action,
      reward,
      logp: Math.log(0.25),
      info: {},
    })),
    outcome: {
      success: ret > 0,
      return: ret,
      turns: turns.length,
      firstSuccessTurn: ret > 0 ? turns.length : null,
      end: 'terminated',
      failure: ret > 0 ? null : 'irreversible',
    },
  };
}

test('backward stages: latest turn index first, ties in batch order, ⌈N/S⌉ per stage', () => {
  assert.deepEqual(backwardStages([0, 1, 2, 0, 1], 2), [
    [2, 1, 4],
    [0, 3],
  ]);
  assert.deepEqual(backwardStages([0, 1, 2, 0, 1], 1), [[2, 1, 4, 0, 3]]);
  assert.deepEqual(backwardStages([0, 1], 5), [[1], [0]]);
});

test('log-ratios: a turn sums its own units (tokens); a turn without any keeps 0', () => {
  const u = {
    units: [
      { traj: 0, t: 0 },
      { traj: 0, t: 0 },
      { traj: 1, t: 1 },
    ],
    logpOld: Float64Array.from([-1, -2, -0.5]),
  } as unknown as PgUnits;
  const batch = [
    traj('a', [[0, 0, 0]]),
    traj('b', [
      [0, 0, 0],
      [1, 0, 0],
    ]),
  ];
  const lr = logRatios(u, [-0.5, -2.5, -1], batch);
  assert.deepEqual(
    lr.map((r) => Array.from(r)),
    [[0.5 - 0.5], [0, -0.5]],
  );
});

test('drift: after the latest turns are updated, the earlier stage sees their ratios to μ (by hand)', () => {
  // A: cell 0 Down, then cell 4 Right paid 1. B: cell 0 Right, then cell 8 Left paid 0.5. Stage 1 holds the
  // turns at index 1: A's gets +1, B's −1 (the cohort {1, 0.5} standardised). Adam's first step moves every
  // logit of a touched row by lr = 0.1 along the gradient's sign, so after it
  //   π(Right | 4) = e^0.1 / (e^0.1 + 3e^−0.1) = 0.289336…   ratio to μ = 1/4: 1.157343 → c = c̄ = 1 (cut)
  //   π(Left | 8)  = e^−0.1 / (e^−0.1 + 3e^0.1) = 0.214399…   ratio 0.857595 = c
  // and the turns at index 0 (rows untouched) have c = 1: mean c = (1 + 1 + 1 + 0.857595)/4, 1/4 cut.
  const config = parseTrainConfig({
    env: slippery4,
    algo: 'rtpo',
    optim: { lr: 0.1 },
    ppo: { epochs: 1, minibatches: 2 },
  });
  const s = setup(config, envs);
  const A = traj('A', [
    [0, 1, 0],
    [4, 2, 1],
  ]);
  const B = traj('B', [
    [0, 2, 0],
    [8, 0, 0.5],
  ]);
  const pg = rtpoUpdate(s, config, [A, B], [A, B], {}, makeEnv, 0);
  assert.ok(pg !== null);
  const e = Math.exp(0.1);
  const cB = 1 / (1 + 3 * e * e) / 0.25;
  assert.ok(Math.abs(cB - 0.857595) < 1e-6);
  assert.ok(Math.abs(e / (e + 3 / e) / 0.25 - 1.157343) < 1e-6);
  const x = pg.extra!;
  assert.equal(x['rtpo/context_mismatch'], 0);
  assert.ok(Math.abs(x['rtpo/ratio_mean'] - (3 + cB) / 4) < 1e-6, `${x['rtpo/ratio_mean']}`);
  assert.equal(x['rtpo/truncated'], 0.25);
  assert.equal(pg.turns, 4);
});

test('one stage, one epoch: the update is GRPO on reverse-turn credit (nothing has drifted yet)', () => {
  const config = parseTrainConfig({ env: slippery4, algo: 'rtpo', ppo: { epochs: 1, minibatches: 1 } });
  const batch = [
    traj('A', [
      [0, 1, 0],
      [4, 1, 0],
      [8, 2, 1],
    ]),
    traj('B', [
      [0, 2, 0],
      [1, 1, 0],
    ]),
    traj('C', [
      [0, 1, 0],
      [4, 2, 0],
      [5, 0, 0],
    ]),
  ];
  const a = setup(config, envs);
  rtpoUpdate(a, config, batch, batch, {}, makeEnv, 0);
  const b = setup(config, envs);
  policyUpdate(b, config, batch, creditBatch(batch, 'reverse-turn', {}), makeEnv, Rng.derive(0), 0);
  const pa = Array.from(a.learner.params[0][1].data);
  const pb = Array.from(b.learner.params[0][1].data);
  for (const [i, v] of pa.entries()) assert.ok(Math.abs(v - pb[i]) < 1e-6, `param ${i}: ${v} vs ${pb[i]}`);
  assert.ok(pa.some((v) => v !== 0));
});

test('algo rtpo: its own credit only; a run is deterministic and reports its drift', async () => {
  assert.throws(
    () => checkTrainConfig(parseTrainConfig({ env: slippery4, algo: 'rtpo', credit: { method: 'grpo' } })),
    (e: unknown) =>
      e instanceof InputError &&
      /config\.credit\.method: got "grpo"; algo rtpo computes its own credit/.test(e.message),
  );
  assert.equal(parseTrainConfig({ env: slippery4, algo: 'rtpo', credit: { cbar: 2 } }).credit.cbar, 2);
  const config = parseTrainConfig({
    env: slippery4,
    algo: 'rtpo',
    iters: 2,
    groups: 4,
    budget: { kind: 'fixed', budget: 20 },
    eval: { episodes: 1 },
    seed: 3,
  });
  const run = async () => (await trainPolicyGradient({ config, envs })).metrics.map((m) => m.values);
  const first = await run();
  assert.deepEqual(await run(), first);
  const last = first.at(-1)!;
  assert.ok(last['rtpo/context_mismatch'] < 1e-12); // the recorded μ and the re-computed log π_θold agree to rounding
  assert.ok(last['rtpo/ratio_mean'] > 0 && last['rtpo/ratio_mean'] <= 1);
  assert.ok(last['rtpo/truncated'] >= 0 && last['rtpo/truncated'] <= 1);
});
