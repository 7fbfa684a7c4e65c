// Token rows of a text policy's trajectories, in the shape of verl's agent loop output (AgentLoopOutput:
// prompt_ids, response_ids, response_mask, response_logprobs, num_turns), with the credit method's
// advantage on every token: what a token-level trainer reads without re-tokenizing anything.
//
// A row is the token sequence the policy read and wrote: prompt_ids is the first turn's prompt, then
// response_ids holds the turn's reply (mask 1: the policy's own tokens, <|end|> included when it
// stopped), the tokens the next turn's prompt adds after it (mask 0: the closing <|end|> of a reply cut
// at max_tokens, the observation or tool result message, the opened <|assistant|>), the next reply,
// and so on — verl's multi-turn concatenation. response_logprobs are the sampling log-probs
// (trace.logprobs) and advantages each turn's advantage repeated over its tokens (what token-level
// GRPO uses, train/transformer-learner.ts); both 0 where the mask is 0. A forced turn (an expert
// prefix, an injected error) is context, mask 0.
//
// The context rule. One sequence holds turns t and t+1 only when turn t+1's prompt is turn t's prompt
// + its reply + new tokens, token for token. The policy rebuilds every prompt from the turns
// (policies/transformer-prompt.ts), so this fails in two ways: the context rule dropped earlier turns
// to fit ctx (`context`), or the reply, as the next prompt writes it, is not the tokens generated
// (`rewritten`: an unparseable reply's bytes that are not UTF-8, another spelling of the action).
// There a new row starts, whose prompt_ids is that turn's own prompt — the same rule as the
// behaviour-cloning sequences (train/transformer-bc.ts). So every row is exactly what the model saw: each
// mask-1 token follows exactly the tokens it was sampled after, and its log-prob is the one it was
// sampled with. A trajectory gives one row per such run of turns (`segment` 0, 1, …, `first_turn`,
// `last_turn`); no row is ever a conversation the model did not see.
import type { Task, Trajectory } from '../core/types.ts';
import {
  BOOLEAN,
  DOUBLE,
  FLOAT,
  INT32,
  INT64,
  inferType,
  listOf,
  opt,
  type ParquetType,
  req,
  STRING,
  struct,
  writeParquet,
} from './parquet.ts';

/** One turn as the policy read and wrote it (built by the composition layer, which has the policy). */
export interface TokenTurn {
  /** The prompt the policy read at this turn, in tokens. */
  prompt: readonly number[];
  /** The earlier turns that prompt holds (the context rule's `kept`). */
  kept: number;
  /** The reply's tokens: what the policy generated, or a forced turn's action as written. */
  reply: readonly number[];
  /** The sampling log-prob of each reply token; absent on a forced turn. */
  logprobs?: readonly (number | null)[];
}

/** Why a trajectory's tokens continue in a new row at a turn. */
export type SplitCause = 'context' | 'rewritten';

export interface TokenRow {
  id: string;
  /** 0, 1, …: the row's place among its trajectory's rows. */
  segment: number;
  first_turn: number;
  last_turn: number;
  task: Task;
  prompt_ids: number[];
  response_ids: number[];
  response_mask: number[];
  response_logprobs: number[];
  advantages: number[];
  /** verl's count: the row's chat messages but the system one (user, assistant and tool). */
  num_turns: number;
  reward: number;
  success: boolean;
}

export interface TokenRows {
  rows: TokenRow[];
  /** Each turn where a new row started, and why. */
  splits: { turn: number; cause: SplitCause }[];
}

const startsWith = (a: readonly number[], prefix: readonly number[]): boolean =>
  a.length >= prefix.length && prefix.every((x, i) => a[i] === x);

/** A trajectory's rows: `turns` one per turn, `advantages` the credit method's per turn. */
export function tokenRows(
  t: Trajectory,
  turns: readonly TokenTurn[],
  advantages: readonly number[],
): TokenRows {
  if (turns.length !== t.turns.length || advantages.length !== t.turns.length)
    throw new RangeError(
      `tokenRows: ${t.turns.length} turns, ${turns.length} token turns, ${advantages.length} advantages`,
    );
  const rows: TokenRow[] = [];
  const splits: TokenRows['splits'] = [];
  let row: TokenRow | undefined;
  /** The row's whole sequence so far (prompt_ids + response_ids). */
  let seq: number[] = [];
  turns.forEach((turn, k) => {
    if (row !== undefined && startsWith(turn.prompt, seq)) {
      for (const id of turn.prompt.slice(seq.length)) push(row, id, 0, 0, 0);
    } else {
      if (row !== undefined)
        splits.push({
          turn: k,
          cause: startsWith(turn.prompt, turns[k - 1].prompt) ? 'rewritten' : 'context',
        });
      row = {
        id: t.id,
        segment: rows.length,
        first_turn: k,
        last_turn: k,
        task: t.task,
        prompt_ids: [...turn.prompt],
        response_ids: [],
        response_mask: [],
        response_logprobs: [],
        advantages: [],
        num_turns: 0,
        reward: t.outcome.return,
        success: t.outcome.success,
      };
      rows.push(row);
      seq = [...turn.prompt];
    }
    const own = t.turns[k].forced !== true;
    turn.reply.forEach((id, j) => {
      const lp = turn.logprobs?.[j];
      push(
        row as TokenRow,
        id,
        own ? 1 : 0,
        own ? (lp ?? Number.NEGATIVE_INFINITY) : 0,
        own ? advantages[k] : 0,
      );
    });
    row.last_turn = k;
    // The prompt holds the system message, 2 messages per kept turn and this turn's; the reply is one.
    row.num_turns = 2 * turn.kept + 2;
  });
  function push(r: TokenRow, id: number, mask: number, logprob: number, advantage: number): void {
    r.response_ids.push(id);
    r.response_mask.push(mask);
    r.response_logprobs.push(logprob);
    r.advantages.push(advantage);
    seq.push(id);
  }
  return { rows, splits };
}

/** The task column: env, params (their struct inferred over the file's tasks) and seed, as turnwise's Task. */
export const taskType = (tasks: readonly Task[]): ParquetType =>
  struct(req('env', STRING), req('params', inferType(tasks.map((t) => t.params))), req('seed', INT64));

/** The Parquet file of the rows, as bytes: ids, masks and num_turns int64, log-probs and advantages
 * float32 (what verl's tensors hold), the task a struct. */
export function tokensParquet(rows: readonly TokenRow[]): Uint8Array {
  const fields = [
    req('id', STRING),
    req('segment', INT32),
    req('first_turn', INT32),
    req('last_turn', INT32),
    req('task', taskType(rows.map((r) => r.task))),
    opt('prompt_ids', listOf(INT64)),
    opt('response_ids', listOf(INT64)),
    opt('response_mask', listOf(INT64)),
    opt('response_logprobs', listOf(FLOAT)),
    opt('advantages', listOf(FLOAT)),
    req('num_turns', INT64),
    req('reward', DOUBLE),
    req('success', BOOLEAN),
  ];
  return writeParquet(fields, rows as unknown as Record<string, unknown>[]);
}
