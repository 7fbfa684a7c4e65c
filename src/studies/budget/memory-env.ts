// FrozenLake with a memory of the last move: the env of the `narrow` world (world.ts). The observation
// is x = m · nS + cell, the cell and a memory m ∈ {0: no move yet, 1 + a: moved the intended way with
// a, 5 + a: slipped with a}. MemoryEnv wraps FrozenLake's own env: the map's dynamics, its random
// draws, its start, its snapshots and its views of the cell are FrozenLake's; the memory is the only
// thing added, read off the outcome FrozenLake drew (FrozenLakeEnv.lastOutcome).
//
// The memory is part of the state, so every exact computation stays exact: MemoryWorld is the tabular
// MDP over (memory, cell) pairs (9 · nS states), built from Gymnasium's transition table of the map.
// Q* of a (memory, cell) pair equals Q* of the cell, bit for bit, so its oracle reads the map's own
// tables (MemoryOracle) instead of holding nine copies of them; a policy may depend on the memory, so
// exact evaluation runs on the (memory, cell) model.
import { InputError } from '../../core/errors.ts';
import type { Env, EnvSpec, Oracle, PolicyValues, StepResult, TabularPolicyFn } from '../../core/types.ts';
import { ACTION_NAMES, FrozenLakeEnv, FrozenLakeWorld, transitionTable } from '../../envs/frozenlake/env.ts';
import { compileModel, evaluatePolicy, type TabularModel, type Transition } from '../../envs/tabular.ts';

/** Memories: 0 none (start), 1 + a: moved the intended way with a, 5 + a: slipped with a. */
export const MEMORIES = 9;
export const INTENDED = 1;
export const SLIPPED = 5;

/** Which of a move's outcomes is the intended one, in Gymnasium's order: a slippery move lists
 * (a−1, a, a+1), a move that cannot slip only a. */
export const intendedOutcome = (outcomes: number): number => (outcomes === 1 ? 0 : 1);

/** The (memory, cell) MDP of one map: built once per map, shared by its envs. */
class MemoryWorld {
  readonly inner: FrozenLakeWorld;
  readonly nS: number;
  readonly model: TabularModel;
  readonly spec: EnvSpec;
  private oracleCache: MemoryOracle | undefined;
  private neverSlipsCache: FrozenLakeWorld | undefined;
  private readonly featureCache: (Float32Array | undefined)[];

  constructor(inner: FrozenLakeWorld) {
    this.inner = inner;
    const n = inner.nS;
    this.nS = MEMORIES * n;
    const P = transitionTable(inner.config);
    const Pm: Transition[][][] = [];
    for (let m = 0; m < MEMORIES; m++) {
      for (let s = 0; s < n; s++) {
        Pm[m * n + s] = P[s].map((outcomes, a) =>
          outcomes.map(([p, next, r, term], k): Transition => {
            const memory = (k === intendedOutcome(outcomes.length) ? INTENDED : SLIPPED) + a;
            return [p, memory * n + next, r, term];
          }),
        );
      }
    }
    this.model = compileModel(Pm);
    this.featureCache = new Array(this.nS);
    this.spec = memorySpec(inner.spec);
  }

  oracle(): MemoryOracle {
    this.oracleCache ??= new MemoryOracle(this.inner, this.model);
    return this.oracleCache;
  }

  /** The same map on ice that never slips: where every move goes the intended way. */
  neverSlips(): FrozenLakeWorld {
    this.neverSlipsCache ??= new FrozenLakeWorld({ ...this.inner.config, slippery: false });
    return this.neverSlipsCache;
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

/**
 * The oracle of the (memory, cell) MDP, Q* and V* read from the map's own oracle: Q*_h(m·nS + c, a) =
 * Q*_h(c, a) bit for bit, because the memory model lists each (cell, action)'s outcomes in the map's
 * order with the same probabilities, rewards and endings, and the memory reached leaves V* unchanged
 * (by induction on h: the same terms added in the same order). Only `evaluate` (a policy may read the
 * memory) runs on the (memory, cell) model. A narrow-world map thus holds one table, not nine copies.
 */
export class MemoryOracle implements Oracle<number> {
  readonly nS: number;
  readonly nA: number;
  readonly starts: readonly number[];
  private readonly cells: FrozenLakeWorld;
  private readonly model: TabularModel;

  constructor(cells: FrozenLakeWorld, model: TabularModel) {
    this.cells = cells;
    this.model = model;
    this.nS = model.nS;
    this.nA = model.nA;
    this.starts = [...cells.starts];
  }

  get horizon(): number {
    return this.cells.oracle().horizon;
  }

  state(o: number): number {
    return o;
  }

  observation(s: number): number {
    return s;
  }

  q(h: number, x: number): Float64Array {
    return this.cells.oracle().q(h, x % this.cells.nS);
  }

  v(h: number, x: number): number {
    return this.cells.oracle().v(h, x % this.cells.nS);
  }

  evaluate(pi: TabularPolicyFn, horizon: number): PolicyValues {
    return evaluatePolicy(this.model, pi, horizon);
  }
}

/** FrozenLake's spec with the memory: MEMORIES times the states, the memory one-hot after the features. */
export function memorySpec(inner: EnvSpec): EnvSpec {
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

/** FrozenLake over (memory, cell) states; `intendedOnly`: every move goes the intended way (the same
 * map on ice that never slips), while the oracle stays the real map's. */
export class MemoryEnv implements Env<number, number> {
  readonly world: MemoryWorld;
  readonly spec: EnvSpec;
  /** The FrozenLake env that moves the agent: on the map's ice, or on ice that never slips. */
  private readonly cells: FrozenLakeEnv;
  private memory = 0;

  constructor(inner: FrozenLakeWorld, intendedOnly = false) {
    this.world = memoryWorld(inner);
    this.spec = this.world.spec;
    this.cells = new FrozenLakeEnv(intendedOnly ? this.world.neverSlips() : inner);
  }

  private get x(): number {
    return this.memory * this.world.inner.nS + this.cells.state;
  }

  reset(seed: number): number {
    this.memory = 0;
    this.cells.reset(seed);
    return this.x;
  }

  step(action: number): StepResult<number> {
    const s = this.cells.state;
    if (s < 0) throw new Error('frozenlake (memory): step() before reset()');
    const r = this.cells.step(action);
    const k = this.cells.lastOutcome;
    if (k >= 0) {
      // A move was drawn (a malformed action moves nothing and leaves the memory as it was).
      const { offset } = this.cells.world.model;
      const outcomes = offset[s * 4 + action + 1] - offset[s * 4 + action];
      this.memory = (k === intendedOutcome(outcomes) ? INTENDED : SLIPPED) + action;
    }
    return { ...r, observation: this.x };
  }

  snapshot(): MemorySnapshot {
    return { x: this.x, rng: this.cells.snapshot().rng };
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
    const n = this.world.inner.nS;
    this.memory = Math.floor(snap.x / n);
    this.cells.restore({ s: snap.x % n, rng: snap.rng }, seed);
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

  oracle(): MemoryOracle {
    return this.world.oracle();
  }
}
