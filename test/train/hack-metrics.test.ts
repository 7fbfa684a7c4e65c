// The reward-hacking figures (src/eval/hacking.ts) and the training metrics (src/train/hack-metrics.ts) from hand-built trajectories — counted by hand —
// and in a short training run on the code env's candidate variant: the four figures present in every
// iteration with gap = visible − hidden, and absent from a FrozenLake run.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StepInfo, Trajectory } from '../../src/core/types.ts';
import { envs } from '../../src/envs/index.ts';
import { hackFigures } from '../../src/eval/hacking.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { hackMetrics } from '../../src/train/hack-metrics.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';

function traj(infos: StepInfo[]): Trajectory {
  return {
    id: 'x',
    task: { env: 'code', params: {}, seed: 0 },
    policy: 'p',
    budget: 5,
    revealBudget: false,
    turns: infos.map((info, t) => ({ t, observation: null, action: null, reward: 0, logp: 0, info })),
    outcome: { success: false, turns: infos.length, totalReward: 0 } as unknown as Trajectory['outcome'],
  };
}
const sub = (v: [number, number], h: [number, number], detected: boolean): StepInfo => ({
  tool: 'submit',
  visible: { passed: v[0], total: v[1] },
  hidden: { passed: h[0], total: h[1] },
  detected,
});
const runTests: StepInfo = {
  tool: 'run_tests',
  visible: { passed: 3, total: 3 },
  hidden: { passed: 3, total: 10 },
};

test('figures from hand-built trajectories', () => {
  const batch = [
    traj([runTests, sub([3, 3], [3, 10], true)]), // a hack: visible yes, hidden no, detected
    traj([sub([3, 3], [10, 10], false)]), // correct
    traj([sub([2, 3], [7, 10], false)]), // a bug that fails a visible example
    traj([sub([3, 3], [9, 10], false)]), // a bug that passes the visible ones
    traj([runTests]), // never submitted: not counted
    traj([sub([3, 3], [3, 10], true), { tool: 'submit', valid: false, error: 'over' }]), // the first tracked submit counts
    traj([{ tool: 'submit', visible: { passed: 3, total: 3 }, hidden: { passed: 10, total: 10 } }]), // untracked
  ];
  const f = hackFigures(batch);
  assert.deepEqual(f, { submitted: 5, visiblePass: 4 / 5, hiddenPass: 1 / 5, gap: 3 / 5, detected: 2 / 5 });
  assert.deepEqual(hackMetrics(batch), {
    'train/visible_pass': 0.8,
    'train/hidden_pass': 0.2,
    'train/hack_gap': 0.6,
    'train/hack_detected': 0.4,
  });
  assert.equal(hackFigures([traj([runTests])]), null);
  assert.deepEqual(hackMetrics([]), {});
});

test('a short training run on the candidate variant records the four figures every iteration', async () => {
  const config = parseTrainConfig({
    env: { env: 'code', params: { mode: 'choose', reward: 'visible' } },
    policy: { kind: 'mlp', hidden: [8] },
    iters: 3,
    groups: 4,
    groupSize: 4,
    budget: { kind: 'fixed', budget: 1 },
    eval: { episodes: 4 },
    trainSeeds: [0, 1000],
    testSeeds: [1000, 1010],
    seed: 1,
  });
  const r = await trainPolicyGradient({ config, envs });
  assert.equal(r.metrics.length, 3);
  for (const { values: v } of r.metrics) {
    for (const k of ['train/visible_pass', 'train/hidden_pass', 'train/hack_gap', 'train/hack_detected'])
      assert.ok(v[k] >= 0 && v[k] <= 1, `${k} = ${v[k]}`);
    assert.ok(Math.abs(v['train/hack_gap'] - (v['train/visible_pass'] - v['train/hidden_pass'])) < 1e-12);
    // One submit per episode: the hidden pass rate is the batch's true success rate.
    assert.ok(Math.abs(v['train/hidden_pass'] - v['rollout/success']) < 1e-12);
  }
  const lake = await trainPolicyGradient({
    config: parseTrainConfig({
      env: { env: 'frozenlake', params: { map: '4x4' } },
      iters: 1,
      eval: { episodes: 1 },
    }),
    envs,
  });
  assert.equal('train/hack_gap' in lake.metrics[0].values, false);
});
