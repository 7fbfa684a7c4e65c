// Fixtures of the budget study's tests: a tiny configuration (seconds of study, every stage with data).
import type { StudyConfig } from '../../src/studies/budget/config.ts';

/** Small enough for a test (well under a second of study), big enough for every stage to have data. */
export const TINY: StudyConfig = {
  profile: 'custom',
  seed: 3,
  world: 'slippery',
  env: { size: 4, p: 0.8, slippery: true },
  seeds: { train: { start: 0, count: 150 }, test: { start: 1_000_000, count: 30 } },
  base: {
    expert: 'oracle:temp=0.02,horizon=20',
    budget: 100,
    episodesPerTask: 1,
    hidden: [16],
    epochs: 4,
    batchSize: 128,
    lr: 0.01,
  },
  rl: { budget: 50, iters: 8, groupSize: 4, groupsPerIter: 4, gigpo: false },
  budgetmix: { budgets: [10, 50] },
  eval: {
    K: [1, 2, 4],
    T: [10, 20, 50],
    samples: 4,
    diagnosticSamples: 3,
    states: 30,
    actions: 4,
    continuations: 2,
    minRelRegret: 0.1,
    relTie: 0.01,
    consequentialGap: 0.05,
    resamples: 200,
  },
  timePlan: { total: 60, study: 25, training: 30 },
};
