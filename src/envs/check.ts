// checkEnv: Gymnasium's env checker in our terms. It validates a (user-written) env against the Env
// contract: spec shape, types of what step returns, determinism under a seed, snapshot round trips,
// state keys, and the lifecycle — every env it makes (sync or async factory) is closed, and an env
// whose `close` throws is reported. Discrete envs are stepped with random action indices, text envs
// with random strings (or the caller's `action` generator), plus one malformed action that must come
// back as an observation (`info.valid = false`), never as an exception.
import { Rng } from '../core/rng.ts';
import type { Env, MaybePromise, StepResult } from '../core/types.ts';

export interface CheckOptions<A = unknown> {
  /** Episodes to play with random actions (default 20). */
  episodes?: number;
  /** Turn cap per episode (default 200). */
  maxTurns?: number;
  seed?: number;
  /** A random action (text envs: default a short random string of letters, digits and spaces). */
  action?: (rng: Rng) => A;
  /** An action the env must refuse as `info.valid = false` (default: nA for discrete envs, a string of
   * control characters for text envs). */
  malformed?: A;
}

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789 ';

function randomText(rng: Rng): string {
  const n = 1 + rng.int(12);
  let s = '';
  for (let i = 0; i < n; i++) s += ALPHABET[rng.int(ALPHABET.length)];
  return s;
}

/** Returns the list of problems found (empty when the env passes). */
export async function checkEnv<O, A>(
  makeEnv: () => MaybePromise<Env<O, A>>,
  opts: CheckOptions<A> = {},
): Promise<string[]> {
  const made: Env<O, A>[] = [];
  const make = async () => {
    const e = await makeEnv();
    made.push(e);
    return e;
  };
  const problems: string[] = [];
  try {
    await checkWith(make, opts, problems);
  } catch (e) {
    problems.push(`the env threw where it must not: ${(e as Error).message}`);
  }
  for (const e of made) {
    try {
      await e.close?.();
    } catch (err) {
      problems.push(`close() threw: ${(err as Error).message}`);
    }
  }
  return problems;
}

async function checkWith<O, A>(
  makeEnv: () => Promise<Env<O, A>>,
  opts: CheckOptions<A>,
  problems: string[],
): Promise<void> {
  const episodes = opts.episodes ?? 20;
  const maxTurns = opts.maxTurns ?? 200;
  const seed = opts.seed ?? 0;
  const env = await makeEnv();
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
  if (env.close !== undefined && typeof env.close !== 'function') problems.push('close must be a function');
  if (problems.length > 0) return;
  const discrete = typeof spec.actions === 'number';
  const nA = discrete ? (spec.actions as number) : 0;
  const draw: (rng: Rng) => A =
    opts.action ?? (discrete ? (rng) => rng.int(nA) as A : (rng) => randomText(rng) as A);
  const malformed: A = opts.malformed ?? ((discrete ? nA : '\u0000\u0001\u0002') as A);

  const play = async (e: Env<O, A>, s: number, actions: A[]): Promise<string> => {
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
    const actions = Array.from({ length: maxTurns }, () => draw(rng));
    const epSeed = seed + ep;
    // Determinism: the same seed and actions give the same observations, rewards and infos, on a fresh
    // instance and on a reused one.
    const a = await play(await makeEnv(), epSeed, actions);
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
      if (env.stateKey !== undefined) {
        const k = env.stateKey(r.observation);
        if (typeof k !== 'string' && typeof k !== 'number')
          problems.push(`stateKey must return a string or a number, got ${typeof k}`);
        else if (k !== env.stateKey(JSON.parse(JSON.stringify(r.observation))))
          problems.push('stateKey must depend on the observation only (a JSON copy gave another key)');
      }
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
      const r = await env.step(malformed);
      return r.info.valid === false
        ? null
        : `a malformed action (${JSON.stringify(malformed)}) must give info.valid = false`;
    } catch (e) {
      return `an out-of-range action must be an observation, not an exception (${(e as Error).message})`;
    }
  })();
  if (invalid) problems.push(invalid);
}
