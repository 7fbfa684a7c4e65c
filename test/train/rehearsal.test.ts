// World-model rehearsal (src/train/rehearsal.ts): the geometry against the env's own table; the learned
// model converges to the true P within a derived high-probability bound; the pooled prior carries the ice
// from one map to a map never stepped on; the flag's grammar and the refused configs; a training run's
// imagined episodes, their counts and units; a run stopped and resumed is the uninterrupted run.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { FrozenLakeEnv, FrozenLakeWorld, transitionTable } from '../../src/envs/frozenlake/index.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import {
  dest,
  directionOf,
  type NextDist,
  parseRehearsalFlag,
  seenMap,
  trueNext,
  tv,
  WorldModel,
} from '../../src/train/rehearsal.ts';
import { assertKillResumes, assertSameRun } from '../cli/train-run.ts';

const DEFAULT = { ratio: 1, alpha: 4, prior: 'pooled' as const };

test('dest is the env’s own deterministic move on every cell of a 3x5 map; directionOf inverts it except where clamped moves coincide', () => {
  const desc = ['SFFFF', 'FFFFF', 'FFFFG'];
  const P = transitionTable({ desc, slippery: false, successRate: 1 / 3 });
  let ambiguous = 0;
  for (let s = 0; s < 15; s++) {
    if (s === 14) continue; // G: terminal, every action stays
    for (let a = 0; a < 4; a++) {
      assert.equal(dest(s, a, 3, 5), P[s][a][0][1], `s ${s} a ${a}`);
      const back = directionOf(s, dest(s, a, 3, 5), 3, 5);
      const same = [0, 1, 2, 3].filter((d) => dest(s, d, 3, 5) === dest(s, a, 3, 5)).length;
      if (same > 1) {
        assert.equal(back, -1);
        ambiguous++;
      } else assert.equal(back, a);
    }
  }
  // Only the four corners stay put under two directions each (8 (cell, action) pairs, G's excluded: 6).
  assert.equal(ambiguous, 6);
});

test('tv: 0 between equal distributions, 1 between disjoint ones, ½ Σ|p − q| else', () => {
  const p: NextDist = { cells: [1, 2], probs: [0.5, 0.5] };
  assert.equal(tv(p, p), 0);
  assert.equal(tv(p, { cells: [3], probs: [1] }), 1);
  assert.ok(Math.abs(tv(p, { cells: [2, 3], probs: [0.25, 0.75] }) - 0.75) < 1e-12);
});

/** n real steps of every non-terminal (cell, action) of a world, counted into the model under `key`. */
function countSteps(model: WorldModel, world: FrozenLakeWorld, key: string, n: number, seed: number): void {
  const env = new FrozenLakeEnv(world);
  env.reset(seed);
  const map = seenMap(env, 0)!;
  for (let s = 0; s < world.nS; s++) {
    if (world.kind[s] !== 0) continue;
    for (let a = 0; a < 4; a++)
      for (let i = 0; i < n; i++) {
        env.restore({ s, rng: [0, 0, 0, 0] }, seed * 1_000_003 + (s * 4 + a) * 100_003 + i);
        model.count(key, map, s, a, env.step(a).observation);
      }
  }
}

/** max and mean TV(P̂, P) over the non-terminal (cell, action) of a world. */
function modelError(model: WorldModel, world: FrozenLakeWorld, key: string): { max: number; mean: number } {
  const map = seenMap(new FrozenLakeEnv(world), 0)!;
  let max = 0;
  let sum = 0;
  let n = 0;
  for (let s = 0; s < world.nS; s++) {
    if (world.kind[s] !== 0) continue;
    for (let a = 0; a < 4; a++) {
      const d = tv(model.next(key, map, s, a), trueNext(world.model, s, a));
      max = Math.max(max, d);
      sum += d;
      n++;
    }
  }
  return { max, mean: sum / n };
}

