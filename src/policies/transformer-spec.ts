// The `transformer:` policy spec: a freshly initialised transformer over the text prompt,
// `transformer:layers=2,d=64,heads=4,ctx=512,vocab=…,seed=0[,tokenizer=FILE,temperature=,top_p=,
// max_tokens=,mode=tools|text,budgetAware=0|1]` (policies/transformer.ts freshTransformerPolicy).
import { InputError } from '../core/errors.ts';
import { type AnyPolicy, flag, type PolicyKind, positiveInt, seedValue } from './spec-values.ts';
import { type FreshTransformerOptions, freshTransformerPolicy } from './transformer.ts';

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
    'a freshly initialised transformer over the text prompt (layers=2,d=64,heads=4,ctx=512,vocab=,seed=0,tokenizer=FILE,temperature=1,top_p=1,max_tokens=,mode=tools|text,budgetAware=0)',
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
  },
  make: (p, env, id) => freshTransformerPolicy(transformerOptions(p), env, id) as AnyPolicy,
};
