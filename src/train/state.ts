// The training checkpoint: everything a run needs to continue exactly where it stopped, in one
// safetensors file (written atomically). Tensors are grouped by prefix — `policy.` (the learner's
// parameters), `policy_optim.` (its Adam moments), `critic.` / `critic_optim.`, `stale.` (the snapshot
// that acts in cross-policy sampling), `reference.` (the KL reference) — and `__metadata__` holds the
// run state as JSON: the last completed iteration, the next trajectory row, the guidance success logs,
// the optimizers' step counts — and, as in every checkpoint, a checksum of it all (nn/checkpoint.ts).
// All randomness of iteration i is derived from (seed, i), so these are the RNG state too.
import { InputError } from '../core/errors.ts';
import { encodeCheckpoint, readCheckpointFile, writeCheckpoint } from '../nn/checkpoint.ts';
import type { NamedTensors } from '../nn/layers.ts';
import type { Optimizer, OptimizerState } from '../nn/optim.ts';
import type { NamedArray } from '../nn/safetensors.ts';
import type { GuideState } from './guidance.ts';
import type { RehearsalState } from './rehearsal.ts';

export interface RunState {
  /** Last completed iteration (−1: none). */
  iter: number;
  /** Index of the next trajectory row in the run store. */
  nextIndex: number;
  guide?: GuideState;
  /** World-model rehearsal: the counts the model has learned (train/rehearsal.ts). */
  rehearsal?: RehearsalState;
  /** Iteration at which the stale (cross-policy) snapshot was taken. */
  staleIter?: number;
  /** Wall-clock seconds the run had taken when this state was saved, earlier resumed parts included
   * (absent in checkpoints written before it was recorded). */
  seconds?: number;
}

/** The RNG state of a run: every stream of iteration i is Rng.derive(seed, stream, i, …), so the run
 * seed and the next iteration determine all randomness still to come. Saved for the record. */
export interface RngState {
  seed: number;
  nextIter: number;
  derivation: string;
}

export interface TrainParts {
  policy: NamedTensors;
  optimizer?: Optimizer;
  critic?: { params: NamedTensors; optimizer: Optimizer };
  stale?: NamedTensors;
  reference?: NamedTensors;
}

function optimizerTensors(
  prefix: string,
  o: Optimizer,
  meta: Record<string, string>,
  out: [string, NamedArray][],
): void {
  const s = o.state();
  meta[prefix] = JSON.stringify({ kind: s.kind, step: s.step, hyper: s.hyper });
  for (const [name, data] of s.buffers) out.push([`${prefix}.${name}`, { shape: [data.length], data }]);
}

export function saveTrainState(path: string, parts: TrainParts, state: RunState, seed: number): void {
  const tensors: [string, NamedArray][] = [];
  const rng: RngState = { seed, nextIter: state.iter + 1, derivation: 'Rng.derive(seed, stream, iter, …)' };
  const meta: Record<string, string> = {
    turnwise: JSON.stringify({ kind: 'train-state', version: 1, ...state }),
    rng: JSON.stringify(rng),
  };
  const add = (prefix: string, params: NamedTensors) => {
    for (const [name, t] of params) tensors.push([`${prefix}.${name}`, { shape: t.shape, data: t.data }]);
  };
  add('policy', parts.policy);
  if (parts.optimizer) optimizerTensors('policy_optim', parts.optimizer, meta, tensors);
  if (parts.critic) {
    add('critic', parts.critic.params);
    optimizerTensors('critic_optim', parts.critic.optimizer, meta, tensors);
  }
  if (parts.stale) add('stale', parts.stale);
  if (parts.reference) add('reference', parts.reference);
  writeCheckpoint(path, encodeCheckpoint(tensors, meta));
}

/** Restores a checkpoint into the given parts (every expected tensor must be present, shapes equal). */
export function loadTrainState(path: string, parts: TrainParts): RunState {
  const ck = readCheckpointFile(path);
  const fail = (message: string): never => {
    throw InputError.raw(path, message);
  };
  const all = new Map<string, NamedArray>([...ck.params]);
  const take = (prefix: string, params: NamedTensors | undefined) => {
    if (params === undefined) return;
    for (const [name, t] of params) {
      const saved = all.get(`${prefix}.${name}`);
      if (saved === undefined) fail(`tensor ${prefix}.${name} is missing`);
      if (saved!.data.length !== t.size)
        fail(`tensor ${prefix}.${name} has ${saved!.data.length} values, expected ${t.size}`);
      t.data.set(saved!.data);
    }
  };
  take('policy', parts.policy);
  take('critic', parts.critic?.params);
  take('stale', parts.stale);
  take('reference', parts.reference);
  const optim = (prefix: string, o: Optimizer | undefined) => {
    if (o === undefined) return;
    const raw = ck.metadata[prefix];
    if (raw === undefined) fail(`no ${prefix} state`);
    let m = {} as { kind: OptimizerState['kind']; step: number; hyper: Record<string, number> };
    try {
      m = JSON.parse(raw!);
    } catch {
      fail(`__metadata__.${prefix} is not valid JSON`);
    }
    const buffers: [string, Float32Array][] = [];
    for (const [name, t] of all)
      if (name.startsWith(`${prefix}.`)) buffers.push([name.slice(prefix.length + 1), t.data]);
    try {
      o.loadState({ ...m, buffers });
    } catch (e) {
      fail((e as Error).message);
    }
  };
  optim('policy_optim', parts.optimizer);
  optim('critic_optim', parts.critic?.optimizer);
  const meta = ck.config as (RunState & { kind?: string }) | undefined;
  if (meta?.kind !== 'train-state' || !Number.isInteger(meta.iter))
    fail('not a turnwise training checkpoint');
  const seconds = meta!.seconds;
  if (seconds !== undefined && !(Number.isFinite(seconds) && seconds >= 0))
    fail(`seconds ${String(seconds)} is not a finite number ≥ 0`);
  return {
    iter: meta!.iter,
    nextIndex: meta!.nextIndex,
    guide: meta!.guide,
    ...(meta!.rehearsal === undefined ? {} : { rehearsal: meta!.rehearsal }),
    staleIter: meta!.staleIter,
    seconds,
  };
}
