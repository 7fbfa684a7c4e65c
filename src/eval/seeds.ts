// Sub-streams of STREAM.eval: every random choice the diagnostics make is drawn from
// Rng.derive(seed, STREAM.eval, KEY, …indices), never from a shared generator, so each figure is the
// same at any concurrency and adding one diagnostic does not shift the numbers of another.
export const EVAL_KEY = {
  /** Bootstrap resample r of Pass@(K,T): Rng.derive(seed, eval, passKT, r). */
  passKT: 1,
  /** Bootstrap resample r of a mean over clusters (recovery). */
  means: 2,
  /** Which (trajectory, turn) becomes state i. */
  states: 3,
  /** Which turn gets a forced bad action, which bad action, and the env's draw for it. */
  errors: 4,
  /** The M actions a policy draws at a state. */
  draws: 5,
  /** Continuations from an error state (env and policy streams). */
  continuations: 6,
} as const;
