import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { budgetAt, maxBudget, validateSchedule } from '../../src/train/schedule.ts';

test('fixed and growing budgets', () => {
  assert.equal(budgetAt({ kind: 'fixed', budget: 30 }, 0, 99, 3, 1), 30);
  const grow = { kind: 'grow' as const, start: 10, step: 5, every: 3, max: 22 };
  assert.deepEqual(
    Array.from({ length: 10 }, (_, k) => budgetAt(grow, 0, k, 0, 0)),
    [10, 10, 10, 15, 15, 15, 20, 20, 20, 22],
  );
  assert.equal(maxBudget(grow), 22);
});

test('a budget mix samples each budget at its rate, deterministically per episode', () => {
  const mix = { kind: 'mix' as const, budgets: [10, 20, 50, 100] };
  const counts = new Map<number, number>();
  const n = 40_000;
  for (let i = 0; i < n; i++) {
    const b = budgetAt(mix, 7, Math.floor(i / 64), i % 8, Math.floor(i / 8) % 8);
    counts.set(b, (counts.get(b) ?? 0) + 1);
  }
  assert.deepEqual(
    [...counts.keys()].sort((a, b) => a - b),
    [10, 20, 50, 100],
  );
  const chi2 = [...counts.values()].reduce((s, c) => s + (c - n / 4) ** 2 / (n / 4), 0);
  assert.ok(chi2 < 16.27, `chi2 ${chi2}`); // 3 dof, p = 0.001
  assert.equal(budgetAt(mix, 7, 3, 2, 1), budgetAt(mix, 7, 3, 2, 1));
  const weighted = { kind: 'mix' as const, budgets: [10, 100], weights: [0, 1] };
  for (let i = 0; i < 100; i++) assert.equal(budgetAt(weighted, 1, i, 0, 0), 100);
  let tens = 0;
  for (let i = 0; i < 10_000; i++) if (budgetAt({ ...weighted, weights: [3, 1] }, 2, i, 0, 0) === 10) tens++;
  assert.ok(Math.abs(tens / 10_000 - 0.75) < 0.02);
});

test('bad schedules are refused', () => {
  assert.throws(() => validateSchedule({ kind: 'fixed', budget: 0 }), InputError);
  assert.throws(() => validateSchedule({ kind: 'mix', budgets: [] }), InputError);
  assert.throws(() => validateSchedule({ kind: 'mix', budgets: [10, 2.5] }), InputError);
  assert.throws(() => validateSchedule({ kind: 'mix', budgets: [10, 20], weights: [1] }), InputError);
  assert.throws(() => validateSchedule({ kind: 'grow', start: 50, step: 5, every: 1, max: 10 }), InputError);
});
