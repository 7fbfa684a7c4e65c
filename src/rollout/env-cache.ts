// Envs as views: scoring a recorded turn (contextAt), exact evaluation and the critic's features need
// the env of a trajectory's task without stepping it. One env per distinct task, made on first use
// from the caller's factory, closed together by `close()` — the owner closes on every path
// (`withEnvs` does it for a callback).
import type { Env, MaybePromise, Task } from '../core/types.ts';
import { isPromise } from './episode.ts';
import { closeEnv } from './lockstep.ts';

type AnyEnv = Env<unknown, unknown>;

export class EnvCache {
  private readonly make: (task: Task) => MaybePromise<AnyEnv>;
  private readonly envs = new Map<string, MaybePromise<AnyEnv>>();

  constructor(make: (task: Task) => MaybePromise<AnyEnv>) {
    this.make = make;
  }

  /** The env of `task` (one instance per distinct task). */
  get(task: Task): MaybePromise<AnyEnv> {
    const key = JSON.stringify(task);
    let env = this.envs.get(key);
    if (env === undefined) {
      env = this.make(task);
      if (isPromise(env)) {
        const p = env;
        env = p.then((e) => {
          this.envs.set(key, e);
          return e;
        });
      }
      this.envs.set(key, env);
    }
    return env;
  }

  /** The env of a task already made (and, for an async factory, settled): for synchronous readers
   * after `getAll` was awaited. */
  view(task: Task): AnyEnv {
    const env = this.envs.get(JSON.stringify(task));
    if (env === undefined || isPromise(env))
      throw new Error(`EnvCache: no settled env for task ${JSON.stringify(task)}`);
    return env;
  }

  /** The envs of many tasks, in order; a plain array when the factory is synchronous. */
  getAll(tasks: readonly Task[]): MaybePromise<AnyEnv[]> {
    const envs = tasks.map((t) => this.get(t));
    return envs.some(isPromise) ? Promise.all(envs) : (envs as AnyEnv[]);
  }

  /** Closes every env made so far (each once), then forgets them. */
  close(): MaybePromise<void> {
    const all = [...this.envs.values()];
    this.envs.clear();
    const closes: MaybePromise<void>[] = [];
    for (const e of all) closes.push(isPromise(e) ? e.then((x) => closeEnv(x)) : closeEnv(e));
    const pending = closes.filter(isPromise);
    return pending.length > 0 ? Promise.all(pending).then(() => undefined) : undefined;
  }
}

/** Runs `fn` with a fresh cache over `make` and closes it afterwards, also when `fn` throws. */
export async function withEnvs<T>(
  make: (task: Task) => MaybePromise<AnyEnv>,
  fn: (cache: EnvCache) => Promise<T> | T,
): Promise<T> {
  const cache = new EnvCache(make);
  try {
    return await fn(cache);
  } finally {
    await cache.close();
  }
}
