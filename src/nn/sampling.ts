// Sampling from the transformer, batched, with the log-probability of every sampled token; and teacher-
// forced scoring of given tokens under the same convention.
//
// Which log-probability: that of the distribution the token was actually drawn from — the model's
// softmax at temperature τ, restricted to the top-p nucleus and renormalised:
//   π_τ,p(i) = exp(l_i/τ) / Σ_{j∈N} exp(l_j/τ) for i in the nucleus N, 0 outside it,
// N = the fewest most-probable tokens (ties: lower id first) whose probability at τ reaches p.
// A PPO ratio or an NLL needs log π of the policy that acted, and that policy is π_τ,p; with τ = 1 and
// p = 1 (the defaults) it is the model's own softmax. τ = 0 is greedy decoding: the point mass on the
// argmax (lowest id on ties), whose log-probability is 0. scoreTokens takes the same τ and p, so the
// score of a generated continuation is the sum of its sampling log-probs (the tests check equality).
// One uniform is drawn per sampled token (greedy draws none), from the sequence's own Rng. With `top` k,
// each position also lists its k most probable tokens under the same π_τ,p (what a server's
// top_logprobs report; ties: lower id first), read from the very logits row the token was drawn from.
import { ContextOverflow, InputError } from '../core/errors.ts';
import type { Rng } from '../core/rng.ts';
import { feed, KvCache } from './kv-cache.ts';
import type { PrefixCache } from './prefix-cache.ts';
import { noGrad } from './tensor.ts';
import type { Transformer } from './transformer.ts';

export interface SamplingOptions {
  /** Softmax temperature τ ≥ 0 (0: greedy). Default 1. */
  temperature?: number;
  /** Nucleus mass p in (0, 1]. Default 1 (no truncation). */
  topP?: number;
  /** List each position's `top` most probable tokens (0: none). */
  top?: number;
}

/** A token and its log π_τ,p (−∞ outside the nucleus). */
export interface TokenLogProb {
  id: number;
  logprob: number;
}

export interface GenerateOptions extends SamplingOptions {
  /** Most tokens generated per prompt. */
  maxTokens: number;
  /** One generator per prompt (each prompt its own stream). */
  rngs: readonly Rng[];
  /** Tokens that end a generation (the stop token is kept, with its log-prob): one list for all
   * prompts, or one per prompt. */
  stop?: readonly number[] | readonly (readonly number[])[];
  /** Keys and values of earlier calls by token prefix (nn/prefix-cache.ts): a prompt starts from its
   * longest stored prefix, and each sequence is stored at the end. The same bits as without. */
  prefixCache?: PrefixCache;
}

export interface Generation {
  tokens: number[];
  /** log π_τ,p of each generated token (see the file header). */
  logProbs: number[];
  /** stop: a stop token was sampled; length: maxTokens reached; context: the context window is full. */
  finish: 'stop' | 'length' | 'context';
  /** With `top` k: per generated token, the k most probable tokens of its distribution. */
  top?: TokenLogProb[][];
}

function checkSampling(o: SamplingOptions): { temperature: number; topP: number } {
  const temperature = o.temperature ?? 1;
  const topP = o.topP ?? 1;
  if (!(Number.isFinite(temperature) && temperature >= 0))
    throw new InputError('temperature', temperature, 'a number ≥ 0 (0 = greedy)');
  if (!(topP > 0 && topP <= 1)) throw new InputError('topP', topP, 'a number in (0, 1]');
  return { temperature, topP };
}

/**
 * The sampling distribution of one logits row, as unnormalised weights w (0 outside the nucleus) and
 * log Σ w; log π(i) = log w_i − logZ. Greedy: w is the one-hot of the argmax, logZ 0.
 */
