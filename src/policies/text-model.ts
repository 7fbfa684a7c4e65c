// A text policy as a served copy answers with it (serve/text-model.ts): its replies token by token,
// its prompt, teacher-forced scores of reply tokens, the tokens' bytes and texts, and the token that ends
// a reply. The in-process transformer (policies/transformer.ts: synchronous) and a GGUF model run by
// llama.cpp (policies/gguf.ts: asynchronous) are both one.
import type { MaybePromise, Policy, TurnContext } from '../core/types.ts';
import { GgufPolicy } from './gguf.ts';
import { type Reply, type ReplyOptions, type ScoredReply, TransformerPolicy } from './transformer.ts';

/** What a served copy needs of the model's tokenizer. */
export interface TextTokens {
  /** The bytes a token stands for (a special: its text's UTF-8). */
  tokenBytes(id: number): Uint8Array;
  /** A special token (shown by its name). */
  isSpecial(id: number): boolean;
  /** The token's string in the vocabulary (a special's name). */
  tokenText(id: number): string;
  /** A reply's text in tokens as the model writes it (special tokens' texts as ordinary text). */
  encode(text: string): MaybePromise<number[]>;
}

export interface TextModel {
  readonly id: string;
  readonly tokenizer: TextTokens;
  /** The token that ends a reply (the transformer's <|end|>; a GGUF model's end-of-generation token). */
  readonly endToken: MaybePromise<number>;
  replies(ctxs: readonly TurnContext<unknown>[], o?: ReplyOptions): MaybePromise<(Reply | Error)[]>;
  prompt(ctx: TurnContext<unknown>): MaybePromise<{ tokens: number[] }>;
  scoreReply(ctx: TurnContext<unknown>, tokens: readonly number[], top?: number): MaybePromise<ScoredReply>;
}

/** The policy as a text model, when it is one. */
export function textModelOf(policy: Policy<unknown, unknown>): TextModel | undefined {
  return policy instanceof TransformerPolicy || policy instanceof GgufPolicy ? policy : undefined;
}
