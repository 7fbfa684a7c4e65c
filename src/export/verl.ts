// verl's own datasets, as its code reads them (verl-project/verl, read at 1dda039):
//
// `--format verl`: the RL dataset of verl/utils/dataset/rl_dataset.py (RLHFDataset), laid out as
// examples/data_preprocess/gsm8k.py and gsm8k_multiturn_w_tool.py write it. RLHFDataset reads
// `prompt` (config prompt_key) as the chat messages the rollout starts from, `extra_info.index`,
// `extra_info.tools_kwargs` and `need_tools_kwargs`; the reward manager hands `data_source`,
// `reward_model.ground_truth` and `extra_info` to the reward function. A row is a prompt to roll out,
// not an episode: one per task (env, params, seed) and starting prompt, its ground truth what the
// task's reward checks (given by the composition layer, which knows the envs), and in extra_info the
// task and what the file's trajectories of it did (samples, successes, mean return). A conversation that
// offered tools gets tools_kwargs[tool].create_kwargs = {ground_truth, task}: what verl's tool agent loop
// (verl/experimental/agent_loop/tool_agent_loop.py _call_tool) hands to a BaseTool's create().
//
// `--format verl-sft`: the multi-turn SFT dataset of verl/utils/dataset/multiturn_sft_dataset.py
// (MultiTurnSFTDataset): `messages` (messages_key) and `tools` (tools_key), read with pandas and turned
// into Python lists and dicts (convert_nested_value_to_list_recursive), then passed as they are to the
// tokenizer's chat template (`tools=` and the messages). So both are typed, not JSON text: verl stopped
// json.loads-ing `tools` (#2671), and its own tool-calling SFT data (tests/utils/dataset/
// test_multiturn_sft_dataset_on_cpu.py, the retool recipe) holds `arguments` as a dict — the shape of
// the assistant messages its agent loop builds (_build_assistant_message: content "" when none,
// tool_calls [{type, function {name, arguments: the parsed object}, id}]). verl trains on every
// assistant message (no per-message mask since #4403), so a row is a whole trajectory and the
// composition layer chooses which (the successful ones unless told otherwise).
import type { Task, Trajectory } from '../core/types.ts';
import type { Conversation, ExportTool } from './conversation.ts';
import {
  BOOLEAN,
  DOUBLE,
  INT64,
  inferType,
  listOf,
  opt,
  type ParquetField,
  req,
  STRING,
  struct,
  writeParquet,
} from './parquet.ts';
import { taskType } from './tokens.ts';

// ── RL: one row per prompt ────────────────────────────────────────────────────────────────────────

/** What the composition layer knows of a task's env. */
export interface VerlTaskInfo {
  /** verl's `data_source`: the reward function dispatches on it. */
  dataSource: string;
  ability: string;
  /** What the task's reward checks (the env's gold), or null when the env is unknown. */
  groundTruth: string | null;
}

export interface VerlPromptMessage {
  role: string;
  content: string;
}

export interface VerlToolKwargs {
  create_kwargs: { ground_truth: string | null; task: Task };
}

export interface VerlRlRow {
  data_source: string;
  prompt: VerlPromptMessage[];
  ability: string;
  reward_model: { style: 'rule'; ground_truth: string | null };
  extra_info: {
    split: string;
    index: number;
    task: Task;
    /** The file's trajectories that started from this prompt, how many succeeded, their mean return. */
    samples: number;
    successes: number;
    mean_return: number;
    need_tools_kwargs: boolean;
    /** Per tool the conversation was offered; null when it was offered none. */
    tools_kwargs: Record<string, VerlToolKwargs> | null;
  };
}

/** The messages a conversation starts from (those before its first action), as verl's prompt of
 * {role, content}; why not, when they hold a tool call (a harness that prefilled its history). */
export function verlPrompt(c: Conversation): VerlPromptMessage[] | { reason: string } {
  const before = c.messages.slice(0, c.turnMessage[0]);
  if (before.length === 0) return { reason: 'its first action has no prompt before it' };
  const i = before.findIndex((m) => m.tool_calls !== undefined);
  if (i >= 0)
    return {
      reason: `message ${i}, before the first action, calls tools: verl's prompt holds {role, content} only`,
    };
  return before.map((m) => ({ role: m.role, content: m.content ?? '' }));
}

