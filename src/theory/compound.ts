// Compound success: n turns that must each be right with probability q succeed together with
//   P = q^n   (independent turns; docs/methods.md §1: 0.98^50 ≈ 0.364, 0.95^50 ≈ 0.077)
// Why long-horizon agents fail: a per-turn accuracy that looks high still compounds to a low success.

export function compound(q: number, n: number): number {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`q must be a probability in [0, 1], got ${q}`);
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`n must be an integer ≥ 0, got ${n}`);
  return q ** n;
}
