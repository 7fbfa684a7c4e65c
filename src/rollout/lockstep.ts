// The lockstep rollout: many episodes advance together, one turn at a time, and the policy acts for
// all of them in one actBatch() call per turn (one batched forward of a neural network instead of one
// per episode). rollout() dispatches here when the policy has actBatch.
//
// Every episode is the same state machine as in the sequential path (episode.ts), with its own env
// instance and its own RNG streams; only the policy call is gathered. A stand-in policy answers each
// episode's act() with a marker, the driver collects the waiting contexts, calls actBatch once and
// feeds each action back. Trajectories are therefore the same, byte for byte, as the sequential
// path's for the same seeds (test/rollout/lockstep.test.ts).
//
// Episodes run in waves of `width` (trajectories are emitted in episode order as each wave ends).
// Promises are awaited where they appear, so an asynchronous env or policy still works, a wave at a
// time. If actBatch throws, every episode that was waiting on it ends with kind `error`; an Error in
// its answer ends that one episode as if its act() had thrown (`context` for a ContextOverflow). A wave's envs
// are closed when the wave ends, whatever happened in it.
import type {
  Action,
  BatchedPolicy,
  Env,
  MaybePromise,
  Policy,
  Trajectory,
  TurnContext,
} from '../core/types.ts';
import { createEpisode, DONE, type Episode, type EpisodeOptions, isPromise } from './episode.ts';

type AnyEnv = Env<unknown, unknown>;
type BatchPolicy = BatchedPolicy<unknown, unknown>;

/** env.close(), if it has one; a value when it is synchronous. */
export function closeEnv(env: AnyEnv): MaybePromise<void> {
  return env.close?.();
}

/** Closes every env (all of them, even when one close throws), then rethrows the first failure. */
function closeAll(envs: readonly AnyEnv[]): MaybePromise<void> {
  let error: unknown;
  let failed = false;
  const pending: Promise<void>[] = [];
  for (const env of envs) {
    try {
      const r = closeEnv(env);
      if (isPromise(r)) pending.push(r);
    } catch (e) {
      if (!failed) error = e;
      failed = true;
    }
  }
  if (pending.length === 0) {
    if (failed) throw error;
    return;
  }
  return Promise.all(pending).then(() => {
    if (failed) throw error;
  });
}

/** What a stand-in act() returns: "this episode waits for the batched action". */
const WAITING: unique symbol = Symbol('waiting');
/** A request whose promise is in flight. */
const PENDING: unique symbol = Symbol('pending');

interface Wave {
  first: number;
  envs: AnyEnv[];
  episodes: Episode<unknown, unknown>[];
  /** What each episode asked for last: a value to feed back, a promise, WAITING, PENDING or DONE. */
  requests: unknown[];
  /** The context each WAITING episode acts in. */
  contexts: (TurnContext<unknown> | undefined)[];
}

export interface LockstepOptions {
  total: number;
  width: number;
  policy: BatchPolicy;
  makeEnv: (i: number) => MaybePromise<AnyEnv>;
  episodeOptions: (i: number) => EpisodeOptions<unknown>;
  /** Receives each trajectory once, in episode order. */
  emit: (i: number, trajectory: Trajectory) => void;
}

export function runLockstep(o: LockstepOptions): MaybePromise<void> {
  const waves = (first: number): MaybePromise<void> => {
    for (let w = first; w < o.total; w += o.width) {
      const n = Math.min(o.width, o.total - w);
      const made = Array.from({ length: n }, (_, j) => o.makeEnv(w + j));
      if (made.some(isPromise)) {
        return settleAll(made).then((envs) => {
          const r = runWave(o, w, envs);
          return isPromise(r) ? r.then(() => waves(w + o.width)) : waves(w + o.width);
        });
      }
      const r = runWave(o, w, made as AnyEnv[]);
      if (isPromise(r)) return r.then(() => waves(w + o.width));
    }
  };
  return waves(0);
}

