// The worlds the budget study runs in (issue 11, point 6). A world is a way of making the study's
// FrozenLake maps and of cloning the base on them; every finding carries the world it was measured in.
//
// - `slippery`: Gymnasium's 1/3-slippery ice; the base cloned on the expert's own rollouts; the
//   policies see the map and their cell. Ordinary play already visits every state an injected error
//   leads to, so the paper's mechanism (RL learns what to do *after* an error) has nothing to show.
// - `narrow` — designed and written down here BEFORE it was ever run (NARROW_DESIGN, also in the
//   README): the paper's premise made literal. Little slip (the ice moves the intended way with
//   probability 0.9), so ordinary play stays near the expert's path; a base with good local judgement
//   and narrow coverage, cloned on the expert's *intended* path (its demonstrations are played on ice
//   that never slips, judged by the true, slippery Q*); RL sampling at τ = 1 (GRPO samples from π
//   itself), so that it meets its own slips and mistakes while training; and policies that observe
//   their last action and whether it went as intended (as an LLM sees its context): the observation
//   is the cell and a memory m ∈ {none, (action, moved as intended), (action, slipped)}.
//
// The memory is part of the state, so every exact computation stays exact: the `narrow` env is a
// tabular MDP over (memory, cell) pairs (9 · nS states), built from Gymnasium's transition table of
// the map, with its own TabularOracle; Q* of a (memory, cell) pair equals Q* of the cell.
import { InputError } from '../../core/errors.ts';
import { Rng, STREAM } from '../../core/rng.ts';
import type { Env, EnvFactory, EnvSpec, StepResult, Task } from '../../core/types.ts';
import {
  ACTION_NAMES,
  type FrozenLakeEnv,
  type FrozenLakeWorld,
  transitionTable,
} from '../../envs/frozenlake/env.ts';
import { envs as registry } from '../../envs/index.ts';
import { compileModel, type TabularModel, TabularOracle, type Transition } from '../../envs/tabular.ts';
import type { MoveClassifier } from '../../eval/states.ts';

/** Where every env of the study comes from: an env factory whose `make` is synchronous (the exact
 * stages read oracles directly). The registry (envs/index.ts's `envs`) is one; worldEnvs makes the others. */
export interface MakeEnv extends EnvFactory {
  make(task: Task): Env<unknown, unknown>;
}

export const WORLD_IDS = ['slippery', 'narrow'] as const;
export type WorldId = (typeof WORLD_IDS)[number];

/** What a world changes in the study's config (config.ts applies it). */
export interface WorldSettings {
  /** Probability that a move goes the intended way (Gymnasium's success_rate). */
  successRate: number;
  /** rollouts: the expert's own rollouts on the real ice; intended: on ice that never slips. */
  demos: 'rollouts' | 'intended';
  /** The policies observe their last action and whether it went as intended. */
  memory: boolean;
}

export const WORLD_SETTINGS: Record<WorldId, WorldSettings> = {
  slippery: { successRate: 1 / 3, demos: 'rollouts', memory: false },
  narrow: { successRate: 0.9, demos: 'intended', memory: true },
};

/** The pre-registered design of the second world: written before its first run, reported verbatim. */
export const NARROW_DESIGN = {
  premise:
    'A base with good local judgement but narrow coverage, in a world where normal play stays on its path, fine-tuned by RL that meets its own errors: the setting in which Zhu et al. 2026 find RL’s advantage at error states.',
  world:
    'FrozenLake random maps as in `slippery`, but the ice moves the intended way with probability 0.9 (each perpendicular way 0.05); the base is cloned on the expert’s intended path (its demonstrations played on ice that never slips, the expert judging by the true Q*); RL samples at τ = 1; every policy observes its last action and whether it moved as intended.',
  predictions: {
    'rl-beats-base': 'held: RL gains at T_train.',
    'error-contrast':
      'held: the base never saw off-path states (nor a slipped last move), RL met them in training, so RL’s win rate is higher at error states than at their pre-error states.',
    'recovery-did': 'held, for the same reason: RL’s exact gain is larger after an error.',
    'normal-states': 'not held: on the path RL and the base both copy good play (win ≈ ½).',
    'llr-sign': 'held: RL up-weights the on-path moves the base made when it succeeded.',
    'nll-plausible': 'held: RL’s actions stay close to the base’s own.',
    'lead-shrinks': 'not held (no mechanism specific to this world).',
    'lead-reverses': 'not held.',
    'training-curves': 'not held: RL’s actions improve step by step as its success rises.',
    'budgetmix-robust': 'not held (as in `slippery`).',
  } as Record<string, string>,
} as const;

