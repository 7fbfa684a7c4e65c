// FrozenLake under fog (`--fog R`, issue 29 item 3; docs/frozenlake.md): the dynamics are the env's
// own, step for step (the same transition table, the same RNG draws); only what the agent observes
// changes. The agent sees the cells within Chebyshev distance R of it — the (2R+1)² window of
// grid-world partial observation — and every cell it has seen stays revealed. Chebyshev, not
// Manhattan: the window is a square a text view shows as it is, and at R = 1 it holds every cell a
// move (slippery sideways moves included) can reach, so the agent never steps into a cell it has not
// seen; Manhattan R = 1 would too, but hides the diagonal cells the next move reveals anyway.
//
// The observation is one integer, cell + nS·seen, `seen` the bitmask of revealed cells (bit i: cell i
// in row-major order): with the map itself (the task's), it is the revealed map. So a map under fog has
// at most MAX_FOG_CELLS cells (the mask in 31 bits), tabular policies get a finite observation space on
// maps of ≤ 16 cells (nS·2^nS ≤ 2^20), and `stateKey` is the observation: (cell, revealed cells) — two
// visits of one cell with different revealed maps are different states. Features, length 4·nS:
// [seen holes | goal | position | unseen] (a hole not yet seen is 0 in the first block and 1 in the
// last). The text view writes `?` for an unseen cell. There is no exact oracle of a fogged env (the
// fully observed one would see the map): theory/fog.ts computes the belief MDP's value instead.
import { InputError } from '../../core/errors.ts';
import type { EnvSpec, StepResult } from '../../core/types.ts';
import { ACTION_NAMES, FrozenLakeEnv, type FrozenLakeWorld } from './env.ts';

/** The revealed set is a bitmask over the cells in 31 bits. */
export const MAX_FOG_CELLS = 30;
/** A finite observation space (tabular policies) up to nS·2^nS = 2^20 observations: maps of ≤ 16 cells. */
const MAX_TABULAR_OBSERVATIONS = 2 ** 20;

export interface FogSnapshot {
  s: number;
  rng: number[];
  seen: number;
}

/** The cells within Chebyshev distance `radius` of each cell, as bitmasks over the cells. */
function windows(world: FrozenLakeWorld, radius: number): Uint32Array {
  const { nrow, ncol } = world;
  const out = new Uint32Array(world.nS);
  for (let s = 0; s < world.nS; s++) {
    const r0 = Math.floor(s / ncol);
    const c0 = s % ncol;
    let m = 0;
    for (let r = Math.max(0, r0 - radius); r <= Math.min(nrow - 1, r0 + radius); r++)
      for (let c = Math.max(0, c0 - radius); c <= Math.min(ncol - 1, c0 + radius); c++)
        m |= 1 << (r * ncol + c);
    out[s] = m >>> 0;
  }
  return out;
}

/** The fog env's spec: the world's, with the observation space of (cell, revealed cells) and no oracle. */
export function fogSpec(world: FrozenLakeWorld, radius: number): EnvSpec {
  const n = world.nS;
  const obs = n * 2 ** n;
  const base = world.spec;
  return {
    ...base,
    oracle: false,
    observations: obs <= MAX_TABULAR_OBSERVATIONS ? obs : undefined,
    features: 4 * n,
    chat: {
      ...base.chat!,
      instructions: `${base.chat!.instructions} Fog: you see only the cells within ${radius} step${radius === 1 ? '' : 's'} of you (diagonals included); a cell you have not seen yet is ?, and a cell stays revealed once seen.`,
      names: ACTION_NAMES,
    },
  };
}

/** Refuses a map too large for the fog observation. */
export function checkFogMap(cells: number, radius: number, field = '--fog'): void {
  if (cells > MAX_FOG_CELLS)
    throw new InputError(
      field,
      String(radius),
      `fog needs a map of at most ${MAX_FOG_CELLS} cells (the revealed cells are a bitmask in the observation); this map has ${cells}`,
    );
}

export class FogFrozenLakeEnv {
  readonly world: FrozenLakeWorld;
  readonly spec: EnvSpec;
  readonly radius: number;
  private readonly inner: FrozenLakeEnv;
  private readonly window: Uint32Array;
  private seen = 0;

  constructor(world: FrozenLakeWorld, radius: number) {
    checkFogMap(world.nS, radius);
    this.world = world;
    this.radius = radius;
    this.inner = new FrozenLakeEnv(world);
    this.window = windows(world, radius);
    this.spec = fogSpec(world, radius);
  }

  /** The cell (row·ncol + col); -1 before the first reset. */
  get state(): number {
    return this.inner.state;
  }

  get lastOutcome(): number {
    return this.inner.lastOutcome;
  }

  private observe(s: number): number {
    return s + this.world.nS * this.seen;
  }

  reset(seed: number): number {
    const s = this.inner.reset(seed);
    this.seen = this.window[s];
    return this.observe(s);
  }

  step(action: number): StepResult<number> {
    const r = this.inner.step(action);
    this.seen = (this.seen | this.window[r.observation]) >>> 0;
    return { ...r, observation: this.observe(r.observation) };
  }

  snapshot(): FogSnapshot {
    return { ...this.inner.snapshot(), seen: this.seen };
  }

  restore(snapshot: unknown, seed?: number): void {
    this.inner.restore(snapshot, seed);
    const seen = (snapshot as Partial<FogSnapshot>).seen;
    if (!Number.isInteger(seen) || (seen as number) < 0 || (seen as number) >= 2 ** this.world.nS)
      throw new InputError('snapshot', snapshot, `expected {s, rng, seen: 0..2^${this.world.nS} − 1}`);
    this.seen = seen as number;
  }

  /** (cell, revealed cells): the observation itself. */
  stateKey(o: number): number {
    return o;
  }

  text(o: number): string {
    return fogText(this.world, o);
  }

  features(o: number): Float32Array {
    return fogFeatures(this.world, o);
  }
}

/** The cell and the revealed-cell mask of a fog observation. */
export function decodeFog(nS: number, o: number): { cell: number; seen: number } {
  return { cell: o % nS, seen: Math.floor(o / nS) };
}

/** The text view with `?` for every cell not yet seen. */
export function fogText(world: FrozenLakeWorld, o: number): string {
  const { cell, seen } = decodeFog(world.nS, o);
  const full = world.text(cell).split('\n');
  return full
    .map((line, r) =>
      // The goal is known (the prior's layout); every other cell shows once seen.
      [...line]
        .map((ch, c) => {
          const i = r * world.ncol + c;
          return (seen >>> i) & 1 || world.kind[i] === 2 ? ch : '?';
        })
        .join(''),
    )
    .join('\n');
}

/** [seen holes | goal | position | unseen], length 4·nS. */
export function fogFeatures(world: FrozenLakeWorld, o: number): Float32Array {
  const n = world.nS;
  const { cell, seen } = decodeFog(n, o);
  const f = new Float32Array(4 * n);
  for (let i = 0; i < n; i++) {
    const visible = ((seen >>> i) & 1) === 1;
    if (world.kind[i] === 2) f[n + i] = 1;
    else if (!visible) f[3 * n + i] = 1;
    else if (world.kind[i] === 1) f[i] = 1;
  }
  f[2 * n + cell] = 1;
  return f;
}
