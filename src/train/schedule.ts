// Turn budgets for training episodes (docs/methods.md §4, BudgetMix): a fixed T; a mixture — each episode's
// T drawn from a set of budgets (uniformly or with weights); or a growing horizon h_{k+1} = h_k + δ
// every `every` iterations up to a cap (AgentGym-RL's ScalingInter, Xi et al. 2025, §3.2).
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';

export type BudgetSchedule =
  | { kind: 'fixed'; budget: number }
  | { kind: 'mix'; budgets: number[]; weights?: number[] }
  | { kind: 'grow'; start: number; step: number; every: number; max: number };

/** A stream key so that budget draws never share random numbers with rollouts. */
const BUDGET_STREAM = 0xb0d9e7;

export function validateSchedule(s: BudgetSchedule, field = 'budget'): BudgetSchedule {
  const posInt = (x: number) => Number.isInteger(x) && x >= 1;
  if (s.kind === 'fixed' && !posInt(s.budget))
    throw new InputError(field, s.budget, 'expected an integer ≥ 1');
  if (s.kind === 'mix') {
    if (s.budgets.length === 0 || !s.budgets.every(posInt)) {
      throw new InputError(field, s.budgets, 'expected a non-empty list of integers ≥ 1');
    }
    if (s.weights !== undefined) {
      const ok =
        s.weights.length === s.budgets.length &&
        s.weights.every((w) => w >= 0) &&
        s.weights.some((w) => w > 0);
      if (!ok)
        throw new InputError(
          `${field}.weights`,
          s.weights,
          `expected ${s.budgets.length} non-negative weights, not all 0`,
        );
    }
  }
  if (s.kind === 'grow') {
    if (!posInt(s.start) || !posInt(s.max) || s.start > s.max) {
      throw new InputError(field, s, 'expected integers 1 ≤ start ≤ max');
    }
    if (!Number.isInteger(s.step) || s.step < 0 || !posInt(s.every)) {
      throw new InputError(field, s, 'expected an integer step ≥ 0 and every ≥ 1');
    }
  }
  return s;
}

/** The budget of episode (task index, sample) at iteration `iter`; a pure function of its arguments. */
export function budgetAt(
  s: BudgetSchedule,
  seed: number,
  iter: number,
  task: number,
  sample: number,
): number {
  switch (s.kind) {
    case 'fixed':
      return s.budget;
    case 'grow':
      return Math.min(s.max, s.start + s.step * Math.floor(iter / s.every));
    case 'mix': {
      const rng = Rng.derive(seed, BUDGET_STREAM, iter, task, sample);
      return s.budgets[s.weights === undefined ? rng.int(s.budgets.length) : rng.categorical(s.weights)];
    }
  }
}

/** The largest budget the schedule can give (for sizing oracle tables and reports). */
export function maxBudget(s: BudgetSchedule): number {
  return s.kind === 'fixed' ? s.budget : s.kind === 'mix' ? Math.max(...s.budgets) : s.max;
}
