// Monte-Carlo checks of the closed forms: the same quantities estimated from seeded draws, each with its
// binomial standard error, so a formula and its simulation can be compared within noise. The uniform
// source is an argument (the CLI passes a seeded core/rng stream): theory/ depends on nothing.

export type Uniform = () => number;

export interface Estimate {
  value: number;
  /** √(v(1−v)/N) for a proportion, the sample std / √N for a mean. */
  stdErr: number;
}

function proportion(hits: number, n: number): Estimate {
  const v = hits / n;
  return { value: v, stdErr: Math.sqrt((v * (1 - v)) / n) };
}

function positiveInt(name: string, x: number): void {
  if (!Number.isInteger(x) || x < 1) throw new RangeError(`${name} must be an integer ≥ 1, got ${x}`);
}

/** P(n independent turns, each right with probability q, are all right), from `samples` episodes. */
export function simulateCompound(q: number, n: number, samples: number, uniform: Uniform): Estimate {
  positiveInt('samples', samples);
  let hits = 0;
  for (let e = 0; e < samples; e++) {
    let t = 0;
    while (t < n && uniform() < q) t++;
    if (t === n) hits++;
  }
  return proportion(hits, samples);
}

export interface DeadGroupEstimate {
  allFail: Estimate;
  allSucceed: Estimate;
  expectedSuccesses: Estimate;
  expectedLiveGroups: Estimate;
  liveShare: Estimate;
}

/** `samples` batches of B/G groups of G Bernoulli(p) outcomes. */
export function simulateDeadGroups(
  p: number,
  G: number,
  batch: number,
  samples: number,
  uniform: Uniform,
): DeadGroupEstimate {
  positiveInt('samples', samples);
  const groups = batch / G;
  let allFail = 0;
  let allSucceed = 0;
  let sumS = 0;
  let sumS2 = 0;
  let sumL = 0;
  let sumL2 = 0;
  for (let b = 0; b < samples; b++) {
    let successes = 0;
    let live = 0;
    for (let g = 0; g < groups; g++) {
      let c = 0;
      for (let k = 0; k < G; k++) if (uniform() < p) c++;
      successes += c;
      if (c === 0) allFail++;
      else if (c === G) allSucceed++;
      else live++;
    }
    sumS += successes;
    sumS2 += successes * successes;
    sumL += live;
    sumL2 += live * live;
  }
  const mean = (s: number, s2: number): Estimate => {
    const m = s / samples;
    return { value: m, stdErr: Math.sqrt(Math.max(0, s2 / samples - m * m) / samples) };
  };
  const totalGroups = samples * groups;
  return {
    allFail: proportion(allFail, totalGroups),
    allSucceed: proportion(allSucceed, totalGroups),
    expectedSuccesses: mean(sumS, sumS2),
    expectedLiveGroups: mean(sumL, sumL2),
    liveShare: proportion(totalGroups - allFail - allSucceed, totalGroups),
  };
}
