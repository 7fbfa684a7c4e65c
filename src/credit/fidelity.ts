// Credit fidelity (ours, docs/methods.md §3): where the env has an exact model, the true advantage of turn t
// is A^π(s_t, a_t) = Q^π_h(s_t, a_t) − V^π_h(s_t) with h = T − t turns left (finite horizon: the same
// state is worth less with fewer turns to go). A method's fidelity is how well its per-turn credit
// agrees with A^π over a batch: Pearson and Spearman correlation, and sign agreement.
// Pure: the caller supplies V^π and Q^π (eval/exact.ts computes them); nothing here steps an env.
import { InputError } from '../core/errors.ts';
import type { PolicyValues, Trajectory } from '../core/types.ts';
import type { Advantages } from './common.ts';
import type { ValueFn } from './gae.ts';

/** The exact values a trajectory was played under: V^π, Q^π for every h ≤ its budget, and the map from
 * its observations to the oracle's state indices. */
export interface ExactValues {
  values: PolicyValues;
  state(observation: unknown): number;
}

export type ExactValuesOf = (trajectory: Trajectory) => ExactValues;

/** |x| at or below this counts as 0: Q − V of equal-valued actions leaves rounding dust (~1e-17), and
 * a tie must stay a tie for Spearman's ranks and for the sign. */
export const ZERO_TOLERANCE = 1e-12;

function turnsLeft(traj: Trajectory, t: number, values: PolicyValues): number {
  const h = traj.budget - t;
  if (h < 0 || h > values.horizon) {
    throw InputError.raw(
      `trajectory ${traj.id}`,
      `turn ${t} with budget ${traj.budget} is outside the exact values (h ≤ ${values.horizon})`,
    );
  }
  return h;
}

/** A^π_{T−t}(s_t, a_t) for every turn, laid out like the batch. */
export function exactAdvantages(batch: readonly Trajectory[], valuesOf: ExactValuesOf): Advantages {
  return batch.map((traj) => {
    const { values, state } = valuesOf(traj);
    const { nS, nA, V, Q } = values;
    return traj.turns.map((turn, t) => {
      const h = turnsLeft(traj, t, values);
      const s = state(turn.observation);
      const a = turn.action;
      if (typeof a !== 'number' || !Number.isInteger(a) || a < 0 || a >= nA) {
        throw InputError.raw(
          `trajectory ${traj.id} turn ${t}`,
          `action ${JSON.stringify(a)} is not one of the ${nA} actions the exact model knows`,
        );
      }
      const adv = Q[(h * nS + s) * nA + a] - V[h * nS + s];
      return Math.abs(adv) <= ZERO_TOLERANCE ? 0 : adv;
    });
  });
}

/** GAE's V(s_t) = V^π_{T−t}(s_t). After a truncation t = T = budget, so h = 0 and V^π_0 = 0: the
 * finite-horizon value already knows no turns are left (the state after the last turn is not needed). */
export function exactValueFn(valuesOf: ExactValuesOf): ValueFn {
  return (traj, t) => {
    const { values, state } = valuesOf(traj);
    const h = turnsLeft(traj, t, values);
    if (h === 0) return 0;
    if (t >= traj.turns.length) {
      throw InputError.raw(
        `trajectory ${traj.id}`,
        `truncated after ${t} turns with budget ${traj.budget}: the state after its last turn is unknown`,
      );
    }
    return values.V[h * values.nS + state(traj.turns[t].observation)];
  };
}

/** Pearson correlation; null when either side is constant (the correlation is undefined). */
export function pearson(x: ArrayLike<number>, y: ArrayLike<number>): number | null {
  const n = x.length;
  if (y.length !== n) throw new RangeError(`pearson: lengths ${n} and ${y.length} differ`);
  if (n < 2) return null;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i++) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  let sxx = 0;
  let syy = 0;
  let sxy = 0;
  for (let i = 0; i < n; i++) {
    const dx = x[i] - mx;
    const dy = y[i] - my;
    sxx += dx * dx;
    syy += dy * dy;
    sxy += dx * dy;
  }
  if (sxx === 0 || syy === 0) return null;
  // sqrt(sxx·syy) rather than sqrt(sxx)·sqrt(syy): for x = y it is exactly sxx, so r = 1 exactly.
  return Math.max(-1, Math.min(1, sxy / Math.sqrt(sxx * syy)));
}

/** 1-based ranks, ties sharing the average of their ranks (Spearman's convention). */
export function averageRanks(x: ArrayLike<number>): Float64Array {
  const n = x.length;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => x[a] - x[b]);
  const ranks = new Float64Array(n);
  for (let i = 0; i < n; ) {
    let j = i;
    while (j + 1 < n && x[order[j + 1]] === x[order[i]]) j++;
    const r = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) ranks[order[k]] = r;
    i = j + 1;
  }
  return ranks;
}

/** Spearman's ρ: Pearson's r of the average ranks. */
export function spearman(x: ArrayLike<number>, y: ArrayLike<number>): number | null {
  return pearson(averageRanks(x), averageRanks(y));
}

function sign(x: number, tol: number): number {
  return x > tol ? 1 : x < -tol ? -1 : 0;
}

/**
 * Share of turns whose signs agree, with 0 (|x| ≤ tol) as a sign of its own: crediting a turn whose
 * true advantage is 0 is a miss, and so is giving 0 to a turn that mattered. null for no turns.
 */
export function signAgreement(
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  tol = ZERO_TOLERANCE,
): number | null {
  const n = x.length;
  if (y.length !== n) throw new RangeError(`signAgreement: lengths ${n} and ${y.length} differ`);
  if (n === 0) return null;
  let agree = 0;
  for (let i = 0; i < n; i++) if (sign(x[i], tol) === sign(y[i], tol)) agree++;
  return agree / n;
}

export interface FidelityScores {
  pearson: number | null;
  spearman: number | null;
  signAgreement: number | null;
}

/** Flattens two batches of advantages of the same shape (turn by turn). */
export function flatten(a: Advantages): Float64Array {
  let n = 0;
  for (const row of a) n += row.length;
  const out = new Float64Array(n);
  let k = 0;
  for (const row of a) for (const x of row) out[k++] = x;
  return out;
}

/** How well `estimate` recovers `exact`, over every turn of the batch. */
export function fidelity(estimate: Advantages, exact: Advantages): FidelityScores {
  if (estimate.length !== exact.length)
    throw new RangeError(`fidelity: ${estimate.length} rows against ${exact.length}`);
  estimate.forEach((row, i) => {
    if (row.length !== exact[i].length)
      throw new RangeError(`fidelity: row ${i} has ${row.length} turns against ${exact[i].length}`);
  });
  const x = flatten(estimate);
  const y = flatten(exact);
  return { pearson: pearson(x, y), spearman: spearman(x, y), signAgreement: signAgreement(x, y) };
}
