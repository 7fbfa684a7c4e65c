// turnwise export --format gguf --in RUN --out model.gguf [--type f32|q8_0] [--json]
// A saved transformer policy (a run directory or its checkpoint) as a GGUF file of the Llama architecture
// (export/gguf.ts), its prompt format kept as turnwise.policy so a `gguf:` policy prompts it as turnwise
// did.
import { statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { GGUF_FILE_TYPES, type GgufFileType, ggufUnsupported, transformerGguf } from '../../export/gguf.ts';
import { readSavedTransformer } from '../../policies/transformer.ts';
import { writeFileAtomic } from '../../store/atomic.ts';
import { checkOutput } from '../../store/paths.ts';
import { json, out } from '../io.ts';

/** Flags that read trajectories: refused with --format gguf rather than ignored. */
const TRAJECTORY_FLAGS = [
  ['method', '--method'],
  ['minAdvantage', '--min-advantage'],
  ['chat', '--chat'],
  ['policy', '--policy'],
  ['skipInvalid', '--skip-invalid'],
  ['split', '--split'],
  ['includeFailed', '--include-failed'],
] as const;

export function exportGguf(
  flags: { in?: string; out?: string; type?: string; json?: boolean } & Record<string, unknown>,
  cmd: Command,
): void {
  for (const [key, flag] of TRAJECTORY_FLAGS)
    if (cmd.getOptionValueSource(key) === 'cli')
      throw new InputError(
        flag,
        flags[key],
        'reads trajectories; --format gguf writes a model (--in RUN, --type)',
      );
  const type = (flags.type ?? 'f32') as GgufFileType;
  if (!(GGUF_FILE_TYPES as readonly string[]).includes(type))
    throw new InputError('--type', flags.type, `expected one of: ${GGUF_FILE_TYPES.join(', ')}`);
  const from = flags.in as string;
  if (flags.out === undefined) throw new InputError('--out', undefined, 'give the .gguf file to write');
  checkOutput(flags.out, '--out', 'file', [['--in', from]]);
  const saved = readSavedTransformer(from);
  if (saved === undefined)
    throw new InputError(
      '--in',
      from,
      'not a saved transformer policy (a run directory or checkpoint of `turnwise bc` or `train` with --policy transformer:…)',
    );
  const why = ggufUnsupported(saved.model, type);
  if (why !== undefined) throw new InputError('--type', type, why);
  const name = basename(resolve(from)).replace(/\.safetensors$/, '');
  const bytes = transformerGguf(saved.model, saved.tokenizer, {
    name,
    type,
    turnwise: { policy: JSON.stringify(saved.format) },
  });
  writeFileAtomic(flags.out, bytes);
  const c = saved.model.config;
  let params = 0;
  for (const [, t] of saved.model.namedParameters()) params += t.size;
  const summary = {
    out: flags.out,
    architecture: 'llama',
    type,
    bytes: statSync(flags.out).size,
    params,
    layers: c.layers,
    d: c.d,
    heads: c.heads,
    kvHeads: c.kvHeads,
    ctx: c.ctx,
    vocab: c.vocab,
    tiedHead: c.tiedHead,
  };
  if (flags.json) {
    json(summary);
    return;
  }
  out(
    `wrote ${flags.out}: GGUF v3, llama, ${type.toUpperCase()}, ${params} parameters (layers ${c.layers}, d ${c.d}, heads ${c.heads}, ctx ${c.ctx}, vocab ${c.vocab}, ${c.tiedHead ? 'tied head' : 'separate head'}), ${summary.bytes} bytes`,
  );
}
