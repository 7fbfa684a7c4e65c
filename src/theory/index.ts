// Closed-form calculators of the seeds (docs/methods.md §1) and their Monte-Carlo checks; reward shaping measured
// by exact DP (shaping.ts). Depends on nothing.
export * from './compound.ts';
export * from './dead-groups.ts';
export * from './shaping.ts';
export * from './simulate.ts';
export * from './tokens.ts';