/** Memories: 0 none (start), 1 + a: moved the intended way with a, 5 + a: slipped with a. */
export const MEMORIES = 9;
const INTENDED = 1;
const SLIPPED = 5;

/** The (memory, cell) MDP of one map: built once per map, shared by its envs. */
class MemoryWorld {
  readonly inner: FrozenLakeWorld;
  readonly nS: number;
  readonly model: TabularModel;
  readonly spec: EnvSpec;
  /** Per (memory, cell) outcome k of each (x, a): whether it is the intended move (for intended-only play). */
  readonly intended: Uint8Array;
  private oracleCache: TabularOracle<number> | undefined;
  private readonly featureCache: (Float32Array | undefined)[];

  constructor(inner: FrozenLakeWorld) {
    this.inner = inner;
    const n = inner.nS;
    this.nS = MEMORIES * n;
    const P = transitionTable(inner.config);
    const intended: number[] = [];
    const Pm: Transition[][][] = [];
    for (let m = 0; m < MEMORIES; m++) {
      for (let s = 0; s < n; s++) {
        Pm[m * n + s] = P[s].map((outcomes, a) =>
          outcomes.map(([p, next, r, term], k): Transition => {
            // Gymnasium lists a slippery move's outcomes as (a−1, a, a+1): the middle one is intended.
            const isIntended = outcomes.length === 1 || k === 1;
            intended.push(isIntended ? 1 : 0);
            return [p, ((isIntended ? INTENDED : SLIPPED) + a) * n + next, r, term];
          }),
        );
      }
    }
    this.model = compileModel(Pm);
    this.intended = Uint8Array.from(intended);
    this.featureCache = new Array(this.nS);
    this.spec = memorySpec(inner.spec);
  }

  oracle(): TabularOracle<number> {
    this.oracleCache ??= new TabularOracle<number>(
      this.model,
      [...this.inner.starts],
      (o) => o,
      (s) => s,
    );
    return this.oracleCache;
  }

  /** The cell's features (frozenlake's 3·nS) followed by the memory one-hot. Cached, shared. */
  features(x: number): Float32Array {
    let f = this.featureCache[x];
    if (f === undefined) {
      const n = this.inner.nS;
      const cell = this.inner.features(x % n);
      f = new Float32Array(cell.length + MEMORIES);
      f.set(cell);
      f[cell.length + Math.floor(x / n)] = 1;
      this.featureCache[x] = f;
    }
    return f;
  }

  text(x: number): string {
    const n = this.inner.nS;
    const m = Math.floor(x / n);
    const last =
      m === 0
        ? 'no move yet'
        : `last move ${ACTION_NAMES[(m - 1) % 4]}, ${m < SLIPPED ? 'as intended' : 'slipped'}`;
    return `${this.inner.text(x % n)}\n(${last})`;
  }
}

function memorySpec(inner: EnvSpec): EnvSpec {
  const n = inner.observations!;
  return { ...inner, observations: MEMORIES * n, features: 3 * n + MEMORIES };
}

const worlds = new WeakMap<FrozenLakeWorld, MemoryWorld>();
function memoryWorld(inner: FrozenLakeWorld): MemoryWorld {
  let w = worlds.get(inner);
  if (w === undefined) {
    w = new MemoryWorld(inner);
    worlds.set(inner, w);
  }
  return w;
}

interface MemorySnapshot {
  x: number;
  rng: number[];
}

/** FrozenLake over (memory, cell) states; `intendedOnly`: every move goes the intended way. */
export class MemoryEnv implements Env<number, number> {
  readonly world: MemoryWorld;
  readonly spec: EnvSpec;
  private readonly intendedOnly: boolean;
  private x = -1;
  private rng: Rng = Rng.derive(0, STREAM.env);

  constructor(inner: FrozenLakeWorld, intendedOnly = false) {
    this.world = memoryWorld(inner);
    this.spec = this.world.spec;
    this.intendedOnly = intendedOnly;
  }

