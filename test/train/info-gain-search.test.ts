// `train --info-gain W` on search (src/train/info-gain.ts): the gain of a turn is the share of the clue
// chain it newly acquired — hand-made values, a whole chain worth exactly 1, the true batch untouched;
// the config accepts search; a short run reports train/info_gain and keeps the true reward's success.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StepInfo, Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeEnv } from '../../src/envs/index.ts';
import { rollout } from '../../src/rollout/batch.ts';
import type { RolloutQueue } from '../../src/rollout/queue.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { clueGains, InfoGain } from '../../src/train/info-gain.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { traj } from '../credit/fixtures.ts';

const info = (tool: string, clues: string[], extra: StepInfo = {}): StepInfo => ({
  tool,
  clues,
  cluesNeeded: 4,
  ...extra,
});

test('the gain is the share of the chain newly acquired: hand-made values, a whole chain is 1', () => {
  const t = traj([
    { info: info('search', ['locate:a']) },
    { info: info('search', []) },
    { info: info('open', ['fact:a.r']) },
    { info: info('search', ['locate:b', 'fact:b.s']) },
    { reward: 1, info: info('answer', [], { success: true }) },
  ]);
  t.task = { env: 'search', params: { level: 2, misuse: 3, mode: 'choose', slots: 6 }, seed: 0 };
  assert.deepEqual(clueGains(t), [0.25, 0, 0.25, 0.5, 0]);
  const before = JSON.stringify(t);
  const { learnt, bits } = new InfoGain(0.2).apply([t], () => undefined);
  assert.equal(JSON.stringify(t), before, 'the true batch is untouched');
  assert.deepEqual(
    learnt[0].turns.map((x) => x.reward),
    [0.05, 0, 0.05, 0.1, 1],
  );
  assert.ok(Math.abs(learnt[0].outcome.return - 1.2) < 1e-12);
  assert.equal(bits, 1);
});

/** A short MLP run on search (choose mode), with the info-gain weight when given. */
const searchConfig = (seed: number, infoGain?: number) =>
  parseTrainConfig({
    env: envConfig('search', { mode: 'choose' }),
    policy: { kind: 'mlp', hidden: [8] },
    iters: 2,
    groups: 4,
    budget: { kind: 'fixed', budget: 12 },
    eval: { episodes: 8 },
    seed,
    ...(infoGain === undefined ? {} : { infoGain }),
  });

test('a search run with --info-gain reports train/info_gain; its success is the true reward’s', async () => {
  const gained = await trainPolicyGradient({ config: searchConfig(3, 0.5), envs });
  const plain = await trainPolicyGradient({ config: searchConfig(3), envs });
  for (const m of gained.metrics) {
    const g = m.values['train/info_gain'];
    assert.ok(g > 0 && g <= 1, `share of the chain per trajectory: ${g}`);
  }
  assert.equal(plain.metrics[0].values['train/info_gain'], undefined);
  assert.equal(gained.metrics[0].values['rollout/success'], plain.metrics[0].values['rollout/success']);
});

test('through a rollout queue (trajectories as JSON, as workers send them) a search run with --info-gain is the same run', async () => {
  const config = searchConfig(5, 0.5);
  let batches = 0;
  const queue: RolloutQueue = {
    where: 'in-process (over JSON)',
    runner: () => async (opts) => {
      batches++;
      return JSON.parse(JSON.stringify(await rollout(opts))) as Trajectory[];
    },
    close: async () => {},
  };
  const queued = await trainPolicyGradient({ config, envs, queue });
  const direct = await trainPolicyGradient({ config, envs });
  assert.equal(batches, 2);
  assert.ok(queued.metrics.every((m) => m.values['train/info_gain'] > 0));
  assert.deepEqual(
    queued.metrics.map((m) => m.values),
    direct.metrics.map((m) => m.values),
  );
  const spec = makeEnv({ ...envConfig('search', { mode: 'choose' }), seed: 0 }).spec;
  assert.deepEqual(queued.learner.checkpoint(spec), direct.learner.checkpoint(spec));
});