function distribution(
  logits: Float32Array,
  off: number,
  V: number,
  temperature: number,
  topP: number,
  w: Float64Array,
  order: number[],
): number {
  if (temperature === 0) {
    let best = 0;
    for (let i = 1; i < V; i++) if (logits[off + i] > logits[off + best]) best = i;
    w.fill(0);
    w[best] = 1;
    return 0;
  }
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < V; i++) if (logits[off + i] > max) max = logits[off + i];
  let z = 0;
  for (let i = 0; i < V; i++) {
    w[i] = Math.exp((logits[off + i] - max) / temperature);
    z += w[i];
  }
  if (topP < 1) {
    order.length = V;
    for (let i = 0; i < V; i++) order[i] = i;
    order.sort((a, b) => w[b] - w[a] || a - b);
    let kept = 0;
    let k = 0;
    while (k < V && kept < topP * z) kept += w[order[k++]];
    for (let j = k; j < V; j++) w[order[j]] = 0;
    z = kept;
  }
  return Math.log(z) + max / temperature;
}

/** log w_i − logZ written as l_i/τ − logZ where logZ includes the max shift. */
function logProbOf(
  logits: Float32Array,
  off: number,
  i: number,
  temperature: number,
  w: Float64Array,
  logZ: number,
): number {
  if (temperature === 0) return w[i] === 1 ? 0 : Number.NEGATIVE_INFINITY;
  return w[i] === 0 ? Number.NEGATIVE_INFINITY : logits[off + i] / temperature - logZ;
}

/** log π_τ,p of every token of the logits row at `off` (−∞ outside the nucleus): what `top_logprobs`
 * report, and what a sampled token's log-prob is one entry of. */
export function tokenLogProbs(
  logits: Float32Array,
  off: number,
  V: number,
  opts: SamplingOptions = {},
): Float64Array {
  const { temperature, topP } = checkSampling(opts);
  const w = new Float64Array(V);
  const logZ = distribution(logits, off, V, temperature, topP, w, []);
  const out = new Float64Array(V);
  for (let i = 0; i < V; i++) out[i] = logProbOf(logits, off, i, temperature, w, logZ);
  return out;
}

/** The k most probable tokens of a logits row's distribution (ties: lower id first). */
function topTokens(
  logits: Float32Array,
  off: number,
  k: number,
  temperature: number,
  w: Float64Array,
  logZ: number,
): TokenLogProb[] {
  const all: TokenLogProb[] = [];
  for (let i = 0; i < w.length; i++)
    all.push({ id: i, logprob: logProbOf(logits, off, i, temperature, w, logZ) });
  all.sort((a, b) => b.logprob - a.logprob || a.id - b.id);
  return all.slice(0, k);
}

function checkTokens(ids: ArrayLike<number>, vocab: number, what: string): void {
  for (let i = 0; i < ids.length; i++) {
    const t = ids[i];
    if (!(Number.isInteger(t) && t >= 0 && t < vocab))
      throw new InputError(`${what}[${i}]`, t, `a token id in [0, ${vocab - 1}]`);
  }
}

/**
 * Samples continuations of B prompts at once (one batched step per token over the sequences still
 * running). Each prompt's tokens, log-probs and draws are those it would get alone: lockstep equals one
 * at a time. A prompt that leaves no room for a token in the context raises ContextOverflow.
 */
