// The `transformer:` policy spec: a freshly initialised transformer over the text prompt,
// `transformer:layers=2,d=64,heads=4,ctx=512,vocab=…,seed=0[,tokenizer=FILE,temperature=,top_p=,
// max_tokens=,mode=tools|text,budgetAware=0|1]` (policies/transformer.ts freshTransformerPolicy), or a
// saved one sampled otherwise, `transformer:from=RUN[,temperature=,top_p=,max_tokens=]` (greedy
// evaluation of a policy trained at τ = 1: `transformer:from=runs/lm,temperature=0`).
import { InputError } from '../core/errors.ts';
import type { EnvSpec } from '../core/types.ts';
import { type AnyPolicy, flag, type PolicyKind, positiveInt, seedValue } from './spec-values.ts';
import {
  type FreshTransformerOptions,
  freshTransformerPolicy,
  loadTransformerPolicy,
  TransformerPolicy,
} from './transformer.ts';

/** What a saved model fixes: given with from=, these are refused rather than ignored. */
const FIXED_BY_CHECKPOINT = [
  'layers',
  'd',
  'heads',
  'ctx',
  'vocab',
  'seed',
  'tokenizer',
  'mode',
  'budgetAware',
];

/** `transformer:from=RUN,…`: the saved policy with its sampling (τ, p, max_tokens) replaced. */
function savedTransformer(p: Record<string, number | string>, env: EnvSpec, id: string): AnyPolicy {
  const field = '--policy transformer.from';
  for (const k of FIXED_BY_CHECKPOINT)
    if (p[k] !== undefined)
      throw new InputError(
        `--policy transformer.${k}`,
        p[k],
        'is fixed by the saved model given as from=; only temperature, top_p and max_tokens may be changed',
      );
  const from = p.from as string;
  const saved = loadTransformerPolicy(from, env, field);
  if (saved === undefined)
    throw new InputError(field, from, 'is not a saved transformer policy (a checkpoint or run directory)');
  const { format } = transformerOptions(p);
  return new TransformerPolicy(saved.model, saved.tokenizer, { ...saved.format, ...format }, env, id, field);
}

/** The options of a `transformer:` spec's values, as its parameter readers left them. */
function transformerOptions(p: Record<string, number | string>): FreshTransformerOptions {
  const n = (k: string) => p[k] as number | undefined;
  const format: FreshTransformerOptions['format'] = {};
  if (p.temperature !== undefined) format.temperature = n('temperature');
  if (p.top_p !== undefined) format.topP = n('top_p');
  if (p.max_tokens !== undefined) format.maxTokens = n('max_tokens');
  if (p.mode !== undefined) format.mode = p.mode as 'tools' | 'text';
  if (p.budgetAware !== undefined) format.budgetAware = p.budgetAware === 1;
  const tokenizer = p.tokenizer as string | undefined;
  return {
    layers: n('layers'),
    d: n('d'),
    heads: n('heads'),
    ctx: n('ctx'),
    vocab: n('vocab'),
    seed: n('seed'),
    tokenizer,
    format,
  };
}

export const TRANSFORMER_KIND: PolicyKind = {
  summary:
    'a freshly initialised transformer over the text prompt (layers=2,d=64,heads=4,ctx=512,vocab=,seed=0,tokenizer=FILE,temperature=1,top_p=1,max_tokens=,mode=tools|text,budgetAware=0), or a saved one sampled otherwise (from=RUN,temperature=,top_p=,max_tokens=)',
  params: {
    layers: positiveInt,
    d: positiveInt,
    heads: positiveInt,
    ctx: positiveInt,
    vocab: positiveInt,
    seed: seedValue,
    tokenizer: (v, field) => {
      if (v === '') throw new InputError(field, v, 'expected a tokenizer file (turnwise tokenizer train)');
      return v;
    },
    temperature: (v, field) => {
      const x = Number(v);
      if (v.trim() === '' || !(x >= 0 && x <= 10))
        throw new InputError(field, v, 'expected a number in [0, 10] (0 = greedy)');
      return x;
    },
    top_p: (v, field) => {
      const x = Number(v);
      if (v.trim() === '' || !(x > 0 && x <= 1))
        throw new InputError(field, v, 'expected a number in (0, 1]');
      return x;
    },
    max_tokens: positiveInt,
    mode: (v, field) => {
      if (v !== 'tools' && v !== 'text') throw new InputError(field, v, 'expected tools or text');
      return v;
    },
    budgetAware: flag,
    from: (v, field) => {
      if (v === '')
        throw new InputError(field, v, 'expected a saved transformer (a checkpoint or run directory)');
      return v;
    },
  },
  make: (p, env, id) =>
    p.from === undefined
      ? (freshTransformerPolicy(transformerOptions(p), env, id) as AnyPolicy)
      : savedTransformer(p, env, id),
};
