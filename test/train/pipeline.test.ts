// The asynchronous pipeline (train/pipeline.ts): batch k is sampled by the weights after update k − 2 —
// exactly one update behind the weights update k starts from — its turns carry the log-probs recorded
// at sampling, and the update's ratios are taken against those; a killed async run resumes to the bytes
// of an unkilled one; combinations that cannot work are refused.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Trajectory } from '../../src/core/types.ts';
import { envs, makeEnv } from '../../src/envs/index.ts';
import { rollout } from '../../src/rollout/batch.ts';
import type { RolloutQueue } from '../../src/rollout/queue.ts';
import { parseTrainConfig, type TrainConfigInput } from '../../src/train/config.ts';
import type { Learner } from '../../src/train/learner.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { setup } from '../../src/train/setup.ts';
import { turnwise } from '../cli/run.ts';
import { assertKillResumes } from '../cli/train-run.ts';

const slippery4 = { env: 'frozenlake', params: { map: '4x4', slippery: true } };
// One optimizer step per iteration (1 epoch × 1 minibatch), so the step's clipfrac and approx_kl are
// those of the weights the update starts from against the batch's behaviour log-probs; lr 2 moves the
// table far enough in one step for the ratios to leave the clip range.
const base: TrainConfigInput = {
  env: slippery4,
  policy: { kind: 'tabular' },
  iters: 5,
  groups: 6,
  groupSize: 4,
  budget: { kind: 'fixed', budget: 30 },
  optim: { lr: 2 },
  ppo: { epochs: 1, minibatches: 1 },
  eval: { episodes: 50 },
  seed: 3,
};

/** A queue that plays every batch in process and keeps it, in the order the batches were asked for. */
function recording(): { queue: RolloutQueue; batches: Map<number, Trajectory[]> } {
  const batches = new Map<number, Trajectory[]>();
  const queue: RolloutQueue = {
    where: 'in-process (recorded)',
    runner: (remote) => async (opts) => {
      const batch = rollout(opts) as Trajectory[];
      assert.ok(!batches.has(remote.version!), `batch ${remote.version} asked twice`);
      batches.set(remote.version!, batch);
      return batch;
    },
    close: async () => {},
  };
  return { queue, batches };
}

/** The learner after `updates` updates of the run (a run stopped after iteration updates − 1). */
async function weightsAfter(config: TrainConfigInput, updates: number): Promise<Learner> {
  const c = parseTrainConfig(config);
  if (updates === 0) return setup(c, envs).learner;
  return (await trainPolicyGradient({ config: c, envs, stopAfter: updates - 1 })).learner;
}

/** log π(a_t | s_t) under `learner` for every turn of the batch, and the turns' recorded log-probs. */
function logProbs(learner: Learner, batch: readonly Trajectory[]) {
  const units = learner.units(batch, makeEnv);
  return { now: Array.from(learner.logProbs(units)), recorded: units.map((u) => u.logpOld) };
}

const close = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((x, i) => Math.abs(x - b[i]) < 1e-9);

test('async: batch k is sampled by the weights after update k − 2 (staleness exactly one), sync by those after k − 1', async () => {
  for (const asyncPipeline of [true, false]) {
    const config = { ...base, asyncPipeline };
    const { queue, batches } = recording();
    const run = await trainPolicyGradient({ config: parseTrainConfig(config), envs, queue });
    assert.deepEqual([...batches.keys()], [0, 1, 2, 3, 4]);
    const staleness = run.metrics.map((m) => m.values['pipeline/staleness']);
    assert.deepEqual(
      staleness,
      asyncPipeline ? [0, 1, 1, 1, 1] : [undefined, undefined, undefined, undefined, undefined],
    );
    for (let k = 0; k < 5; k++) {
      const behaviour = asyncPipeline ? Math.max(0, k - 1) : k;
      const batch = batches.get(k)!;
      const at = logProbs(await weightsAfter(config, behaviour), batch);
      assert.ok(close(at.now, at.recorded), `batch ${k}: recorded log-probs are those of θ${behaviour}`);
      if (behaviour !== k) {
        // The weights update k starts from give other log-probs: the batch is one update stale.
        const current = logProbs(await weightsAfter(config, k), batch);
        assert.ok(!close(current.now, current.recorded), `batch ${k} differs under θ${k}`);
      }
    }
  }
});

