// How a page draws a trajectory's env: what the composition layer (the CLI, with the env registry)
// tells the dashboard of a task's env, and what of it the API sends (`view` of a trajectory or a group).
import type { EnvSpec, Task } from '../core/types.ts';

/** A task's env as the composition layer knows it (the registry): its spec, and its description
 * (envs' `describe`: FrozenLake's map), asked for only for envs with discrete actions. */
export type EnvOf = (task: Task) => { spec: EnvSpec; describe: () => Record<string, unknown> };

/** What a page needs to draw a task's observations and actions (null fields: not known). */
export interface EnvView {
  actions: number | 'text';
  /** The env has an exact oracle: `exact` credit is available. */
  oracle: boolean;
  /** The name of each discrete action (FrozenLake: Left, Down, Right, Up). */
  names: string[] | null;
  /** The grid of a board env, a row per string (FrozenLake: S start, F frozen, H hole, G goal). */
  board: string[] | null;
}

/** Env views by task, the last few (a page asks for one task's trajectories many times). */
export function viewCache(envOf: EnvOf | undefined): (task: Task) => EnvView | null {
  const cache = new Map<string, EnvView | null>();
  return (task) => {
    if (envOf === undefined) return null;
    const key = JSON.stringify(task);
    let view = cache.get(key);
    if (view === undefined) {
      try {
        const { spec, describe } = envOf(task);
        const d = typeof spec.actions === 'number' ? describe() : {};
        const board =
          Array.isArray(d.desc) && d.desc.every((r) => typeof r === 'string') ? (d.desc as string[]) : null;
        view = {
          actions: spec.actions,
          oracle: spec.oracle,
          names: spec.chat ? [...spec.chat.names] : null,
          board,
        };
      } catch {
        view = null; // an env this build does not know: the page shows the observations as data
      }
      if (cache.size >= 64) cache.delete(cache.keys().next().value as string);
      cache.set(key, view);
    }
    return view;
  };
}