export function generate(
  model: Transformer,
  prompts: readonly ArrayLike<number>[],
  opts: GenerateOptions,
): Generation[] {
  const { temperature, topP } = checkSampling(opts);
  const c = model.config;
  const B = prompts.length;
  if (!(Number.isInteger(opts.maxTokens) && opts.maxTokens >= 1))
    throw new InputError('maxTokens', opts.maxTokens, 'an integer ≥ 1');
  if (opts.rngs.length !== B)
    throw new InputError('rngs', opts.rngs.length, `one generator per prompt (${B})`);
  const stop = opts.stop ?? [];
  const perPrompt = stop.length > 0 && typeof stop[0] !== 'number';
  if (perPrompt && stop.length !== B)
    throw new InputError('stop', stop.length, `one stop list for all prompts, or one per prompt (${B})`);
  const stops: Set<number>[] = [];
  for (let b = 0; b < B; b++) {
    stops.push(new Set((perPrompt ? stop[b] : stop) as readonly number[]));
    if (prompts[b].length === 0) throw new InputError(`prompts[${b}]`, [], 'at least one token');
    if (prompts[b].length >= c.ctx)
      throw new ContextOverflow(
        `prompt ${b} has ${prompts[b].length} tokens; the context of ${c.ctx} leaves no room for a reply`,
      );
    checkTokens(prompts[b], c.vocab, `prompts[${b}]`);
  }
  const top = opts.top ?? 0;
  const out: Generation[] = prompts.map(() =>
    top > 0
      ? { tokens: [], logProbs: [], finish: 'length', top: [] }
      : { tokens: [], logProbs: [], finish: 'length' },
  );
  const cache = new KvCache(model, B);
  const w = new Float64Array(c.vocab);
  const order: number[] = [];
  let active = prompts.map((_, b) => b);
  const pc = opts.prefixCache;
  let logits = feed(
    model,
    cache,
    active,
    pc === undefined ? prompts : startFromPrefixes(pc, cache, prompts),
    true,
  );
  while (active.length > 0) {
    const next: number[] = [];
    const fed: number[][] = [];
    active.forEach((b, i) => {
      const off = i * c.vocab;
      const logZ = distribution(logits, off, c.vocab, temperature, topP, w, order);
      const token = temperature === 0 ? w.indexOf(1) : draw(w, opts.rngs[b]);
      const g = out[b];
      g.tokens.push(token);
      g.logProbs.push(logProbOf(logits, off, token, temperature, w, logZ));
      if (top > 0) g.top?.push(topTokens(logits, off, top, temperature, w, logZ));
      if (stops[b].has(token)) g.finish = 'stop';
      else if (g.tokens.length >= opts.maxTokens) g.finish = 'length';
      else if (cache.lengths[b] + 1 >= c.ctx) g.finish = 'context';
      else {
        next.push(b);
        fed.push([token]);
      }
    });
    active = next;
    if (active.length > 0) logits = feed(model, cache, active, fed, true);
  }
  // What the cache holds of each sequence: its prompt and every generated token but the last (never fed).
  if (pc !== undefined)
    prompts.forEach((p, b) => {
      pc.store(cache, b, [...Array.from(p), ...out[b].tokens.slice(0, -1)]);
    });
  return out;
}

/** Loads each prompt's longest stored prefix (leaving at least its last token to feed, whose logits
 * start the reply) into its empty sequence of `cache`; returns the tokens still to feed. */
function startFromPrefixes(
  pc: PrefixCache,
  cache: KvCache,
  prompts: readonly ArrayLike<number>[],
): ArrayLike<number>[] {
  pc.sync();
  return prompts.map(
    (p, b) => Array.prototype.slice.call(p, pc.start(cache, b, p, p.length - 1)) as number[],
  );
}

/**
 * One token from a single logits row (any log-scale scores: logits, or log-probs as llama.cpp gives
 * them) as `generate` draws it — the same distribution, draw and log π_τ,p — with its `top` most
 * probable alternatives: how a model outside this engine (a `gguf:` policy) samples with turnwise's
 * random stream.
 */
export function sampleRow(
  row: Float32Array,
  opts: SamplingOptions,
  rng: Rng,
): { token: number; logprob: number; top: TokenLogProb[] } {
  const { temperature, topP } = checkSampling(opts);
  const V = row.length;
  const w = new Float64Array(V);
  const logZ = distribution(row, 0, V, temperature, topP, w, []);
  const token = temperature === 0 ? w.indexOf(1) : draw(w, rng);
  const k = opts.top ?? 0;
  return {
    token,
    logprob: logProbOf(row, 0, token, temperature, w, logZ),
    top: k > 0 ? topTokens(row, 0, k, temperature, w, logZ) : [],
  };
}