test("async: the update's ratios are π_θk / π_recorded (clipfrac and approx_kl by brute force), not π_θk / π_θk", async () => {
  const config = { ...base, asyncPipeline: true };
  const { queue, batches } = recording();
  const run = await trainPolicyGradient({ config: parseTrainConfig(config), envs, queue });
  const c = parseTrainConfig(config);
  for (let k = 1; k < 5; k++) {
    const { now, recorded } = logProbs(await weightsAfter(config, k), batches.get(k)!);
    const ratio = now.map((lp, i) => Math.exp(lp - recorded[i]));
    const clipped = ratio.filter((p) => p < 1 - c.ppo.clipLow || p > 1 + c.ppo.clipHigh).length;
    const approxKl = ratio.reduce((s, p, i) => s + p - 1 - (now[i] - recorded[i]), 0) / ratio.length;
    const m = run.metrics[k].values;
    assert.equal(m['train/turns'], ratio.length);
    assert.ok(Math.abs(m['train/clipfrac'] - clipped / ratio.length) < 1e-12, `iteration ${k} clipfrac`);
    assert.ok(Math.abs(m['train/approx_kl'] - approxKl) < 1e-9, `iteration ${k} approx_kl`);
    // The case is built so that the recorded log-probs matter: against the current policy's own the
    // ratios would all be 1 — clipfrac 0, approx_kl 0. Update 0 learns from batch 0's one live group
    // and Adam's momentum carries update 1 on; later batches of this seed are all failures, and their
    // updates (zero advantages, momentum decaying) move the table less and less.
    if (k <= 2)
      assert.ok(clipped > 0 && approxKl > 1e-2, `iteration ${k}: ${clipped} clipped, approx_kl ${approxKl}`);
  }
  // Iteration 0 is on-policy: θ0 sampled batch 0 and update 0 starts from θ0.
  assert.equal(run.metrics[0].values['train/clipfrac'], 0);
  assert.ok(Math.abs(run.metrics[0].values['train/approx_kl']) < 1e-12);
});

test('async: the same seed gives the same run; async and sync runs differ from iteration 1 on', async () => {
  const a = await trainPolicyGradient({ config: parseTrainConfig({ ...base, asyncPipeline: true }), envs });
  const b = await trainPolicyGradient({ config: parseTrainConfig({ ...base, asyncPipeline: true }), envs });
  const sync = await trainPolicyGradient({ config: parseTrainConfig(base), envs });
  assert.deepEqual(a.metrics, b.metrics);
  assert.deepEqual(a.final, b.final);
  const strip = (v: Record<string, number>) => {
    const { 'pipeline/staleness': _, ...rest } = v;
    return rest;
  };
  // Batch 0 and 1 both come from θ0 in the async run; batch 1 of the sync run from θ1.
  assert.deepEqual(strip(a.metrics[0].values), sync.metrics[0].values);
  assert.notDeepEqual(strip(a.metrics[1].values), sync.metrics[1].values);
});

test('kill -9 an async run mid-run, --resume: the same rows, metrics and policy as the unkilled async run', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-pipeline-'));
  const args = (
    'train --map 4x4 --slippery --policy tabular --iters 80 --groups 8 --seed 5 --checkpoint-every 7 ' +
    '--eval-episodes 200 --async-pipeline'
  ).split(' ');
  await assertKillResumes(args, dir, 80, 23, 80 * 64);
});

test('--async-pipeline is refused, one line and exit 2, with ES, RTPO, guidance and cross-policy sampling', async () => {
  const cases: [string[], string][] = [
    [['--algo', 'es'], 'algo es has none'],
    [['--algo', 'rtpo'], 'algo rtpo runs its backward stages in one go'],
    [['--guidance', 'bread'], 'cannot go with guidance.mode bread'],
    [['--cross-policy', '0.3'], 'cannot go with crossPolicy.q > 0'],
  ];
  for (const [extra, why] of cases) {
    const r = await turnwise(['train', '--map', '4x4', '--iters', '2', '--async-pipeline', ...extra]);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, '');
    const line = r.stderr.trim();
    assert.ok(!line.includes('\n'), line);
    assert.ok(line.startsWith('turnwise: config.asyncPipeline: got true; '), line);
    assert.ok(line.includes(why), line);
  }
});
