// FrozenLake under fog (src/envs/frozenlake/fog.ts): fog 0 is today's env byte for byte; the dynamics
// under fog are the plain env's, step for step; the observation (cell, revealed cells), its text and
// feature views against boards written out by hand from the Chebyshev window's definition.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { checkEnv } from '../../src/envs/check.ts';
import {
  FogFrozenLakeEnv,
  FrozenLakeEnv,
  FrozenLakeWorld,
  parseMap,
} from '../../src/envs/frozenlake/index.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';

test('fog 0 (or absent) is today’s env: the same params and the same rollout, byte for byte', async () => {
  const plain = envConfig('frozenlake', { map: '4x4', slippery: true });
  const zero = envConfig('frozenlake', { map: '4x4', slippery: true, fog: 0 });
  assert.deepEqual(zero, plain);
  const run = async (cfg: typeof plain) => {
    const tasks = makeTasks(cfg, 3, 7);
    const spec = makeEnv(tasks[0]).spec;
    const trajectories = await rollout({
      tasks,
      samples: 4,
      policy: makePolicy('random', spec, 'policy'),
      makeEnv,
      budget: 30,
      runSeed: 5,
    });
    return JSON.stringify(trajectories);
  };
  assert.equal(await run(zero), await run(plain));
  // The same rollouts as the code before fog existed (main at 1ac9ad8, the same script): their sha256.
  const sha = (s: string) => createHash('sha256').update(s).digest('hex');
  assert.equal(sha(await run(zero)), '860a11f6b6eeb6d942a1623f4b1f3d1fbb971ff149210d58e3dd1c447601001e');
  const random = envConfig('frozenlake', { random: true, size: 5, slippery: true, fog: 0 });
  assert.equal(sha(await run(random)), '1a5791d8cba22ff517b1d97fd79d69ca8f1a9f29730ec6bede6106aa013df893');
});

test('under fog the dynamics are the plain env’s: the same cells, rewards and ends from the same seed', () => {
  const world = new FrozenLakeWorld({
    desc: parseMap('8x8')
      .slice(0, 4)
      .map((r) => r.slice(0, 4))
      .map((r, i) => (i === 3 ? 'FFFG' : r)),
    slippery: true,
    successRate: 1 / 3,
  });
  const plain = new FrozenLakeEnv(world);
  const fog = new FogFrozenLakeEnv(world, 1);
  for (let seed = 0; seed < 20; seed++) {
    let a = plain.reset(seed);
    let b = fog.reset(seed);
    assert.equal(b % world.nS, a);
    for (let t = 0; t < 40; t++) {
      const action = (seed * 7 + t * 3) % 4;
      const ra = plain.step(action);
      const rb = fog.step(action);
      assert.equal(rb.observation % world.nS, ra.observation);
      assert.deepEqual([rb.reward, rb.terminated, rb.info], [ra.reward, ra.terminated, ra.info]);
      a = ra.observation;
      b = rb.observation;
      if (ra.terminated) break;
    }
  }
});

test('the revealed map: Chebyshev window of radius R, kept once seen, in the text and feature views', () => {
  // SFFF / FHFH / FFFH / HFFG, radius 1 from S (0,0): rows 0–1, columns 0–1 seen; G is always shown.
  const world = new FrozenLakeWorld({ desc: parseMap('4x4'), slippery: false, successRate: 1 / 3 });
  const env = new FogFrozenLakeEnv(world, 1);
  const o0 = env.reset(0);
  assert.equal(
    env.text(o0),
    ['PF??', 'FH??', '????', '???G'].join('\n').replaceAll('F', '_').replaceAll('H', 'O'),
  );
  // Right to (0,1): column 2 of rows 0–1 revealed; Right to (0,2): column 3 too; Left back: nothing new.
  env.step(2);
  const o2 = env.step(2).observation;
  assert.equal(env.text(o2), ['__P_', '_O_O', '????', '???G'].join('\n'));
  const o3 = env.step(0).observation;
  assert.equal(Math.floor(o3 / 16), Math.floor(o2 / 16));
  assert.equal(env.text(o3), ['_P__', '_O_O', '????', '???G'].join('\n'));
  assert.equal(env.stateKey(o3), o3);
  // Features: [seen holes | goal | position | unseen], 4·16.
  const f = env.features(o3);
  assert.equal(f.length, 64);
  const block = (k: number) => [...f.subarray(16 * k, 16 * (k + 1))].flatMap((x, i) => (x === 1 ? [i] : []));
  assert.deepEqual(block(0), [5, 7]); // the holes seen: (1,1), (1,3); 11 and 12 unseen
  assert.deepEqual(block(1), [15]);
  assert.deepEqual(block(2), [1]);
  assert.deepEqual(block(3), [8, 9, 10, 11, 12, 13, 14]);
  // Radius 2 from S sees rows 0–2, columns 0–2.
  const wide = new FogFrozenLakeEnv(world, 2);
  assert.equal(wide.text(wide.reset(0)), ['P__?', '_O_?', '___?', '???G'].join('\n'));
  // The spec: no oracle, (cell, revealed) observations, 4·nS features.
  assert.deepEqual([env.spec.oracle, env.spec.observations, env.spec.features], [false, 16 * 2 ** 16, 64]);
});

test('fog through the registry: snapshots, the env contract, and refused maps', async () => {
  const cfg = envConfig('frozenlake', { random: true, size: 4, fog: 1, slippery: true });
  assert.deepEqual(cfg.params, { random: true, size: 4, p: 0.8, slippery: true, fog: 1 });
  const tasks = makeTasks(cfg, 3, 0);
  for (const task of tasks) assert.deepEqual(await checkEnv(() => makeEnv(task)), [], JSON.stringify(task));
  assert.throws(
    () => envConfig('frozenlake', { map: '8x8', fog: 1 }),
    (e) => e instanceof InputError && /at most 30 cells/.test(e.message),
  );
  assert.throws(() => envConfig('frozenlake', { map: '4x4', fog: -1 }), InputError);
});
