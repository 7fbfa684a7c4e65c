// The composition `turnwise export --format tokens` needs and export/ may not reach (it imports neither
// policies nor envs): the transformer policy named by --policy — a checkpoint, or the `transformer:`
// spec that rolled the file out (same seed, same bytes) — rebuilds each turn's prompt exactly as it
// acted (rollout/contextAt, then the policy's own prompt and context rule), and its tokenizer checks
// that the file's tokens are its own before export/tokens.ts lays them out as rows.
import { ContextOverflow, InputError } from '../../core/errors.ts';
import type { EnvSpec, Trajectory, Turn } from '../../core/types.ts';
import { envSpec, makeEnv } from '../../envs/index.ts';
import type { TokenTurn } from '../../export/index.ts';
import { makePolicy } from '../../policies/spec.ts';
import { TransformerPolicy } from '../../policies/transformer.ts';
import { contextAt } from '../../rollout/context.ts';
import { EnvCache } from '../../rollout/env-cache.ts';

const NOT_TRANSFORMER =
  'expected a transformer policy: a checkpoint (a run directory or .safetensors of `turnwise bc` or `train` with --policy transformer:…) or the transformer: spec that made the file';

/** Why a recorded turn's tokens are not this policy's, or undefined when they are: every id in its
 * vocabulary, the prompt it recorded as long as the one it builds, the reply's ids decoding to the
 * reply's recorded text under its tokenizer. */
function foreignTokens(
  policy: TransformerPolicy,
  turn: Turn,
  tokens: readonly number[],
  prompt: readonly number[],
): string | undefined {
  const tr = turn.trace ?? {};
  const vocab = policy.tokenizer.vocabSize;
  const bad = tokens.find((id) => !Number.isInteger(id) || id < 0 || id >= vocab);
  if (bad !== undefined) return `token id ${bad} is not in this policy's vocabulary of ${vocab}`;
  if (tr.usage !== undefined && tr.usage.prompt !== prompt.length)
    return `its prompt had ${tr.usage.prompt} tokens, this policy writes that prompt in ${prompt.length}`;
  if (tr.text !== undefined) {
    const body = tr.finishReason === 'stop' ? tokens.slice(0, -1) : tokens;
    if (policy.tokenizer.decode(body) !== tr.text)
      return "its reply's token ids do not decode to its reply's text under this policy's tokenizer";
  }
  return undefined;
}

/** Each turn's tokens as the policy read and wrote them, from a trajectory file and --policy. */
export class TokenSource {
  readonly spec: string;
  private readonly policies = new Map<string, TransformerPolicy>();
  private readonly envs = new EnvCache(makeEnv);

  constructor(spec: string) {
    this.spec = spec;
  }

  /** The policy for an env (loaded once per env id); refused in one line when not a transformer. */
  policyFor(env: EnvSpec): TransformerPolicy {
    let p = this.policies.get(env.id);
    if (p === undefined) {
      const made = makePolicy(this.spec, env);
      if (!(made instanceof TransformerPolicy)) throw new InputError('--policy', this.spec, NOT_TRANSFORMER);
      p = made;
      this.policies.set(env.id, p);
    }
    return p;
  }

  /**
   * The trajectory's turns in tokens, or why it has none (a turn of the policy's own without token ids
   * or log-probs: not a transformer's trajectory). Tokens that are not this policy's — another
   * tokenizer or prompt format made the file — are refused in one line naming the turn.
   */
  turns(t: Trajectory): TokenTurn[] | string {
    const policy = this.policyFor(envSpec(t.task));
    const env = this.envs.get(t.task);
    if (env instanceof Promise) throw new Error(`env ${t.task.env} is made asynchronously`);
    const out: TokenTurn[] = [];
    for (const [k, turn] of t.turns.entries()) {
      const own = turn.forced !== true;
      const tr = turn.trace;
      const tokens = own ? tr?.tokens : (tr?.tokens ?? policy.actionTokens(env.spec, turn.action));
      if (tokens === undefined || (own && !Array.isArray(tr?.logprobs)))
        return `turn ${k} has no ${own ? 'token ids and log-probs (trace.tokens, trace.logprobs): not a text policy’s turn' : 'tokens and its forced action is not one the policy can write'}`;
      if (own && tr?.logprobs?.length !== tokens.length)
        return `turn ${k} has ${tr?.logprobs?.length} log-probs for ${tokens.length} token ids`;
      let prompt: { tokens: number[]; kept: number };
      try {
        prompt = policy.prompt(contextAt(t, k, env));
      } catch (e) {
        if (!(e instanceof ContextOverflow)) throw e;
        throw new InputError(
          '--policy',
          this.spec,
          `trajectory ${t.id} turn ${k}'s prompt does not fit this policy's context: not the policy that made the file`,
        );
      }
      const foreign = own ? foreignTokens(policy, turn, tokens, prompt.tokens) : undefined;
      if (foreign !== undefined)
        throw new InputError(
          '--policy',
          this.spec,
          `trajectory ${t.id} turn ${k}: ${foreign}; not the tokenizer and prompt format that made the file`,
        );
      out.push({
        prompt: prompt.tokens,
        kept: prompt.kept,
        reply: tokens,
        ...(own ? { logprobs: tr?.logprobs } : {}),
      });
    }
    return out;
  }

  close(): Promise<void> | void {
    return this.envs.close();
  }
}
