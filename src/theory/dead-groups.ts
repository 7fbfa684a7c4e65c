// Dead groups: G samples of a task with success rate p all fail or all succeed, have std 0 and give
// GRPO no gradient (docs/methods.md §1; DAPO, Yu et al. 2025, §3.2).
//   P(all fail) = (1−p)^G ≈ e^{−Gp} (Poisson),  P(all succeed) = p^G,  live share = 1 − both
// A batch of B trajectories holds B/G groups: expected successes B·p, expected live groups (B/G)·share.

export interface DeadGroupOdds {
  /** (1−p)^G */
  allFail: number;
  /** p^G */
  allSucceed: number;
  /** e^{−Gp}, the Poisson approximation of allFail (good when p is small). */
  poisson: number;
  /** B·p over the batch. */
  expectedSuccesses: number;
  /** (B/G)·(1 − allFail − allSucceed). */
  expectedLiveGroups: number;
  /** 1 − allFail − allSucceed: the share of groups that carry a gradient. */
  liveShare: number;
}

/** `batch` defaults to G (a single group); it must be a multiple of G. */
export function deadGroupOdds(p: number, G: number, batch = G): DeadGroupOdds {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`p must be a probability in [0, 1], got ${p}`);
  if (!Number.isInteger(G) || G < 1) throw new RangeError(`G must be an integer ≥ 1, got ${G}`);
  if (!Number.isInteger(batch) || batch < G || batch % G !== 0)
    throw new RangeError(`batch must be a positive multiple of G = ${G}, got ${batch}`);
  const allFail = (1 - p) ** G;
  const allSucceed = p ** G;
  // A group of one is always dead; computing 1 − (1−p) − p would leave rounding dust instead of 0.
  const liveShare = G === 1 ? 0 : Math.max(0, 1 - allFail - allSucceed);
  return {
    allFail,
    allSucceed,
    poisson: Math.exp(-G * p),
    expectedSuccesses: batch * p,
    expectedLiveGroups: (batch / G) * liveShare,
    liveShare,
  };
}
