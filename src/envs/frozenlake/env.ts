// FrozenLake with Gymnasium FrozenLake-v1 semantics, exactly (docs/methods.md §6): actions 0 Left, 1 Down,
// 2 Right, 3 Up; moves clamp at the edges; slippery moves go the intended way with success_rate and
// each perpendicular way ((a−1)%4, (a+1)%4) with (1−success_rate)/2; reward 1 on entering G; G and H
// terminate. The transition table is Gymnasium's env.unwrapped.P, entry for entry and in its order.
import { InputError } from '../../core/errors.ts';
import { Rng, STREAM } from '../../core/rng.ts';
import type { Env, EnvSpec, StepInfo, StepResult } from '../../core/types.ts';
import { compileModel, type TabularModel, TabularOracle, type Transition } from '../tabular.ts';

export const LEFT = 0;
export const DOWN = 1;
export const RIGHT = 2;
export const UP = 3;
export const ACTION_NAMES = ['Left', 'Down', 'Right', 'Up'] as const;

export interface FrozenLakeConfig {
  desc: readonly string[];
  slippery: boolean;
  /** Probability of moving the intended way on slippery ice (Gymnasium's success_rate, default 1/3). */
  successRate: number;
}

export const DEFAULT_SUCCESS_RATE = 1 / 3;
/** FrozenLake-v1's registered max_episode_steps (FrozenLake8x8-v1 registers 200). */
export const REGISTERED_LIMIT = 100;

/** Gymnasium's transition table P[s][a] = [[prob, next_state, reward, terminated], …]. */
export function transitionTable(cfg: FrozenLakeConfig): Transition[][][] {
  const { desc, slippery, successRate } = cfg;
  const nrow = desc.length;
  const ncol = desc[0].length;
  const failRate = (1.0 - successRate) / 2.0;
  const inc = (row: number, col: number, a: number): [number, number] => {
    if (a === LEFT) col = Math.max(col - 1, 0);
    else if (a === DOWN) row = Math.min(row + 1, nrow - 1);
    else if (a === RIGHT) col = Math.min(col + 1, ncol - 1);
    else if (a === UP) row = Math.max(row - 1, 0);
    return [row, col];
  };
  const outcome = (prob: number, row: number, col: number, a: number): Transition => {
    const [r, c] = inc(row, col, a);
    const letter = desc[r][c];
    return [prob, r * ncol + c, letter === 'G' ? 1 : 0, letter === 'G' || letter === 'H'];
  };
  const P: Transition[][][] = [];
  for (let row = 0; row < nrow; row++) {
    for (let col = 0; col < ncol; col++) {
      const s = row * ncol + col;
      const letter = desc[row][col];
      const bySA: Transition[][] = [];
      for (let a = 0; a < 4; a++) {
        if (letter === 'G' || letter === 'H') bySA.push([[1.0, s, 0, true]]);
        else if (slippery) {
          bySA.push(
            [(a + 3) % 4, a, (a + 1) % 4].map((b) => outcome(b === a ? successRate : failRate, row, col, b)),
          );
        } else bySA.push([outcome(1.0, row, col, a)]);
      }
      P[s] = bySA;
    }
  }
  return P;
}

const EMPTY: StepInfo = Object.freeze({});
const SUCCESS: StepInfo = Object.freeze({ success: true });
const HOLE: StepInfo = Object.freeze({ success: false, failure: 'irreversible' as const });
const INVALID: StepInfo = Object.freeze({ valid: false });

/** Everything that depends only on the configuration, shared by every env instance on that map. */
export class FrozenLakeWorld {
  readonly config: FrozenLakeConfig;
  readonly desc: readonly string[];
  readonly nrow: number;
  readonly ncol: number;
  readonly nS: number;
  readonly nA = 4;
  readonly model: TabularModel;
  readonly starts: Int32Array;
  readonly spec: EnvSpec;
  /** Per state: 0 frozen/start, 1 hole, 2 goal. */
  readonly kind: Uint8Array;
  private oracleCache: TabularOracle<number> | undefined;
  private featureCache: (Float32Array | undefined)[];

  constructor(config: FrozenLakeConfig) {
    this.config = config;
    this.desc = config.desc;
    this.nrow = config.desc.length;
    this.ncol = config.desc[0].length;
    this.nS = this.nrow * this.ncol;
    this.model = compileModel(transitionTable(config));
    const flat = this.desc.join('');
    this.kind = Uint8Array.from(flat, (ch) => (ch === 'H' ? 1 : ch === 'G' ? 2 : 0));
    this.starts = Int32Array.from([...flat].flatMap((ch, s) => (ch === 'S' ? [s] : [])));
    this.featureCache = new Array(this.nS);
    this.spec = {
      id: 'frozenlake',
      actions: 4,
      oracle: true,
      snapshots: true,
      observations: this.nS,
      features: 3 * this.nS,
      maxTurns: REGISTERED_LIMIT,
      chat: {
        instructions:
          'You are playing FrozenLake on a grid. Each turn you see the board, one row per line: P is you, _ frozen ice, O a hole, G the goal, X you in a hole, √ you on the goal. Reach G without falling into a hole.' +
          (config.slippery ? ' The ice is slippery: a move may slide you sideways.' : ''),
        tool: 'move',
        argument: 'direction',
        names: ACTION_NAMES,
      },
    };
  }

