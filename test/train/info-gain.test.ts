// The information-gain reward as training sees it (src/train/info-gain.ts): the learner's copy of a
// hand-made fog trajectory gets r + W·g with g the binary entropy h(0.2) written out (the one hidden
// cell of SFF/FFG revealed by the first step) and 0 on the revisit, the stored batch untouched; refused
// configs; a short training run reports train/info_gain while its success stays on the true reward.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import type { Trajectory, Turn } from '../../src/core/types.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { InfoGain } from '../../src/train/info-gain.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';

const h2 = (q: number) => -q * Math.log2(q) - (1 - q) * Math.log2(1 - q);
const cfg = envConfig('frozenlake', { map: 'SFF,FFG', fog: 1 });
const [task] = makeTasks(cfg, 1, 0);

test('the learner’s copy gets r + W·g: h(0.2) bits for the reveal, 0 for the revisit; the batch is untouched', () => {
  // Cells 0 1 2 / 3 4 5; observation = cell + 6·seen (bit i: cell i). From S the window is {0,1,3,4};
  // Right to 1 adds {2,5}; Left back to 0 adds nothing; Down to 3, Right to 4, Right to G.
  const seen0 = 0b011011;
  const seen1 = 0b111111;
  const obs = [0 + 6 * seen0, 1 + 6 * seen1, 0 + 6 * seen1, 3 + 6 * seen1, 4 + 6 * seen1, 5 + 6 * seen1];
  const turns: Turn[] = obs.slice(1).map((next, t) => ({
    t,
    observation: obs[t],
    action: 0,
    reward: t === obs.length - 2 ? 1 : 0,
    logp: Math.log(0.25),
    info: { cell: next },
  }));
  const traj: Trajectory = {
    id: 'hand',
    task,
    policy: 'hand',
    budget: 10,
    revealBudget: false,
    turns,
    outcome: { success: true, return: 1, turns: 5, firstSuccessTurn: 5, end: 'terminated', failure: null },
  };
  const before = JSON.stringify(traj);
  const env = makeEnv(task);
  const { learnt, bits } = new InfoGain(0.5).apply([traj], () => env);
  assert.equal(JSON.stringify(traj), before);
  const expected = [0.5 * h2(0.2), 0, 0, 0, 1];
  learnt[0].turns.forEach((t, i) => {
    assert.ok(Math.abs(t.reward - expected[i]) < 1e-12, `turn ${i}: ${t.reward}`);
  });
  assert.ok(Math.abs(learnt[0].outcome.return - (1 + 0.5 * h2(0.2))) < 1e-12);
  assert.ok(Math.abs(bits - h2(0.2)) < 1e-12);
});

test('--info-gain is refused without fog, with shaping, and outside (0, 1]', () => {
  const base = { env: { env: 'frozenlake', params: { map: '4x4' } }, iters: 1 };
  assert.throws(
    () => parseTrainConfig({ ...base, infoGain: 0.1 }),
    (e) => e instanceof InputError && /--fog/.test(e.message),
  );
  const fogged = { ...base, env: cfg };
  assert.throws(
    () => parseTrainConfig({ ...fogged, infoGain: 0.1, shaping: { kind: 'novelty', coef: 0.1 } }),
    InputError,
  );
  assert.throws(() => parseTrainConfig({ ...fogged, infoGain: 2 }), InputError);
  assert.throws(() => parseTrainConfig({ ...fogged, infoGain: 0 }), InputError);
});

test('a run with --info-gain reports train/info_gain; its success is the true reward’s', async () => {
  const run = (infoGain?: number) =>
    trainPolicyGradient({
      config: parseTrainConfig({
        env: envConfig('frozenlake', { map: 'SFFF,FFFF,FFFG', fog: 1 }),
        iters: 3,
        groups: 4,
        budget: { kind: 'fixed', budget: 8 },
        eval: { episodes: 16 },
        seed: 3,
        ...(infoGain === undefined ? {} : { infoGain }),
      }),
      envs,
    });
  const gained = await run(0.2);
  const plain = await run();
  for (const m of gained.metrics) {
    assert.ok(m.values['train/info_gain'] > 0);
    assert.ok(m.values['train/shaped_return'] > m.values['rollout/success'] - 1e-12);
  }
  assert.equal(plain.metrics[0].values['train/info_gain'], undefined);
  // The first iteration's rollouts come from the same initial policy and seed: the same true success.
  assert.equal(gained.metrics[0].values['rollout/success'], plain.metrics[0].values['rollout/success']);
});
