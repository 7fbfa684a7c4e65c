// A transformer as one checkpoint file (nn/checkpoint.ts: safetensors + checksum): the parameters under
// their HF Llama names and `__metadata__.turnwise` = {"arch": "llama", …TransformerConfig}, so the file
// says what to build before loading. `extra` carries other metadata entries (a tokenizer, a summary).
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import {
  type Checkpoint,
  checkpointBytes,
  loadParameters,
  parseCheckpoint,
  readCheckpointFile,
  writeCheckpoint,
} from './checkpoint.ts';
import type { Optimizer } from './optim.ts';
import { checkTransformerConfig, Transformer } from './transformer.ts';

export const TRANSFORMER_ARCH = 'llama';

export function transformerCheckpointBytes(
  model: Transformer,
  optimizer?: Optimizer,
  extra: Record<string, string> = {},
): Uint8Array {
  return checkpointBytes(
    model.namedParameters(),
    { arch: TRANSFORMER_ARCH, ...model.config },
    optimizer,
    extra,
  );
}

export function saveTransformer(
  path: string,
  model: Transformer,
  optimizer?: Optimizer,
  extra: Record<string, string> = {},
): void {
  writeCheckpoint(path, transformerCheckpointBytes(model, optimizer, extra));
}

/** The model a checkpoint describes, with its weights; refuses (InputError naming the file) a file
 * that is not a transformer checkpoint or whose tensors do not fit its config. */
export function transformerFromCheckpoint(ck: Checkpoint, source: string): Transformer {
  const cfg = ck.config as Record<string, unknown> | undefined;
  if (typeof cfg !== 'object' || cfg === null || cfg.arch !== TRANSFORMER_ARCH)
    throw InputError.raw(
      source,
      `not a transformer checkpoint (__metadata__.turnwise.arch is ${JSON.stringify(cfg?.arch)}, expected "${TRANSFORMER_ARCH}")`,
    );
  const { arch: _, ...rest } = cfg;
  const model = new Transformer(checkTransformerConfig(rest, `${source}: config`), Rng.derive(0));
  loadParameters(model.namedParameters(), ck.params, source);
  return model;
}

export function loadTransformer(path: string): { model: Transformer; checkpoint: Checkpoint } {
  const checkpoint = readCheckpointFile(path);
  return { model: transformerFromCheckpoint(checkpoint, path), checkpoint };
}

export function transformerFromBytes(bytes: Uint8Array, source: string): Transformer {
  return transformerFromCheckpoint(parseCheckpoint(bytes, source), source);
}