/** Awaits every env of a wave; if one factory call fails, closes the ones that were made. */
async function settleAll(made: MaybePromise<AnyEnv>[]): Promise<AnyEnv[]> {
  const results = await Promise.allSettled(made);
  const envs = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const bad = results.find((r) => r.status === 'rejected');
  if (bad !== undefined) {
    await closeAll(envs);
    throw (bad as PromiseRejectedResult).reason;
  }
  return envs;
}

/** One wave: start, drive to the end, emit, close its envs (also when something threw). */
function runWave(o: LockstepOptions, first: number, envs: AnyEnv[]): MaybePromise<void> {
  let r: MaybePromise<void>;
  let wave: Wave;
  try {
    wave = startWave(o, first, envs);
    r = drive(o.policy, wave);
  } catch (e) {
    const c = closeAll(envs);
    if (isPromise(c)) return c.then(() => Promise.reject(e));
    throw e;
  }
  if (isPromise(r)) {
    return r.then(
      () => {
        finishWave(o, wave);
        return closeAll(envs);
      },
      (e) => Promise.resolve(closeAll(envs)).then(() => Promise.reject(e)),
    );
  }
  finishWave(o, wave);
  return closeAll(envs);
}

function startWave(o: LockstepOptions, first: number, envs: AnyEnv[]): Wave {
  const n = envs.length;
  const wave: Wave = { first, envs, episodes: [], requests: [], contexts: new Array(n) };
  const { policy } = o;
  for (let j = 0; j < n; j++) {
    const standIn: Policy<unknown, unknown> = {
      id: policy.id,
      budgetAware: policy.budgetAware,
      act: (ctx) => {
        wave.contexts[j] = ctx;
        return WAITING as unknown as Action<unknown>;
      },
    };
    const ep = createEpisode(envs[j], standIn, o.episodeOptions(first + j));
    wave.episodes.push(ep);
    wave.requests.push(ep.start());
  }
  return wave;
}

function finishWave(o: LockstepOptions, wave: Wave): void {
  wave.episodes.forEach((ep, j) => {
    o.emit(wave.first + j, ep.result());
  });
}

/** Advances every episode until all are done; returns a promise only if something was asynchronous. */
function drive(policy: BatchPolicy, wave: Wave): MaybePromise<void> {
  const { episodes, requests, contexts } = wave;
  for (;;) {
    const pending: Promise<void>[] = [];
    const waiting: number[] = [];
    for (let j = 0; j < episodes.length; j++) {
      let req = requests[j];
      while (req !== DONE && req !== WAITING && req !== PENDING && !isPromise(req))
        req = episodes[j].next(req);
      if (isPromise(req)) {
        pending.push(
          req.then(
            (value) => {
              requests[j] = episodes[j].next(value);
            },
            (e) => {
              requests[j] = episodes[j].fail(e);
            },
          ),
        );
        req = PENDING;
      }
      requests[j] = req;
      if (req === WAITING) waiting.push(j);
    }
    if (pending.length > 0) return Promise.all(pending).then(() => drive(policy, wave));
    if (waiting.length === 0) return;
    const feed = (actions: (Action<unknown> | Error)[]) => {
      if (!Array.isArray(actions) || actions.length !== waiting.length) {
        fail(
          new Error(
            `policy ${policy.id}: actBatch returned ${Array.isArray(actions) ? actions.length : 'no'} actions for ${waiting.length} contexts`,
          ),
        );
        return;
      }
      waiting.forEach((j, k) => {
        const a = actions[k];
        requests[j] = a instanceof Error ? episodes[j].fail(a) : episodes[j].next(a);
      });
    };
    const fail = (e: unknown) => {
      for (const j of waiting) requests[j] = episodes[j].fail(e);
    };
    let actions: MaybePromise<(Action<unknown> | Error)[]>;
    try {
      actions = policy.actBatch(waiting.map((j) => contexts[j]!));
    } catch (e) {
      fail(e);
      continue;
    }
    if (isPromise(actions)) {
      return actions.then(feed, fail).then(() => drive(policy, wave));
    }
    feed(actions);
  }
}
