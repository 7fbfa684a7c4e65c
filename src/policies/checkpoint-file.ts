// Finding and reading a policy checkpoint named on the command line: the file itself, or
// policy.safetensors inside a run directory. Shared by every checkpoint loader in CHECKPOINT_LOADERS.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../core/errors.ts';
import { type Checkpoint, parseCheckpoint } from '../nn/checkpoint.ts';
import { decodeSafetensors } from '../nn/safetensors.ts';

/** The file a run directory holds its policy in. */
export const POLICY_FILE = 'policy.safetensors';

/**
 * The checkpoint at `path` with the file it came from, or undefined when `path` is not a safetensors
 * file (another loader may read it). A `.safetensors` file that is corrupted — truncated, a bad header,
 * a checksum that does not match, non-finite values (nn/checkpoint.ts parseCheckpoint) — or that
 * cannot be read is refused (InputError naming the file).
 */
export function readPolicyCheckpoint(path: string): { file: string; checkpoint: Checkpoint } | undefined {
  let file = path;
  let bytes: Uint8Array;
  try {
    if (statSync(path).isDirectory()) {
      file = join(path, POLICY_FILE);
      if (!existsSync(file)) return undefined;
    }
    bytes = readFileSync(file);
  } catch (e) {
    // Unreadable (permissions, a directory named *.safetensors, gone since it was named): one line.
    throw InputError.raw(
      file,
      `cannot read checkpoint (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  if (!file.endsWith('.safetensors')) {
    // Any other file is ours only if it parses as safetensors.
    try {
      decodeSafetensors(bytes, file);
    } catch {
      return undefined;
    }
  }
  return { file, checkpoint: parseCheckpoint(bytes, file) };
}

/** The `kind` a checkpoint's config declares (`mlp-policy`, `tabular-policy`, …). */
export function checkpointKind(checkpoint: Checkpoint): unknown {
  return (checkpoint.config as { kind?: unknown } | undefined)?.kind;
}