/** JSON with object keys sorted: one key for equal values whatever the key order. */
const canonical = (x: unknown): string =>
  JSON.stringify(x, (_, v) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

/** The RL rows of the trajectories: one per task and starting prompt, in the order first seen. */
export function verlRlRows(
  items: readonly { t: Trajectory; prompt: VerlPromptMessage[]; tools?: readonly ExportTool[] }[],
  info: (task: Task) => VerlTaskInfo,
  split: string,
): VerlRlRow[] {
  const groups = new Map<string, (typeof items)[number][]>();
  for (const it of items) {
    const key = `${canonical(it.t.task)}\n${JSON.stringify(it.prompt)}`;
    const g = groups.get(key);
    if (g === undefined) groups.set(key, [it]);
    else g.push(it);
  }
  return [...groups.values()].map((g, index) => {
    const { t, prompt } = g[0];
    const i = info(t.task);
    const names = [...new Set(g.flatMap((x) => (x.tools ?? []).map((tool) => tool.function.name)))];
    const kwargs: VerlToolKwargs = { create_kwargs: { ground_truth: i.groundTruth, task: t.task } };
    return {
      data_source: i.dataSource,
      prompt,
      ability: i.ability,
      reward_model: { style: 'rule', ground_truth: i.groundTruth },
      extra_info: {
        split,
        index,
        task: t.task,
        samples: g.length,
        successes: g.filter((x) => x.t.outcome.success).length,
        mean_return: g.reduce((s, x) => s + x.t.outcome.return, 0) / g.length,
        need_tools_kwargs: names.length > 0,
        tools_kwargs: names.length > 0 ? Object.fromEntries(names.map((n) => [n, kwargs])) : null,
      },
    };
  });
}

/** verl's RL Parquet: data_source, prompt list<struct{role, content}>, ability, reward_model
 * struct{style, ground_truth}, extra_info struct{split, index, task, samples, successes, mean_return,
 * need_tools_kwargs, tools_kwargs (only when some row was offered tools)}. */
export function verlRlParquet(rows: readonly VerlRlRow[]): Uint8Array {
  const tasks = rows.map((r) => r.extra_info.task);
  const kwargs = rows.map((r) => r.extra_info.tools_kwargs);
  const extra: ParquetField[] = [
    req('split', STRING),
    req('index', INT64),
    req('task', taskType(tasks)),
    req('samples', INT64),
    req('successes', INT64),
    req('mean_return', DOUBLE),
    req('need_tools_kwargs', BOOLEAN),
    ...(kwargs.some((k) => k !== null) ? [opt('tools_kwargs', inferType(kwargs))] : []),
  ];
  const fields = [
    req('data_source', STRING),
    req('prompt', listOf(struct(req('role', STRING), req('content', STRING)))),
    req('ability', STRING),
    req('reward_model', struct(req('style', STRING), opt('ground_truth', STRING))),
    req('extra_info', struct(...extra)),
  ];
  return writeParquet(fields, rows as unknown as Record<string, unknown>[]);
}

// ── SFT: one row per trajectory ───────────────────────────────────────────────────────────────────

export interface VerlSftMessage {
  role: string;
  content: string;
  tool_calls?: {
    id: string;
    type: 'function';
    function: { name: string; arguments: Record<string, unknown> };
  }[];
  tool_call_id?: string;
}

export interface VerlSftRow {
  messages: VerlSftMessage[];
  /** The tools the conversation was offered (OpenAI's declaration); empty when none. */
  tools: ExportTool[];
  id: string;
  task: Task;
  reward: number;
  success: boolean;
}

const isObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === 'object' && x !== null && !Array.isArray(x);

function parsedArguments(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** A trajectory's SFT row; why not, when a tool call's arguments are not a JSON object (verl parses
 * them into a dict, and a struct holds only an object). */
export function verlSftRow(t: Trajectory, c: Conversation): VerlSftRow | { reason: string } {
  const messages: VerlSftMessage[] = [];
  for (const [i, m] of c.messages.entries()) {
    const out: VerlSftMessage = { role: m.role, content: m.content ?? '' };
    if (m.tool_calls !== undefined) {
      out.tool_calls = [];
      for (const call of m.tool_calls) {
        const args = parsedArguments(call.function.arguments);
        if (args === undefined)
          return {
            reason: `message ${i} calls ${call.function.name} with arguments that are not a JSON object (verl-sft stores them as a struct)`,
          };
        out.tool_calls.push({
          id: call.id,
          type: 'function',
          function: { name: call.function.name, arguments: args },
        });
      }
    }
    if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    messages.push(out);
  }
  return {
    messages,
    tools: c.tools === undefined ? [] : [...c.tools],
    id: t.id,
    task: t.task,
    reward: t.outcome.return,
    success: t.outcome.success,
  };
}

/** verl's multi-turn SFT Parquet: messages list<struct{role, content, tool_calls list<struct{id, type,
 * function struct{name, arguments}}>, tool_call_id}>, tools list<struct{type, function struct{name,
 * description, parameters}}>, then id, task, reward, success (columns verl does not read). `arguments`
 * and `parameters` are structs inferred over the file (parquet.ts). */
export function verlSftParquet(rows: readonly VerlSftRow[]): Uint8Array {
  const calls = rows.flatMap((r) => r.messages.flatMap((m) => m.tool_calls ?? []));
  const declared = rows.flatMap((r) => r.tools);
  const call = struct(
    req('id', STRING),
    req('type', STRING),
    req(
      'function',
      struct(req('name', STRING), opt('arguments', inferType(calls.map((c) => c.function.arguments)))),
    ),
  );
  const message = struct(
    req('role', STRING),
    req('content', STRING),
    opt('tool_calls', listOf(call)),
    opt('tool_call_id', STRING),
  );
  const tool = struct(
    req('type', STRING),
    req(
      'function',
      struct(
        req('name', STRING),
        opt('description', STRING),
        opt('parameters', inferType(declared.map((d) => d.function.parameters))),
      ),
    ),
  );
  const fields = [
    req('messages', listOf(message)),
    req('tools', listOf(tool)),
    req('id', STRING),
    req('task', taskType(rows.map((r) => r.task))),
    req('reward', DOUBLE),
    req('success', BOOLEAN),
  ];
  return writeParquet(fields, rows as unknown as Record<string, unknown>[]);
}