  oracle(): TabularOracle<number> {
    this.oracleCache ??= new TabularOracle<number>(
      this.model,
      [...this.starts],
      (o) => o,
      (s) => s,
    );
    return this.oracleCache;
  }

  /** The agent-framework text view: P player, _ frozen, O hole, G goal, X player in a hole, √ on the goal. */
  text(s: number): string {
    const lines: string[] = [];
    for (let r = 0; r < this.nrow; r++) {
      let line = '';
      for (let c = 0; c < this.ncol; c++) {
        const cell = this.desc[r][c];
        const here = r * this.ncol + c === s;
        if (cell === 'H') line += here ? 'X' : 'O';
        else if (cell === 'G') line += here ? '√' : 'G';
        else line += here ? 'P' : '_';
      }
      lines.push(line);
    }
    return lines.join('\n');
  }

  /**
   * Feature view for neural policies, length 3·nS: [hole one-hot (nS) | goal one-hot (nS) | position
   * one-hot (nS)], cell order row-major. Cached per state and shared: do not mutate.
   */
  features(s: number): Float32Array {
    let f = this.featureCache[s];
    if (f === undefined) {
      const n = this.nS;
      f = new Float32Array(3 * n);
      for (let i = 0; i < n; i++) {
        if (this.kind[i] === 1) f[i] = 1;
        else if (this.kind[i] === 2) f[n + i] = 1;
      }
      f[2 * n + s] = 1;
      this.featureCache[s] = f;
    }
    return f;
  }
}

export interface FrozenLakeSnapshot {
  s: number;
  rng: number[];
}

export class FrozenLakeEnv implements Env<number, number> {
  readonly world: FrozenLakeWorld;
  readonly spec: EnvSpec;
  private s = -1;
  private outcome = -1;
  private rng: Rng = Rng.derive(0, STREAM.env);

  constructor(world: FrozenLakeWorld) {
    this.world = world;
    this.spec = world.spec;
  }

  /** The current state (row·ncol + col); -1 before the first reset. */
  get state(): number {
    return this.s;
  }

  /** Which outcome the last step drew: its index in the transition table's list for (state, action),
   * in Gymnasium's order (a slippery move lists (a−1, a, a+1)); -1 when no step drew one since the last
   * reset or restore (or the last action was malformed). */
  get lastOutcome(): number {
    return this.outcome;
  }

  reset(seed: number): number {
    this.rng = Rng.derive(seed, STREAM.env);
    this.outcome = -1;
    const starts = this.world.starts;
    this.s = starts.length === 1 ? starts[0] : starts[this.rng.int(starts.length)];
    return this.s;
  }

  step(action: number): StepResult<number> {
    if (this.s < 0) throw new Error('frozenlake: step() before reset()');
    if (typeof action !== 'number' || !Number.isInteger(action) || action < 0 || action > 3) {
      // A malformed action is an observation for the agent, not a crash: nothing moves.
      this.outcome = -1;
      return { observation: this.s, reward: 0, terminated: false, info: INVALID };
    }
    const m = this.world.model;
    const sa = this.s * 4 + action;
    let k = m.offset[sa];
    const last = m.offset[sa + 1] - 1;
    if (k < last) {
      // Gymnasium's categorical_sample: the first outcome whose cumulative probability exceeds u.
      const u = this.rng.float();
      while (k < last && m.cumProb[k] <= u) k++;
    }
    const next = m.next[k];
    this.s = next;
    this.outcome = k - m.offset[sa];
    const terminated = m.terminated[k] === 1;
    const kind = this.world.kind[next];
    return {
      observation: next,
      reward: m.reward[k],
      terminated,
      info: !terminated ? EMPTY : kind === 2 ? SUCCESS : kind === 1 ? HOLE : EMPTY,
    };
  }

  snapshot(): FrozenLakeSnapshot {
    return { s: this.s, rng: this.rng.state() };
  }

  restore(snapshot: unknown, seed?: number): void {
    const snap = snapshot as FrozenLakeSnapshot;
    if (
      typeof snap !== 'object' ||
      snap === null ||
      !Number.isInteger(snap.s) ||
      snap.s < 0 ||
      snap.s >= this.world.nS ||
      !Array.isArray(snap.rng) ||
      snap.rng.length !== 4
    ) {
      throw new InputError('snapshot', snapshot, `expected {s: 0..${this.world.nS - 1}, rng: [4 integers]}`);
    }
    this.s = snap.s;
    this.outcome = -1;
    this.rng = seed === undefined ? Rng.fromState(snap.rng) : Rng.derive(seed, STREAM.env);
  }

  /** The state is the cell: the observation itself. */
  stateKey(s: number): number {
    return s;
  }

  text(s: number): string {
    return this.world.text(s);
  }

  features(s: number): Float32Array {
    return this.world.features(s);
  }

  oracle(): TabularOracle<number> {
    return this.world.oracle();
  }
}