  reset(seed: number): number {
    this.rng = Rng.derive(seed, STREAM.env);
    const starts = this.world.inner.starts;
    this.x = starts.length === 1 ? starts[0] : starts[this.rng.int(starts.length)];
    return this.x;
  }

  step(action: number): StepResult<number> {
    if (this.x < 0) throw new Error('frozenlake (memory): step() before reset()');
    if (typeof action !== 'number' || !Number.isInteger(action) || action < 0 || action > 3) {
      return { observation: this.x, reward: 0, terminated: false, info: { valid: false } };
    }
    const m = this.world.model;
    const sa = this.x * 4 + action;
    let k = m.offset[sa];
    const last = m.offset[sa + 1] - 1;
    if (this.intendedOnly) {
      while (k < last && this.world.intended[k] === 0) k++;
    } else if (k < last) {
      const u = this.rng.float();
      while (k < last && m.cumProb[k] <= u) k++;
    }
    const next = m.next[k];
    this.x = next;
    const terminated = m.terminated[k] === 1;
    const kind = this.world.inner.kind[next % this.world.inner.nS];
    return {
      observation: next,
      reward: m.reward[k],
      terminated,
      info: !terminated
        ? {}
        : kind === 2
          ? { success: true }
          : kind === 1
            ? { success: false, failure: 'irreversible' }
            : {},
    };
  }

  snapshot(): MemorySnapshot {
    return { x: this.x, rng: this.rng.state() };
  }

  restore(snapshot: unknown, seed?: number): void {
    const snap = snapshot as MemorySnapshot;
    if (
      typeof snap !== 'object' ||
      snap === null ||
      !Number.isInteger(snap.x) ||
      snap.x < 0 ||
      snap.x >= this.world.nS ||
      !Array.isArray(snap.rng) ||
      snap.rng.length !== 4
    ) {
      throw new InputError('snapshot', snapshot, `expected {x: 0..${this.world.nS - 1}, rng: [4 integers]}`);
    }
    this.x = snap.x;
    this.rng = seed === undefined ? Rng.fromState(snap.rng) : Rng.derive(seed, STREAM.env);
  }

  stateKey(x: number): number {
    return x;
  }

  text(x: number): string {
    return this.world.text(x);
  }

  features(x: number): Float32Array {
    return this.world.features(x);
  }

  oracle(): TabularOracle<number> {
    return this.world.oracle();
  }
}

/** The env factory of a world: the registry's FrozenLake, or its (memory, cell) version. With
 * `intendedOnly`, moves never slip (the `intended` demonstrations). */
export function worldEnvs(memory: boolean, intendedOnly = false): MakeEnv {
  if (!memory && !intendedOnly) return registry;
  const inner = (task: Task) => (registry.make(task) as unknown as FrozenLakeEnv).world;
  return {
    make: (task) => new MemoryEnv(inner(task), intendedOnly) as unknown as Env<unknown, unknown>,
    spec: (task) => memorySpec(registry.spec(task)),
    configure: registry.configure,
  };
}

const innerWorld = (task: Task) => (registry.make(task) as unknown as FrozenLakeEnv).world;

/**
 * Whether a forced move went the intended way (issue 11, point 3: errors that move as intended and
 * errors that slip), read from the transition table. In the `narrow` world the memory of the state
 * reached says it (the outcome drawn, exactly). In `slippery` the observation is the cell alone: the
 * move went as intended when it reached the cell the intended outcome leads to — Gymnasium lists a
 * slippery move's outcomes as (a−1, a, a+1), the middle one intended; a slip that ends in the same cell
 * (against a wall) reaches the same state, so it counts as intended. On ice that never slips every move
 * is intended.
 */
export function movedAsIntended(memory: boolean): MoveClassifier {
  if (memory) {
    return (task, _observation, _action, next) => {
      const m = Math.floor((next as number) / innerWorld(task).nS);
      return m >= INTENDED && m < SLIPPED;
    };
  }
  return (task, observation, action, next) => {
    const m = innerWorld(task).model;
    const sa = (observation as number) * 4 + action;
    const k = m.offset[sa + 1] - m.offset[sa] === 1 ? m.offset[sa] : m.offset[sa] + 1;
    return m.next[k] === next;
  };
}
