// The credit of a file in bounded memory (credit/file.ts) against the batch in memory: the same groups,
// the same dead-group counts and the same advantages, bit for bit, with and without task normalisation —
// over a source that reads each trajectory back by place and counts how often it does.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Trajectory } from '../../src/core/types.ts';
import {
  CREDIT_CACHE,
  CreditIndex,
  creditBatch,
  creditRows,
  deadGroups,
  type IndexedTrajectories,
  METHOD_NAMES,
  METHODS,
  type MethodName,
  methodOptions,
  taskNorm,
} from '../../src/credit/index.ts';
import { traj } from './fixtures.ts';

/** A "file" in memory: place = index; reads and open readers are counted. */
class MemoryFile implements IndexedTrajectories {
  reads = 0;
  opened = 0;
  constructor(private readonly batch: readonly Trajectory[]) {}

  *scan() {
    for (let i = 0; i < this.batch.length; i++) yield [this.batch[i], i + 1, i * 100, 100] as const;
  }

  open() {
    this.opened++;
    return {
      read: (line: number, offset: number, bytes: number) => {
        assert.equal(offset, (line - 1) * 100);
        assert.equal(bytes, 100);
        this.reads++;
        return structuredClone(this.batch[line - 1]);
      },
      close: () => {
        this.opened--;
      },
    };
  }
}

// Two env configurations, groups interleaved, a dead all-fail group, a dead all-succeed group, a group of one.
const other = { map: '8x8', slippery: true };
const batch = [
  traj([0, 1], { seed: 1 }),
  traj([0, 0, 0], { seed: 2 }),
  traj([1], { seed: 3, params: other }),
  traj([0, 0], { seed: 1 }),
  traj([0], { seed: 2 }),
  traj([0, 0, 1], { seed: 1 }),
  traj([1], { seed: 3, params: other }),
  traj([0, 0.5, 0], { seed: 4, params: other }),
  traj([0, 0, 0, 0], { seed: 5, params: other }),
  traj([1, 0], { seed: 4, params: other }),
];

/** A method's default options (gae: V ≡ 0.25), and the method on one group with them. */
const methodOn = <M extends MethodName>(m: M) => {
  const options = methodOptions(m, {}, m === 'gae' ? () => 0.25 : undefined);
  const fn = METHODS[m].fn as (group: readonly Trajectory[], o: typeof options) => number[][];
  return { options, compute: (group: readonly Trajectory[]) => fn(group, options) };
};

test('pass 1: the groups, their dead-group counts and norm keys are what the batch in memory gives', () => {
  for (const by of [undefined, 'env', 'task'] as const) {
    const ix = new CreditIndex(new MemoryFile(batch), by);
    assert.equal(ix.n, batch.length);
    assert.deepEqual(ix.counts, deadGroups(batch).counts);
    assert.deepEqual(ix.counts, { groups: 5, live: 2, dead: 3, allFail: 2, allSucceed: 1 });
    assert.deepEqual(ix.size, [3, 2, 2, 2, 1]);
    assert.deepEqual(Array.from(ix.group.subarray(0, ix.n)), [0, 1, 2, 0, 1, 0, 2, 3, 4, 3]);
    assert.equal(ix.normKeys, by === 'task' ? 5 : 2);
  }
});

test('every method, with and without --task-norm: the rows are creditBatch’s, bit for bit', () => {
  // clue reads the search env's clue accounting, which these trajectories lack; it is a per-group
  // function like the others (test/credit/clue.test.ts).
  for (const m of METHOD_NAMES.filter((x) => x !== 'clue')) {
    const { options, compute } = methodOn(m);
    for (const by of [undefined, 'env', 'task'] as const) {
      const want = creditBatch(batch, m, options, by === undefined ? {} : { taskNorm: { by } });
      const src = new MemoryFile(batch);
      const got = [...creditRows(new CreditIndex(src, by), compute, by)];
      assert.equal(JSON.stringify(got), JSON.stringify(want), `${m} ${by}`);
      assert.equal(src.opened, 0, 'every reader closed');
    }
  }
});

test('task normalisation: numbers from the formula; a key of equal advantages is 0', () => {
  // Key env A: turns of rows 0 and 1 = [1, 2, 3, 4, 5, 6] → μ = 3.5, σ = √(35/12); key B: equal → 0.
  const rows = [[1, 2], [3, 4, 5, 6], [7, 7], [7]];
  const ts = [
    traj([0, 0], { seed: 1 }),
    traj([0, 0, 0, 0], { seed: 2 }),
    traj([0, 0], { seed: 3, params: other }),
    traj([0], { seed: 4, params: other }),
  ];
  const sigma = Math.sqrt(35 / 12);
  const got = taskNorm(ts, rows, { eps: 0 });
  assert.deepEqual(got.slice(2), [[0, 0], [0]]);
  got[0].concat(got[1]).forEach((x, i) => {
    assert.ok(Math.abs(x - (i + 1 - 3.5) / sigma) < 1e-12);
  });
});

test('a cache too small for any group: each group read back for each of its rows, same rows', () => {
  const saved = CREDIT_CACHE.numbers;
  CREDIT_CACHE.numbers = 1;
  try {
    const { options, compute } = methodOn('grpo');
    const src = new MemoryFile(batch);
    const got = [...creditRows(new CreditIndex(src, undefined), compute, undefined)];
    assert.equal(JSON.stringify(got), JSON.stringify(creditBatch(batch, 'grpo', options)));
    // Σ over rows of the group's size: 3·3 + 2·2 + 2·2 + 2·2 + 1.
    assert.equal(src.reads, 22);
  } finally {
    CREDIT_CACHE.numbers = saved;
  }
});
