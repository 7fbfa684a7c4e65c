// turnwise's own Parquet (`--format turnwise-parquet`, what `--format verl` wrote before it wrote verl's
// own datasets, verl.ts): one row per trajectory, for a trainer that reads a dataset of finished
// multi-turn rollouts with their credit. Columns (docs/export.md):
//   id                string         the trajectory's id
//   task              string (JSON)  the task: env, params, seed
//   messages          string (JSON)  the conversation, as the openai export writes it (weights included)
//   reward            double         the episode's return
//   success           boolean        whether the episode succeeded
//   turn_advantages   list<double>   the credit method's advantage of each turn, in turn order
//   response_ids      list<int32>    the turns' completion token ids concatenated (trace.tokens), or
//                                    null when a turn has none (the model server gave no token ids)
//   response_mask     list<int32>    1 per token the policy produced, 0 for a forced turn's tokens (an
//                                    expert prefix, an injected error: excluded from policy losses); null
//                                    like response_ids
//   token_advantages  list<double>   each token's turn advantage (the same length); null like response_ids
// The token arrays hold the responses only: the prompts' tokens are the trainer's tokenizer's business
// (it re-tokenizes `messages`), and no tokenizer lives here to guess them.
import { parquetWriteBuffer, type SchemaElement } from 'hyparquet-writer';
import type { Trajectory } from '../core/types.ts';
import type { Conversation } from './conversation.ts';
import { openaiExample } from './openai.ts';

export interface TurnwiseRow {
  id: string;
  task: string;
  messages: string;
  reward: number;
  success: boolean;
  turn_advantages: number[];
  response_ids: number[] | null;
  response_mask: number[] | null;
  token_advantages: number[] | null;
}

/** The token columns of a trajectory, or undefined when some turn has no token ids. */
export function tokenColumns(
  t: Trajectory,
  advantages: readonly number[],
): Pick<TurnwiseRow, 'response_ids' | 'response_mask' | 'token_advantages'> | undefined {
  if (!t.turns.every((turn) => Array.isArray(turn.trace?.tokens))) return undefined;
  const ids: number[] = [];
  const mask: number[] = [];
  const adv: number[] = [];
  for (const [i, turn] of t.turns.entries()) {
    for (const id of turn.trace?.tokens ?? []) {
      ids.push(id);
      mask.push(turn.forced === true ? 0 : 1);
      adv.push(advantages[i]);
    }
  }
  return { response_ids: ids, response_mask: mask, token_advantages: adv };
}

/** A trajectory's row; `threshold` weights the messages as the openai export does. */
export function turnwiseRow(
  t: Trajectory,
  c: Conversation,
  advantages: readonly number[],
  threshold: number,
): TurnwiseRow {
  const tokens = tokenColumns(t, advantages);
  return {
    id: t.id,
    task: JSON.stringify(t.task),
    messages: JSON.stringify(openaiExample(c, advantages, threshold).messages),
    reward: t.outcome.return,
    success: t.outcome.success,
    turn_advantages: [...advantages],
    response_ids: tokens?.response_ids ?? null,
    response_mask: tokens?.response_mask ?? null,
    token_advantages: tokens?.token_advantages ?? null,
  };
}

/** A required (non-null) column of a flat type. */
const required = (
  name: string,
  type: NonNullable<SchemaElement['type']>,
  converted_type?: SchemaElement['converted_type'],
): SchemaElement => ({
  name,
  type,
  repetition_type: 'REQUIRED',
  ...(converted_type === undefined ? {} : { converted_type }),
});
/** Parquet's three-level LIST (what pyarrow, pandas and verl's datasets read as list<…>), nullable. */
const list = (name: string, type: NonNullable<SchemaElement['type']>): SchemaElement[] => [
  { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', type, repetition_type: 'REQUIRED' },
];

const SCHEMA: SchemaElement[] = [
  { name: 'root', num_children: 9 },
  required('id', 'BYTE_ARRAY', 'UTF8'),
  required('task', 'BYTE_ARRAY', 'UTF8'),
  required('messages', 'BYTE_ARRAY', 'UTF8'),
  required('reward', 'DOUBLE'),
  required('success', 'BOOLEAN'),
  ...list('turn_advantages', 'DOUBLE'),
  ...list('response_ids', 'INT32'),
  ...list('response_mask', 'INT32'),
  ...list('token_advantages', 'DOUBLE'),
];

const COLUMNS = [
  'id',
  'task',
  'messages',
  'reward',
  'success',
  'turn_advantages',
  'response_ids',
  'response_mask',
  'token_advantages',
] as const satisfies readonly (keyof TurnwiseRow)[];

/** The Parquet file of the rows, as bytes. */
export function turnwiseParquet(rows: readonly TurnwiseRow[]): Uint8Array {
  const buffer = parquetWriteBuffer({
    columnData: COLUMNS.map((name) => ({ name, data: rows.map((r) => r[name]) })),
    schema: SCHEMA,
    createdBy: 'turnwise export',
  });
  return new Uint8Array(buffer);
}