test('the learned model converges to the true P on the 4x4 slippery map within the derived bound', () => {
  // Bound. P̂ = (n·p̂ + α·q)/(n + α), so TV(P̂, P) ≤ TV(p̂, P) + α/(n + α). For k outcomes, Weissman et
  // al. (2003): Pr(‖p̂ − p‖₁ ≥ ε) ≤ (2^k − 2)·exp(−nε²/2); k = 3 cells at most (slippery), and a union
  // over the M = 44 non-terminal (cell, action) pairs with total failure probability δ = 1e-9 gives
  // TV ≤ ε/2 + α/(n + α) for all pairs with ε = √(2·ln((2^k − 2)·M/δ)/n). At n = 4000: 0.0584.
  const world = new FrozenLakeWorld({
    desc: ['SFFF', 'FHFH', 'FFFH', 'HFFG'],
    slippery: true,
    successRate: 1 / 3,
  });
  const M = 44;
  const bound = (n: number) => Math.sqrt((2 * Math.log((2 ** 3 - 2) * (M / 1e-9))) / n) / 2 + 4 / (n + 4);
  let previous = Number.POSITIVE_INFINITY;
  for (const n of [40, 400, 4000]) {
    const model = new WorldModel(DEFAULT, true);
    countSteps(model, world, 'm', n, 7);
    const err = modelError(model, world, 'm');
    assert.ok(err.max <= bound(n), `n ${n}: max TV ${err.max} > bound ${bound(n)}`);
    assert.ok(err.mean < previous, `n ${n}: mean TV ${err.mean} did not fall below ${previous}`);
    previous = err.mean;
  }
  assert.ok(bound(4000) < 0.06);
  assert.ok(previous < 0.02, `mean TV at n = 4000: ${previous}`);
});

test('the pooled prior carries the ice to a map never stepped on; the uniform prior does not', () => {
  // Counts on the 4x4 map only; the error is measured on a random 5x5 map with no count of its own, where
  // P̂ = q put through the map's geometry (merging directions into cells never increases TV). q(d | a) is
  // the Laplace-smoothed direction frequency over the N = 9 non-corner non-terminal cells × 2000 = 18000
  // steps per action: by Weissman's bound with k = 4 directions, union over the 4 actions, δ = 1e-9,
  // TV(q, truth) ≤ √(2·ln(14·4/δ)/N)/2 + 4/(N + 4) = 0.0264.
  const a = new FrozenLakeWorld({
    desc: ['SFFF', 'FHFH', 'FFFH', 'HFFG'],
    slippery: true,
    successRate: 1 / 3,
  });
  const [task] = makeTasks(envConfig('frozenlake', { random: true, size: 5, slippery: true }), 1, 3);
  const b = envs.make(task) as FrozenLakeEnv;
  for (const prior of ['pooled', 'uniform'] as const) {
    const model = new WorldModel({ ...DEFAULT, prior }, false);
    countSteps(model, a, 'a', 2000, 1);
    const err = modelError(model, b.world, 'b');
    const bound = Math.sqrt((2 * Math.log(14 * (4 / 1e-9))) / 18000) / 2 + 4 / 18004;
    if (prior === 'pooled') assert.ok(err.max <= bound, `pooled: max TV ${err.max} > ${bound}`);
    // Uniform: ¼ on the direction the ice never takes, so at least ¼ off wherever that cell is distinct.
    else assert.ok(err.mean > 0.2, `uniform: mean TV ${err.mean}`);
  }
});

test('--rehearsal grammar: ratio=R[,alpha=A][,prior=P]; anything else refused in one line naming the flag', () => {
  assert.deepEqual(parseRehearsalFlag('ratio=1'), DEFAULT);
  assert.deepEqual(parseRehearsalFlag('ratio=0.5,alpha=0,prior=uniform'), {
    ratio: 0.5,
    alpha: 0,
    prior: 'uniform',
  });
  for (const bad of [
    '',
    '1',
    'ratio=0',
    'ratio=17',
    'ratio=-1',
    'ratio=1,ratio=2',
    'ratio=1,alpha=1e9',
    'ratio=1,prior=x',
    'ratio=1,beta=2',
    'ratio=NaN',
    'ratio=0x1',
  ]) {
    assert.throws(
      () => parseRehearsalFlag(bad),
      (e: unknown) => e instanceof InputError && /--rehearsal: got ".*"; expected ratio=R/.test(e.message),
      bad,
    );
  }
});

