// Grouping a batch by task, dead-group counts, DAPO's dynamic sampling, per-task normalisation and the
// method registry (specs, flags, batch order).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import {
  applyFlags,
  canonicalJson,
  creditBatch,
  deadGroupMetrics,
  deadGroups,
  dynamicSampling,
  groupByTask,
  grpo,
  METHOD_NAMES,
  methodOptions,
  parseMethodSpec,
  splitMethodList,
  taskNorm,
} from '../../src/credit/index.ts';
import { close, traj } from './fixtures.ts';

test('groups: JSON-equal tasks group together whatever the key order; order of first appearance', () => {
  const a = traj([1], { seed: 1 });
  const b = traj([0], { seed: 2 });
  const c = traj([0, 0], { seed: 1 });
  c.task = { seed: 1, params: { slippery: true, map: '4x4' }, env: 'frozenlake' };
  assert.equal(canonicalJson(a.task), canonicalJson(c.task));
  assert.deepEqual(
    groupByTask([a, b, c]).map((g) => g.indices),
    [[0, 2], [1]],
  );
});

test('creditBatch: per-group estimates put back in batch order for interleaved tasks', () => {
  const batch = [
    traj([1], { seed: 1 }),
    traj([0, 0], { seed: 2 }),
    traj([0], { seed: 1 }),
    traj([1, 0], { seed: 2 }),
    traj([0, 1], { seed: 2 }),
  ];
  // Task 1: R = [1, 0] → ±1; task 2: R = [0, 1, 1] → −√2, 1/√2, 1/√2 (ε = 0).
  const r = Math.SQRT1_2;
  close(creditBatch(batch, 'grpo', { eps: 0 }), [[1], [-2 * r, -2 * r], [-1], [r, r], [r, r]], 1e-12);
  assert.notDeepEqual(creditBatch(batch, 'grpo', {}), grpo(batch));
});

test('dead groups: counts per batch, all-fail vs all-succeed, a group of one is dead', () => {
  const batch = [
    traj([1], { seed: 1 }),
    traj([0], { seed: 1 }),
    traj([0], { seed: 2 }),
    traj([0, 0], { seed: 2 }),
    traj([1], { seed: 3 }),
    traj([0, 1], { seed: 3 }),
    traj([0], { seed: 4 }),
  ];
  const report = deadGroups(batch);
  assert.deepEqual(report.counts, { groups: 4, live: 1, dead: 3, allFail: 2, allSucceed: 1 });
  assert.deepEqual(report.dead, [false, true, true, true]);
  assert.equal(deadGroupMetrics(report.counts)['credit/dead_groups'], 3);
  assert.equal(deadGroupMetrics(report.counts)['credit/live_share'], 0.25);
  const ds = dynamicSampling(batch);
  assert.deepEqual(ds.keptIndices, [0, 1]);
  assert.equal(ds.refills, 3);
  assert.equal(dynamicSampling(batch, { targetGroups: 2 }).refills, 1);
  assert.equal(dynamicSampling(batch, { targetGroups: 1 }).refills, 0);
});

test('task-norm: per env (default) or per task; constant tasks give 0', () => {
  const x1 = traj([0, 0], { seed: 1 });
  const x2 = traj([0], { seed: 2 });
  const y1 = traj([0], { params: { map: '8x8' } });
  const y2 = traj([0], { params: { map: '8x8' }, seed: 5 });
  const adv = [[1, 2], [3], [5], [5]];
  const s = Math.sqrt(2 / 3);
  close(taskNorm([x1, x2, y1, y2], adv, { eps: 0 }), [[-1 / s, 0], [1 / s], [0], [0]], 1e-12);
  // By identical task, x1 and x2 are separate tasks; x2 alone (one turn) gives 0.
  close(taskNorm([x1, x2, y1, y2], adv, { by: 'task', eps: 0 }), [[-1, 1], [0], [0], [0]], 1e-12);
  assert.deepEqual(adv, [[1, 2], [3], [5], [5]], 'the input is not modified');
  const post = creditBatch([x1, x2], 'discounted', { gamma: 1 }, { taskNorm: { eps: 0 } });
  close(post, [[0, 0], [0]]);
});

test('method specs: parameters, flags applied where read, refusals as InputError', () => {
  assert.deepEqual(METHOD_NAMES, [
    'outcome',
    'discounted',
    'gae',
    'grpo',
    'drgrpo',
    'rloo',
    'gigpo',
    'turn-level',
    'reverse-turn',
    'clue',
    'rtpo',
  ]);
  const spec = parseMethodSpec('gae:lambda=0,values=zero,task-norm=task');
  assert.deepEqual(spec, {
    label: 'gae:lambda=0,values=zero,task-norm=task',
    name: 'gae',
    params: { lambda: 0, values: 'zero', taskNorm: 'task' },
  });
  assert.deepEqual(splitMethodList('exact,gae:gamma=1,lambda=0,grpo'), [
    'exact',
    'gae:gamma=1,lambda=0',
    'grpo',
  ]);
  const specs = applyFlags([parseMethodSpec('grpo'), parseMethodSpec('gigpo:std=true')], {
    std: 'false',
    omega: '2',
  });
  assert.deepEqual(specs[0].params, { std: false });
  assert.deepEqual(specs[1].params, { std: true, omega: 2 }, 'a spec parameter wins over the flag');
  assert.deepEqual(methodOptions('gigpo', specs[1].params), { std: true, omega: 2 });
  assert.throws(() => parseMethodSpec('nope'), InputError);
  assert.throws(() => parseMethodSpec('grpo:omega=1'), /grpo takes eps, std, task-norm/);
  assert.throws(
    () => parseMethodSpec('gae:lambda=1.5'),
    /gae.lambda: got "1.5"; expected a number in \[0, 1\]/,
  );
  assert.throws(() => parseMethodSpec('grpo:std=yes'), /expected true or false/);
  assert.throws(
    () => applyFlags([parseMethodSpec('grpo')], { omega: '1' }),
    /--omega: got "1"; not a parameter of grpo/,
  );
});
