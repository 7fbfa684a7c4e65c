// Tool-env throughput through the public Env API: episodes over a cycle of generated tasks, each action
// drawn uniformly from the env's own menu of valid calls (the scripted `random` policy's menu,
// `ScriptedView.validActions`), an episode ending when the env terminates it or after the registered
// episode limit. Every step is a real tool call (a SQLite query, an API call on the simulated state), so
// the figure is what a rollout's env side costs per turn. Env construction and close are timed apart.
import { Rng } from '../core/rng.ts';
import type { Env, EnvFactory, Task, Turn } from '../core/types.ts';

export interface ToolEnvThroughput {
  steps: number;
  episodes: number;
  /** Distinct task seeds cycled through (one env made per episode). */
  tasks: number;
  /** Seconds inside the env's reset and step. */
  seconds: number;
  stepsPerSecond: number;
  episodesPerSecond: number;
  /** Seconds the random policy spent asking for the menu and drawing from it (not in `seconds`). */
  menuSeconds: number;
  /** Seconds making and closing envs, and the rate of make+close. */
  makeSeconds: number;
  makesPerSecond: number;
}

/** Runs whole episodes until at least `steps` steps were taken; task seeds first, first+1, … cycling
 * over `tasks` of them. */
export async function toolEnvThroughput(
  envs: EnvFactory,
  task: Task,
  steps: number,
  seed = 0,
  tasks = 64,
): Promise<ToolEnvThroughput> {
  const rng = Rng.derive(seed, 0xbe4d);
  let taken = 0;
  let episodes = 0;
  let stepNs = 0n;
  let makeNs = 0n;
  let menuNs = 0n;
  while (taken < steps) {
    const t = { ...task, seed: task.seed + (episodes % tasks) };
    let m0 = process.hrtime.bigint();
    const env = (await envs.make(t)) as Env<unknown, unknown>;
    makeNs += process.hrtime.bigint() - m0;
    const view = env.scripted?.();
    if (view === undefined)
      throw new Error(`env ${env.spec.id} has no scripted view (no menu of valid calls)`);
    const limit = env.spec.maxTurns ?? 20;
    const history: Turn[] = [];
    let s0 = process.hrtime.bigint();
    let obs = await env.reset(t.seed);
    stepNs += process.hrtime.bigint() - s0;
    for (let i = 0; i < limit && taken < steps; i++) {
      const p0 = process.hrtime.bigint();
      const menu = view.validActions(history);
      const action = menu[rng.int(menu.length)];
      s0 = process.hrtime.bigint();
      menuNs += s0 - p0;
      const r = await env.step(action);
      stepNs += process.hrtime.bigint() - s0;
      history.push({ t: i, observation: obs, action, reward: r.reward, logp: 0, info: r.info });
      obs = r.observation;
      taken++;
      if (r.terminated) break;
    }
    m0 = process.hrtime.bigint();
    await env.close?.();
    makeNs += process.hrtime.bigint() - m0;
    episodes++;
  }
  const seconds = Number(stepNs) / 1e9;
  const makeSeconds = Number(makeNs) / 1e9;
  return {
    steps: taken,
    episodes,
    tasks: Math.min(tasks, episodes),
    seconds,
    stepsPerSecond: taken / seconds,
    episodesPerSecond: episodes / seconds,
    menuSeconds: Number(menuNs) / 1e9,
    makeSeconds,
    makesPerSecond: episodes / makeSeconds,
  };
}