test('rehearsal is refused under fog, with ES or RTPO, with shaping or info-gain, and on other envs', () => {
  const env = { env: 'frozenlake', params: { map: '4x4', slippery: true } };
  const rehearsal = DEFAULT;
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ env: { env: 'frozenlake', params: { random: true, size: 4, fog: 1 } } }, /without fog/],
    [{ env, algo: 'es' }, /algo es/],
    [{ env, algo: 'rtpo' }, /algo rtpo recomputes the whole batch's credit/],
    [{ env, shaping: { kind: 'progress', coef: 0.1 } }, /cannot go with shaping/],
    [{ env: { env: 'tools', params: {} } }, /needs env frozenlake/],
  ];
  for (const [c, why] of cases)
    assert.throws(
      () => parseTrainConfig({ ...c, rehearsal }),
      (e: unknown) => e instanceof InputError && /rehearsal/.test(e.message) && why.test(e.message),
      JSON.stringify(c),
    );
});

test('a rehearsal run: round(R·K) imagined episodes per task, real and imagined units in the update, the model’s error falling', async () => {
  const run = (rehearsal?: typeof DEFAULT) =>
    trainPolicyGradient({
      config: parseTrainConfig({
        env: { env: 'frozenlake', params: { map: '4x4', slippery: true } },
        iters: 6,
        groups: 4,
        groupSize: 4,
        eval: { episodes: 20 },
        seed: 3,
        ...(rehearsal === undefined ? {} : { rehearsal }),
      }),
      envs,
    });
  const r = await run({ ...DEFAULT, ratio: 1.5 });
  for (const m of r.metrics) {
    const v = m.values;
    // 4 tasks × round(1.5 × 4) = 24 imagined episodes; the batch itself stays 16 real ones.
    assert.equal(v['rehearsal/imagined_episodes'], 24);
    assert.equal(v['rollout/episodes'], 16);
    assert.equal(v['rehearsal/real_steps'], v['rollout/turns'] * 16);
    // Every turn of both enters the loss (no forced turns here).
    assert.equal(v['train/turns'], v['rehearsal/real_steps'] + v['rehearsal/imagined_steps']);
    assert.ok(v['train/model_tv'] >= 0 && v['train/model_tv'] <= 1);
  }
  // A fixed map's counts accumulate: the model's error over its visited pairs falls from the first to the last iteration.
  assert.ok(r.metrics[5].values['train/model_tv'] < r.metrics[0].values['train/model_tv']);
  const plain = await run();
  assert.equal(plain.metrics[0].values['rehearsal/imagined_episodes'], undefined);
  // The first iteration's real batch is the same with or without rehearsal (rehearsal draws on its own stream).
  assert.equal(plain.metrics[0].values['rollout/turns'], r.metrics[0].values['rollout/turns']);
});

test('a rehearsal run stopped after iteration 3 and resumed from its checkpoint is the uninterrupted run, byte for byte', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-rehearsal-'));
  for (const params of [
    { map: '4x4', slippery: true },
    { random: true, size: 4, slippery: true },
  ]) {
    const config = parseTrainConfig({
      env: { env: 'frozenlake', params },
      iters: 6,
      groups: 4,
      groupSize: 4,
      checkpointEvery: 2,
      eval: { episodes: 20 },
      seed: 5,
      rehearsal: DEFAULT,
    });
    const whole = join(dir, `whole-${params.map ?? 'random'}`);
    const cut = join(dir, `cut-${params.map ?? 'random'}`);
    const a = await trainPolicyGradient({ config, envs, out: whole });
    await trainPolicyGradient({ config, envs, out: cut, stopAfter: 4 });
    const b = await trainPolicyGradient({ config, envs, out: cut, resume: true });
    assert.deepEqual(b.resumed?.iterations, 4);
    // The same stored rows (6 iterations × 16 real episodes), metrics.jsonl and policy bytes.
    assertSameRun(cut, whole, 6 * 16);
    assert.deepEqual(b.final, a.final);
  }
});

test('kill -9 mid-run of `train --rehearsal`, --resume: the same rows, metrics and policy as the uninterrupted run', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-rehearsal-kill-'));
  const args = [
    'train',
    '--map',
    '4x4',
    '--slippery',
    '--policy',
    'tabular',
    '--iters',
    '40',
    '--groups',
    '8',
  ];
  const flags = [
    ...args,
    '--seed',
    '4',
    '--checkpoint-every',
    '5',
    '--eval-episodes',
    '100',
    '--rehearsal',
    'ratio=1',
  ];
  await assertKillResumes(flags, dir, 40, 12, 40 * 64);
});