/** Teacher forcing on a single row (any log-scale scores, as sampleRow takes): log π_τ,p of `token`,
 * with the row's `top` most probable tokens, as scoreTokensTop lists them. */
export function scoreRow(
  row: Float32Array,
  token: number,
  opts: SamplingOptions,
): { logprob: number; top: TokenLogProb[] } {
  const { temperature, topP } = checkSampling(opts);
  const w = new Float64Array(row.length);
  const logZ = distribution(row, 0, row.length, temperature, topP, w, []);
  const k = opts.top ?? 0;
  return {
    logprob: logProbOf(row, 0, token, temperature, w, logZ),
    top: k > 0 ? topTokens(row, 0, k, temperature, w, logZ) : [],
  };
}

/** One draw from unnormalised weights: the first index whose cumulative weight exceeds u·Σw. */
function draw(w: Float64Array, rng: Rng): number {
  let total = 0;
  for (let i = 0; i < w.length; i++) total += w[i];
  let u = rng.float() * total;
  let last = 0;
  for (let i = 0; i < w.length; i++) {
    if (w[i] === 0) continue;
    last = i;
    u -= w[i];
    if (u < 0) return i;
  }
  return last; // rounding at the very end of the range
}

/**
 * Teacher forcing: log π_τ,p of each action token given the prompt and the action tokens before it
 * (one cache-free forward over prompt + action). −∞ for a token the sampler could not have drawn.
 */
export function scoreTokens(
  model: Transformer,
  prompt: ArrayLike<number>,
  action: ArrayLike<number>,
  opts: SamplingOptions = {},
): number[] {
  return scoreTokensTop(model, prompt, action, opts).logProbs;
}

/** scoreTokens with, when opts.top = k > 0, each position's k most probable tokens (as generate's);
 * with a prefix cache, the forward starts from the longest stored prefix (the same bits) and the
 * sequence is stored. */
export function scoreTokensTop(
  model: Transformer,
  prompt: ArrayLike<number>,
  action: ArrayLike<number>,
  opts: SamplingOptions = {},
  prefixCache?: PrefixCache,
): { logProbs: number[]; top: TokenLogProb[][] } {
  const { temperature, topP } = checkSampling(opts);
  const c = model.config;
  const P = prompt.length;
  const A = action.length;
  if (P === 0) throw new InputError('prompt', [], 'at least one token');
  if (P + A > c.ctx)
    throw new ContextOverflow(`prompt and action hold ${P + A} tokens; the context is ${c.ctx}`);
  checkTokens(prompt, c.vocab, 'prompt');
  checkTokens(action, c.vocab, 'action');
  if (A === 0) return { logProbs: [], top: [] };
  const ids = new Int32Array(P + A - 1);
  for (let i = 0; i < P; i++) ids[i] = prompt[i];
  for (let j = 0; j + 1 < A; j++) ids[P + j] = action[j];
  let logits: Float32Array;
  let first = 0; // the position of logits' first row
  if (prefixCache === undefined) logits = noGrad(() => model.forward(ids, [1, ids.length])).data;
  else {
    prefixCache.sync();
    const cache = new KvCache(model, 1);
    first = prefixCache.start(cache, 0, ids, P - 1);
    logits = feed(model, cache, [0], [ids.subarray(first)]);
    prefixCache.store(cache, 0, ids);
  }
  const w = new Float64Array(c.vocab);
  const order: number[] = [];
  const out: number[] = [];
  const tops: TokenLogProb[][] = [];
  const k = opts.top ?? 0;
  for (let j = 0; j < A; j++) {
    const off = (P - 1 + j - first) * c.vocab;
    const logZ = distribution(logits, off, c.vocab, temperature, topP, w, order);
    out.push(logProbOf(logits, off, action[j], temperature, w, logZ));
    if (k > 0) tops.push(topTokens(logits, off, k, temperature, w, logZ));
  }
  return { logProbs: out, top: tops };
}
