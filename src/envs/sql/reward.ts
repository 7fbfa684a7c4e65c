// The InterCode-SQL reward (Yang et al. 2023, "InterCode", §3 and intercode/envs/sql/sql_env.py
// `get_reward`), as docs/methods.md §7 states it:
//   r = |A ∩ G| / |A ∪ G| over the multisets of stringified result rows (both empty → 1),
//   scaled by Kendall's τ between the orders of the intersected rows when the gold query orders them,
//   and 0 when the submitted result is not a list of rows (an error, a refusal).
// Two deliberate differences from InterCode's code, both stated in the README:
// - τ is taken only when the gold query has ORDER BY (InterCode scales every answer; docs/methods.md and
//   the issue scale ordered questions only, since an unordered SQL result has no meaningful order).
// - τ compares *positions*: the k-th occurrence of a row in the agent's intersected list is paired with
//   the k-th occurrence in the gold's, and τ is computed between the two position sequences (a
//   permutation, so τ_a = τ_b). InterCode passes the row strings themselves to scipy's kendalltau, which
//   ranks them lexicographically — a reversal then scores −1 only when the gold order happens to be the
//   lexicographic one. Like InterCode, r = IoU·τ (negative for an order worse than chance), τ is left
//   out when it is undefined (fewer than two intersected rows), and nothing is rounded.
// Rows are stringified as JSON arrays (InterCode: Python's str(tuple)).

export type Row = readonly unknown[];

export interface Score {
  /** The reward: iou, times tau when the question is ordered and tau is defined. */
  reward: number;
  /** Multiset intersection over union. */
  iou: number;
  /** Kendall's τ of the intersected rows' order; null when unordered or undefined. */
  tau: number | null;
}

export const rowKey = (row: Row): string => JSON.stringify(row);

function counts(keys: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const k of keys) m.set(k, (m.get(k) ?? 0) + 1);
  return m;
}

/** Multiset IoU of two lists of row keys: Σ min(a,b) / Σ max(a,b); 1 when both are empty. */
export function multisetIoU(agent: readonly string[], gold: readonly string[]): number {
  const a = counts(agent);
  const g = counts(gold);
  let inter = 0;
  let union = 0;
  for (const [k, n] of a) {
    const m = g.get(k) ?? 0;
    inter += Math.min(n, m);
    union += Math.max(n, m);
  }
  for (const [k, m] of g) if (!a.has(k)) union += m;
  return union === 0 ? 1 : inter / union;
}

/** The intersected rows of `list`, in its order: each key kept as often as it occurs in both. */
function intersected(list: readonly string[], quota: Map<string, number>): string[] {
  const left = new Map(quota);
  const out: string[] = [];
  for (const k of list) {
    const n = left.get(k) ?? 0;
    if (n > 0) {
      left.set(k, n - 1);
      out.push(k);
    }
  }
  return out;
}

/** Kendall's τ between two orderings of the same multiset of keys (occurrences paired in order);
 * null when fewer than two items. (concordant − discordant) / (n choose 2). */
export function kendallTauOfOrders(agent: readonly string[], gold: readonly string[]): number | null {
  const n = agent.length;
  if (n < 2) return null;
  // Position in gold of each agent item: the k-th occurrence of a key maps to its k-th gold position.
  const slots = new Map<string, number[]>();
  gold.forEach((k, i) => {
    const s = slots.get(k);
    if (s === undefined) slots.set(k, [i]);
    else s.push(i);
  });
  const pos = agent.map((k) => {
    const s = slots.get(k);
    if (s === undefined || s.length === 0) throw new Error('kendallTauOfOrders: lists differ');
    return s.shift() as number;
  });
  let s = 0;
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) s += Math.sign(pos[j] - pos[i]);
  return s / ((n * (n - 1)) / 2);
}

/** The reward of an agent's result against the gold result. `agent` null: the query did not give a
 * list of rows (an error, a refusal, a timeout) — reward 0. */
export function interCodeScore(agent: readonly Row[] | null, gold: readonly Row[], ordered: boolean): Score {
  if (agent === null) return { reward: 0, iou: 0, tau: null };
  const a = agent.map(rowKey);
  const g = gold.map(rowKey);
  const iou = multisetIoU(a, g);
  if (!ordered || iou === 0) return { reward: iou, iou, tau: null };
  const quota = counts(g);
  const ac = counts(a);
  for (const [k, m] of quota) quota.set(k, Math.min(m, ac.get(k) ?? 0));
  const tau = kendallTauOfOrders(intersected(a, quota), intersected(g, quota));
  return { reward: tau === null ? iou : iou * tau, iou, tau };
}

/** The exact-match variant: 1 when the multisets are equal (and, ordered, in the same order), else 0. */
export function exactScore(agent: readonly Row[] | null, gold: readonly Row[], ordered: boolean): Score {
  if (agent === null) return { reward: 0, iou: 0, tau: null };
  const a = agent.map(rowKey);
  const g = gold.map(rowKey);
  const iou = multisetIoU(a, g);
  const same = ordered ? a.length === g.length && a.every((k, i) => k === g[i]) : iou === 1;
  return { reward: same ? 1 : 0, iou, tau: null };
}

/** Whether a gold query orders its result (an ORDER BY outside string literals). */
export function isOrdered(gold: string): boolean {
  return /\border\s+by\b/i.test(gold.replace(/'(?:[^']|'')*'/g, "''"));
}
