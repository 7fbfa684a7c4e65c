// checkEnv: Gymnasium's env checker in our terms. It validates a (user-written) env against the Env
// contract: spec shape, types of what step returns, determinism under a seed, snapshot round trips.
import { Rng } from '../core/rng.ts';
import type { Env, StepResult } from '../core/types.ts';

export interface CheckOptions {
  /** Episodes to play with random actions (default 20). */
  episodes?: number;
  /** Turn cap per episode (default 200). */
  maxTurns?: number;
  seed?: number;
}

/** Returns the list of problems found (empty when the env passes). Only discrete-action envs are stepped. */
export async function checkEnv<O, A>(makeEnv: () => Env<O, A>, opts: CheckOptions = {}): Promise<string[]> {
  const problems: string[] = [];
  const episodes = opts.episodes ?? 20;
  const maxTurns = opts.maxTurns ?? 200;
  const seed = opts.seed ?? 0;
  const env = makeEnv();
  const { spec } = env;
  if (typeof spec.id !== 'string' || spec.id.length === 0)
    problems.push('spec.id must be a non-empty string');
  if (!(spec.actions === 'text' || (Number.isInteger(spec.actions) && spec.actions > 0))) {
    problems.push(`spec.actions must be a positive integer or 'text', got ${String(spec.actions)}`);
  }
  if (spec.oracle && typeof env.oracle !== 'function')
    problems.push('spec.oracle is true but env.oracle is missing');
  if (spec.snapshots && (typeof env.snapshot !== 'function' || typeof env.restore !== 'function')) {
    problems.push('spec.snapshots is true but snapshot/restore are missing');
  }
  if (typeof spec.actions !== 'number') return problems;
  const nA = spec.actions;

  const play = async (e: Env<O, A>, s: number, actions: number[]): Promise<string> => {
    const trace: unknown[] = [await e.reset(s)];
    for (const a of actions) {
      const r = await e.step(a as A);
      trace.push(r.observation, r.reward, r.terminated, r.info);
      if (r.terminated) break;
    }
    return JSON.stringify(trace);
  };

  const rng = Rng.derive(seed, 0xc4ec);
  for (let ep = 0; ep < episodes && problems.length === 0; ep++) {
    const actions = Array.from({ length: maxTurns }, () => rng.int(nA));
    const epSeed = seed + ep;
    // Determinism: the same seed and actions give the same observations, rewards and infos, on a fresh
    // instance and on a reused one.
    const a = await play(makeEnv(), epSeed, actions);
    const b = await play(env, epSeed, actions);
    const c = await play(env, epSeed, actions);
    if (a !== b || b !== c)
      problems.push(`reset(${epSeed}) with the same actions gave different trajectories`);

    await env.reset(epSeed);
    for (let t = 0; t < maxTurns; t++) {
      const r: StepResult<O> = await env.step(actions[t] as A);
      if (typeof r.reward !== 'number' || !Number.isFinite(r.reward)) {
        problems.push(`step reward must be a finite number, got ${String(r.reward)}`);
      }
      if (typeof r.terminated !== 'boolean')
        problems.push(`step terminated must be a boolean, got ${r.terminated}`);
      if (typeof r.info !== 'object' || r.info === null) problems.push('step info must be an object');
      else if (r.info.success === true && !r.terminated) problems.push('info.success without termination');
      if (JSON.stringify(r.observation) === undefined)
        problems.push('observations must be JSON-serialisable');
      if (problems.length > 0 || r.terminated) break;

      // Snapshot round trip: continuing after restore(snapshot) repeats what followed the snapshot.
      if (spec.snapshots && t % 3 === 0) {
        const snap = JSON.parse(JSON.stringify(env.snapshot!()));
        const probe = actions.slice(t + 1, t + 6);
        const after: unknown[] = [];
        const run = async (out: unknown[]) => {
          for (const pa of probe) {
            const r = await env.step(pa as A);
            out.push(r);
            if (r.terminated) break;
          }
        };
        await run(after);
        env.restore!(snap);
        const again: unknown[] = [];
        await run(again);
        if (JSON.stringify(after) !== JSON.stringify(again)) {
          problems.push('restore(snapshot()) did not reproduce the continuation');
        }
        env.restore!(snap);
      }
    }
  }
  const invalid = await (async () => {
    await env.reset(seed);
    try {
      const r = await env.step(nA as A);
      return r.info.valid === false ? null : `an out-of-range action (${nA}) must give info.valid = false`;
    } catch (e) {
      return `an out-of-range action must be an observation, not an exception (${(e as Error).message})`;
    }
  })();
  if (invalid) problems.push(invalid);
  return problems;
}
