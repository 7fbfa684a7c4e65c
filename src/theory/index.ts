// Closed-form calculators of the seeds (docs/methods.md §1) and their Monte-Carlo checks. Depends on nothing.
export * from './compound.ts';
export * from './dead-groups.ts';
export * from './simulate.ts';
export * from './shaping.ts';
export * from './tokens.ts';
