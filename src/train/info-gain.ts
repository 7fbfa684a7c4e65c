// The information-gain reward under fog (`train --info-gain W`, issue 29 item 3;
// docs/methods-measured.md). The learner's reward is r + W·g, g the bits the step took off the entropy
// of the belief over the hidden map (theory/fog.ts: the prior of the map generator, conditioned on what
// was seen), counted only over the hidden cells on some shortest path from the agent's cell to the goal
// in the optimistic map — so a step that reveals cells behind the agent or in a corner away from the
// goal earns nothing, a revisit earns nothing (nothing new is seen), and only exploration that can
// change the route is paid. As with shaping (train/shaping.ts), the learner gets a copy of the batch:
// stored trajectories, every rollout/ metric and the final evaluation stay on the true reward. Turn t's
// observation is (cell, revealed cells) before the step; the one after it is info.cell, recorded by
// shaping's recordCells.
// On `search` (issue 29 item 3's last part) the information is the clue chain: g = n/N, the clues of the
// chain the answer needs that the step newly acquired (info.clues, the env's own accounting; credit/clue.ts
// reads the same) over the clues needed, so the whole chain is worth 1 — the success reward's scale — and
// a repeat, a malformed call or a fact about another entity earns nothing. train/info_gain is then the
// mean share of the chain acquired per trajectory.
import { z } from 'zod';
import { InputError } from '../core/errors.ts';
import type { Task, Trajectory } from '../core/types.ts';
import { clueReading } from '../credit/clue.ts';
import { FogBelief, type FogGrid, FogLimitError } from '../theory/fog.ts';

/** W ≤ 1: a map's whole entropy is ~10 bits, so W = 1 can already pay more than the goal's reward of 1. */
export const MAX_INFO_GAIN = 1;
/** The prior's p on a fixed map (the generator's default frozen probability). */
export const FIXED_MAP_P = 0.8;

export const InfoGainSchema = z.number().gt(0).lte(MAX_INFO_GAIN);

/** What info-gain reads of an env: its map (FrozenLake's world) and its fog radius. */
interface FogView {
  world: Omit<FogGrid, 'slippery' | 'successRate'> & {
    nS: number;
    config: { slippery: boolean; successRate: number };
  };
  radius: number;
}

function isFogView(v: unknown): v is FogView {
  const x = v as Partial<FogView> | undefined;
  return typeof x === 'object' && x !== null && typeof x.radius === 'number' && typeof x.world === 'object';
}

/** One exact belief per map (the prior's enumeration is shared by the maps of one layout). */
export class InfoGain {
  readonly weight: number;
  private readonly byWorld = new WeakMap<object, FogBelief>();

  constructor(weight: number) {
    this.weight = weight;
  }

  beliefOf(view: unknown, task: Task): FogBelief {
    if (!isFogView(view))
      throw new InputError('infoGain', this.weight, 'needs a FrozenLake env under fog (--fog R with R ≥ 1)');
    let b = this.byWorld.get(view.world);
    if (b === undefined) {
      const w = view.world;
      const p = (task.params as { random?: boolean; p?: number }).random
        ? ((task.params as { p?: number }).p ?? 0.8)
        : FIXED_MAP_P;
      const grid: FogGrid = {
        nrow: w.nrow,
        ncol: w.ncol,
        kind: w.kind,
        starts: [...w.starts],
        slippery: w.config.slippery,
        successRate: w.config.successRate,
      };
      try {
        b = new FogBelief(grid, view.radius, p);
      } catch (e) {
        if (e instanceof FogLimitError) throw new InputError('infoGain', this.weight, e.message);
        throw e;
      }
      this.byWorld.set(view.world, b);
    }
    return b;
  }

  private fogGains(t: Trajectory, view: unknown): number[] {
    return this.gains(t, this.beliefOf(view, t.task), (view as FogView).world.nS);
  }

  /** The information gain (bits) of every turn of one trajectory, in order. */
  gains(t: Trajectory, belief: FogBelief, nS: number): number[] {
    const freeMask = (seenCells: number): number => {
      let m = 0;
      belief.free.forEach((c, i) => {
        if ((seenCells >>> c) & 1) m |= 1 << i;
      });
      return m >>> 0;
    };
    return t.turns.map((turn) => {
      const o = turn.observation as number;
      const next = turn.info.cell;
      if (typeof next !== 'number')
        throw new Error(
          `info-gain: turn ${turn.t} of ${t.id} has no info.cell (its env was not made by recordCells)`,
        );
      return belief.gain(o % nS, freeMask(Math.floor(o / nS)), freeMask(Math.floor(next / nS)));
    });
  }

  /** Copies of the trajectories with r + W·g on every turn, their sum as outcome.return; and the mean
   * gain per trajectory (train/info_gain: bits under fog, the share of the clue chain on search). */
  apply(
    batch: readonly Trajectory[],
    viewOf: (task: Task) => unknown,
  ): { learnt: Trajectory[]; bits: number } {
    let bits = 0;
    const learnt = batch.map((t) => {
      const g = t.task.env === 'search' ? clueGains(t) : this.fogGains(t, viewOf(t.task));
      let ret = 0;
      const turns = t.turns.map((turn, i) => {
        bits += g[i];
        const reward = turn.reward + this.weight * g[i];
        ret += reward;
        return { ...turn, reward };
      });
      return { ...t, turns, outcome: { ...t.outcome, return: ret } };
    });
    return { learnt, bits: bits / Math.max(1, batch.length) };
  }
}

/** On search: the share of the clue chain each turn newly acquired (see the header). */
export function clueGains(t: Trajectory): number[] {
  return t.turns.map((turn) => {
    const r = clueReading(turn, t);
    return r.acquired / r.needed;
  });
}
