// Raw env throughput through the public Env API: reset, then step random actions, resetting on
// termination. Actions come from a pre-drawn table so that the figure measures the env, not an RNG.
import { Rng } from '../core/rng.ts';
import type { Env } from '../core/types.ts';

export interface EnvThroughput {
  steps: number;
  episodes: number;
  seconds: number;
  stepsPerSecond: number;
}

export function envThroughput(env: Env<unknown, number>, steps: number, seed = 0): EnvThroughput {
  const nA = env.spec.actions;
  if (typeof nA !== 'number') throw new Error(`env ${env.spec.id} has no discrete action space`);
  const rng = Rng.derive(seed, 0xbe4c);
  const actions = new Uint8Array(1 << 16);
  for (let i = 0; i < actions.length; i++) actions[i] = rng.int(nA);
  let episodes = 1;
  let reset = 1;
  const t0 = process.hrtime.bigint();
  env.reset(reset);
  for (let i = 0; i < steps; i++) {
    const r = env.step(actions[i & 0xffff]) as { terminated: boolean };
    if (r.terminated) {
      env.reset(++reset);
      episodes++;
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return { steps, episodes, seconds, stepsPerSecond: steps / seconds };
}
