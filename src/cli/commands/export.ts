// turnwise export --in FILE.jsonl --format openai|verl|verl-sft|tokens|turnwise-parquet --out PATH
//   [--method M] [--min-advantage X] [--policy RUN] [--split S] [--include-failed];
//   turnwise export --format gguf --in RUN --out model.gguf [--type f32|q8_0] (export-gguf.ts)
// A trajectory file handed over as OpenAI fine-tuning JSONL or turnwise's own Parquet (both credited per
// turn exactly as `turnwise credit` does: creditForSpec), as verl's RL dataset (one row per task's
// starting prompt, with its ground truth: export-verl.ts) or multi-turn SFT dataset (one row per
// trajectory), or as a transformer policy's token rows in verl's agent-loop shape (export/tokens.ts; the
// prompts rebuilt by the policy, export-tokens.ts). The composition lives here: export/ may not
// reach the env registry or the policies, so the chat renderer of in-process discrete-env trajectories
// (FrozenLake: the env's chat encoding and text view, what an LLM policy was sent) is built here and
// passed in, and so are the tools a recorded trajectory's env declares.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { ToolCall, Trajectory } from '../../core/types.ts';
import { METHOD_NAMES, type MethodSpec, parseMethodSpec } from '../../credit/index.ts';
import { ENV_IDS, envSpec, makeEnv } from '../../envs/index.ts';
import {
  type ChatRenderer,
  type Conversation,
  conversationOf,
  type ExportTool,
  openaiExample,
  openaiJsonl,
  type PreferenceRow,
  preferenceJsonl,
  preferenceRow,
  type SplitCause,
  type TokenRow,
  type TokenTurn,
  tokenRows,
  tokensParquet,
  turnwiseParquet,
  turnwiseRow,
  type VerlSftRow,
  verlPrompt,
  verlRlParquet,
  verlRlRows,
  verlSftParquet,
  verlSftRow,
} from '../../export/index.ts';
import {
  actionMessage,
  buildMessages,
  type ChatMessage,
  type ChatMode,
  chatSpec,
  chatTool,
} from '../../policies/chat.ts';
import { specFile } from '../../policies/spec.ts';
import { writeFileAtomic } from '../../store/atomic.ts';
import { readTrajectories, SkippedLines } from '../../store/jsonl.ts';
import { checkOutput } from '../../store/paths.ts';
import { creditForSpec, DEFAULT_VALUE_SOURCE, exactValuesFromSpecs } from '../../studies/credit-fidelity.ts';
import { json, out, warn } from '../io.ts';
import { checkSpacesOfRegistered, num } from '../options.ts';
import { ABOUT } from './about.ts';
import { exportGguf } from './export-gguf.ts';
import { type PreferenceBy, preferencePairs, readBy, readRubricScores } from './export-preference.ts';
import { TokenSource } from './export-tokens.ts';
import { verlTaskInfo } from './export-verl.ts';

const FORMATS = ['openai', 'verl', 'verl-sft', 'tokens', 'turnwise-parquet', 'preference', 'gguf'] as const;
type Format = (typeof FORMATS)[number];
const MODES: readonly ChatMode[] = ['tools', 'text'];
/** GRPO: verl's default advantage estimator for multi-turn rollouts. */
const DEFAULT_METHOD = 'grpo';
/** The formats whose files carry credit (advantages): --method; and weights: --min-advantage. */
const CREDITED: readonly Format[] = ['openai', 'tokens', 'turnwise-parquet'];
const WEIGHTED: readonly Format[] = ['openai', 'turnwise-parquet'];
/** The formats rendered as chat conversations: --chat. */
const CHAT: readonly Format[] = ['openai', 'verl', 'verl-sft', 'turnwise-parquet', 'preference'];
const DEFAULT_SPLIT = 'train';

interface ExportFlags {
  in?: string;
  format?: string;
  out?: string;
  method: string;
  minAdvantage: string;
  chat: string;
  policy?: string;
  skipInvalid?: boolean;
  type?: string;
  split: string;
  includeFailed?: boolean;
  by: string;
  json?: boolean;
}

const registered = (t: Trajectory) => ENV_IDS.includes(t.task.env);

/** The tools of a registered tool env, as OpenAI declares them (the same schemas MCP lists). */
function envTools(t: Trajectory): ExportTool[] | undefined {
  if (!registered(t)) return undefined;
  return envSpec(t.task).tools?.map((s) => ({
    type: 'function',
    function: { name: s.name, description: s.description, parameters: s.parameters },
  }));
}

/**
 * The renderer of discrete-env trajectories: the conversation an LLM policy (policies/openai.ts) sends
 * at the last turn — buildMessages over the turns before it — followed by the last turn's own answer,
 * each action as the chat encoding writes it. One env per task, for its text view.
 */
function discreteRenderer(mode: ChatMode): ChatRenderer {
  const views = new Map<string, (o: unknown) => string>();
  return (t) => {
    if (!registered(t)) return undefined;
    const spec = envSpec(t.task);
    const chat = chatSpec(spec);
    if (chat === undefined) return spec.tools === undefined ? undefined : toolConversation(t);
    const key = JSON.stringify(t.task);
    let text = views.get(key);
    if (text === undefined) {
      const env = makeEnv(t.task);
      if (env.text === undefined) return `env ${t.task.env} has no text view to render it`;
      text = env.text.bind(env);
      views.set(key, text);
    }
    const n = t.turns.length;
    const last = t.turns[n - 1];
    const messages: ChatMessage[] = buildMessages({
      chat,
      mode,
      text,
      observation: last.observation,
      history: t.turns.slice(0, n - 1),
      turn: n - 1,
      turnsLeft: t.revealBudget ? t.budget - (n - 1) : undefined,
    });
    const a = last.action;
    messages.push(
      last.info.valid !== false && typeof a === 'number' && a >= 0 && a < chat.names.length
        ? actionMessage(chat, mode, a, last.t)
        : { role: 'assistant', content: last.trace?.text ?? '' },
    );
    return { messages, tools: mode === 'tools' ? [chatTool(chat)] : undefined };
  };
}

/**
 * The conversation of a tool env's in-process trajectory, as an agent over MCP or a chat API has it: a
 * system message naming the env, the first observation's text view as the user's message, then per
 * turn the assistant's tool call and its result (the next observation's text view) as the tool message
 * answering it; a turn whose action is not a tool call (a malformed generation) is the assistant's text,
 * and what the env answered comes back as the user's. The tools go in `tools` (envTools). The env is
 * made for its text view and closed.
 */
function toolConversation(t: Trajectory): { messages: unknown[]; tools?: ExportTool[] } | string {
  const env = makeEnv(t.task);
  try {
    if (env.text === undefined) return `env ${t.task.env} has no text view to render it`;
    const text = env.text.bind(env);
    const messages: unknown[] = [
      {
        role: 'system',
        content: `You act in the ${t.task.env} environment. Each turn, call exactly one of the tools.`,
      },
      { role: 'user', content: text(t.turns[0].observation) },
    ];
    t.turns.forEach((turn, i) => {
      const a = turn.action as Partial<ToolCall> | null;
      const call = typeof a === 'object' && a !== null && typeof a.name === 'string' ? a : undefined;
      const id = `call_${turn.t}`;
      messages.push(
        call === undefined
          ? { role: 'assistant', content: turn.trace?.text ?? JSON.stringify(turn.action) }
          : {
              role: 'assistant',
              tool_calls: [
                {
                  id,
                  type: 'function',
                  function: { name: call.name, arguments: JSON.stringify(call.arguments ?? {}) },
                },
              ],
            },
      );
      const next = t.turns[i + 1];
      if (next === undefined) return;
      const result = text(next.observation);
      messages.push(
        call === undefined
          ? { role: 'user', content: result }
          : { role: 'tool', tool_call_id: id, content: result },
      );
    });
    return { messages, tools: envTools(t) };
  } finally {
    Promise.resolve(env.close?.()).catch(() => {});
  }
}

/** `exact` and GAE with values=exact need every trajectory's env to have an exact oracle (as `credit`
 * refuses them): refused up front, naming the trajectory. */
function refuseWithoutOracle(spec: MethodSpec, trajectories: readonly Trajectory[]): void {
  const exact =
    spec.name === 'exact' ||
    (spec.name === 'gae' && (spec.params.values ?? DEFAULT_VALUE_SOURCE) === 'exact');
  if (!exact) return;
  const t = trajectories.find((x) => !registered(x) || !envSpec(x.task).oracle);
  if (t === undefined) return;
  throw new InputError(
    '--method',
    spec.label,
    `needs an env with an exact oracle, and trajectory ${t.id}'s env ${t.task.env} has none; use another method, or gae:values=zero`,
  );
}

/** The file written whole, atomically — but /dev/null (which checkOutput lets through: "discard it")
 * has no directory to put a temporary file in. */
function write(path: string, data: string | Uint8Array): void {
  if (resolve(path) === '/dev/null') writeFileSync(path, data);
  else writeFileAtomic(path, data);
}

type Kept<X> = { t: Trajectory; x: X }[];

/** The trajectories that can be exported, each with what `make` gives it; one that cannot is refused
 * (naming it) unless --skip-invalid, and so is a file with none. */
function exportable<X>(
  trajectories: readonly Trajectory[],
  make: (t: Trajectory) => X | { reason: string },
  flags: ExportFlags,
  skipped: SkippedLines | undefined,
): { kept: Kept<X>; unrenderable: string[] } {
  const kept: Kept<X> = [];
  const unrenderable: string[] = [];
  for (const t of trajectories) {
    const r = make(t);
    if (typeof r === 'object' && r !== null && 'reason' in r) {
      if (!flags.skipInvalid)
        throw InputError.raw(
          '--in',
          `trajectory ${t.id} cannot be exported: ${r.reason} (--skip-invalid skips such trajectories)`,
        );
      unrenderable.push(`${t.id}: ${r.reason}`);
    } else kept.push({ t, x: r as X });
  }
  if (kept.length === 0)
    throw InputError.raw(
      '--in',
      `${flags.in} has nothing to export: ${trajectories.length} trajectories read${unrenderable.length > 0 ? `, none renderable (${unrenderable[0]})` : ''}${skipped && skipped.count > 0 ? `; ${skipped.note(flags.in as string)}` : ''}`,
    );
  return { kept, unrenderable };
}

function warnSkipped(flags: ExportFlags, skipped: SkippedLines | undefined, unrenderable: string[]): void {
  if (skipped && skipped.count > 0) warn(skipped.note(flags.in as string));
  if (unrenderable.length > 0)
    warn(`skipped ${unrenderable.length} trajectories that cannot be rendered (first: ${unrenderable[0]})`);
}

/** --format tokens: the rows of export/tokens.ts, the prompts rebuilt by --policy (export-tokens.ts). */
async function exportTokens(
  flags: ExportFlags & { out: string; policy: string },
  spec: MethodSpec,
  trajectories: readonly Trajectory[],
  skipped: SkippedLines | undefined,
): Promise<void> {
  const source = new TokenSource(flags.policy);
  try {
    // The policy is checked before any trajectory is: a wrong --policy is named as such.
    if (trajectories.length > 0) source.policyFor(envSpec(trajectories[0].task));
    const { kept, unrenderable } = exportable<TokenTurn[]>(
      trajectories,
      (t) => {
        const r = source.turns(t);
        return typeof r === 'string' ? { reason: r } : r;
      },
      flags,
      skipped,
    );
    const advantages = creditForSpec(
      kept.map((k) => k.t),
      spec,
      () => exactValuesFromSpecs('--method'),
    );
    const rows: TokenRow[] = [];
    const splits: Record<SplitCause, number> = { context: 0, rewritten: 0 };
    kept.forEach((k, i) => {
      const r = tokenRows(k.t, k.x, advantages[i]);
      rows.push(...r.rows);
      for (const s of r.splits) splits[s.cause]++;
    });
    write(flags.out, tokensParquet(rows));
    warnSkipped(flags, skipped, unrenderable);
    const sum = (f: (r: TokenRow) => number) => rows.reduce((s, r) => s + f(r), 0);
    const turns = kept.reduce((s, k) => s + k.t.turns.length, 0);
    const prompt = sum((r) => r.prompt_ids.length);
    const response = sum((r) => r.response_ids.length);
    const policyTokens = sum((r) => r.response_mask.reduce((a, b) => a + b, 0));
    if (flags.json)
      return json({
        format: 'tokens',
        out: flags.out,
        method: spec.label,
        policy: flags.policy,
        trajectories: kept.length,
        rows: rows.length,
        turns,
        promptTokens: prompt,
        responseTokens: response,
        policyTokens,
        splits,
        unrenderable: unrenderable.length,
        ...(skipped ? { skipped } : {}),
      });
    out(
      `${spec.label}: wrote ${kept.length} trajectories as ${rows.length} rows to ${flags.out} (tokens: ${turns} turns, ${prompt} prompt and ${response} response tokens, ${policyTokens} of them the policy's; new rows where the context dropped turns: ${splits.context}, where the next prompt writes a reply otherwise: ${splits.rewritten})`,
    );
  } finally {
    await source.close();
  }
}

/** --format verl: verl's RL dataset, one row per task and starting prompt (export/verl.ts). */
function exportVerlRl(
  flags: ExportFlags & { out: string },
  render: ChatRenderer,
  trajectories: readonly Trajectory[],
  skipped: SkippedLines | undefined,
): void {
  const { kept, unrenderable } = exportable(
    trajectories,
    (t) => {
      const c = conversationOf(t, { render, toolsOf: envTools });
      if ('reason' in c) return c;
      const prompt = verlPrompt(c);
      return 'reason' in prompt ? prompt : { prompt, tools: c.tools };
    },
    flags,
    skipped,
  );
  const rows = verlRlRows(
    kept.map((k) => ({ t: k.t, ...k.x })),
    verlTaskInfo,
    flags.split,
  );
  write(flags.out, verlRlParquet(rows));
  warnSkipped(flags, skipped, unrenderable);
  const tasks = new Set(rows.map((r) => JSON.stringify(r.extra_info.task))).size;
  const truths = rows.filter((r) => r.reward_model.ground_truth !== null).length;
  if (flags.json) {
    json({
      format: 'verl',
      out: flags.out,
      split: flags.split,
      trajectories: kept.length,
      rows: rows.length,
      tasks,
      withGroundTruth: truths,
      unrenderable: unrenderable.length,
      ...(skipped ? { skipped } : {}),
    });
    return;
  }
  out(
    `wrote ${rows.length} prompts of ${tasks} tasks (from ${kept.length} trajectories; ${truths} with a ground truth) to ${flags.out} (verl, split ${flags.split})`,
  );
}

/** --format verl-sft: verl's multi-turn SFT dataset, one row per trajectory, the successful ones unless
 * --include-failed (export/verl.ts). */
function exportVerlSft(
  flags: ExportFlags & { out: string },
  render: ChatRenderer,
  trajectories: readonly Trajectory[],
  skipped: SkippedLines | undefined,
): void {
  const chosen = flags.includeFailed ? trajectories : trajectories.filter((t) => t.outcome.success);
  if (chosen.length === 0)
    throw InputError.raw(
      '--in',
      `${flags.in} has no successful trajectory to export as verl-sft (${trajectories.length} read; --include-failed exports failed ones too)`,
    );
  const { kept, unrenderable } = exportable<VerlSftRow>(
    chosen,
    (t) => {
      const c = conversationOf(t, { render, toolsOf: envTools });
      return 'reason' in c ? c : verlSftRow(t, c);
    },
    flags,
    skipped,
  );
  write(flags.out, verlSftParquet(kept.map((k) => k.x)));
  warnSkipped(flags, skipped, unrenderable);
  const turns = kept.reduce((s, k) => s + k.t.turns.length, 0);
  const successful = kept.filter((k) => k.t.outcome.success).length;
  if (flags.json) {
    json({
      format: 'verl-sft',
      out: flags.out,
      read: trajectories.length,
      trajectories: kept.length,
      successful,
      turns,
      includeFailed: flags.includeFailed === true,
      unrenderable: unrenderable.length,
      ...(skipped ? { skipped } : {}),
    });
    return;
  }
  out(
    `wrote ${kept.length} of ${trajectories.length} trajectories (${turns} turns, ${successful} successful) to ${flags.out} (verl-sft${flags.includeFailed ? '' : ': the successful ones; --include-failed adds the others'})`,
  );
}

/** --format preference: TRL's conversational preference rows, one per preferred pair of a task's
 * trajectories (export-preference.ts pairs them; export/preference.ts writes them). */
async function exportPreference(
  flags: ExportFlags & { out: string },
  by: PreferenceBy,
  render: ChatRenderer,
  trajectories: readonly Trajectory[],
  skipped: SkippedLines | undefined,
): Promise<void> {
  const scores = 'rubric' in by ? readRubricScores(flags.in as string) : undefined;
  if ('keys' in by && by.keys.includes('side-effects')) {
    const other = trajectories.find((t) => t.task.env !== 'tools');
    if (other !== undefined)
      throw new InputError(
        '--by',
        flags.by,
        `side effects are counted on the tools env only, and trajectory ${other.id}'s env is ${other.task.env}`,
      );
  }
  const { kept, unrenderable } = exportable<Conversation>(
    trajectories,
    (t) => conversationOf(t, { render, toolsOf: envTools }),
    flags,
    skipped,
  );
  const conversation = new Map(kept.map((k) => [k.t, k.x]));
  const found = await preferencePairs(
    kept.map((k) => k.t),
    by,
    scores,
  );
  const rows: PreferenceRow[] = [];
  const unshared: string[] = [];
  for (const [chosen, rejected] of found.pairs) {
    const row = preferenceRow(
      conversation.get(chosen) as Conversation,
      conversation.get(rejected) as Conversation,
    );
    if ('reason' in row) unshared.push(`${chosen.id} over ${rejected.id}: ${row.reason}`);
    else rows.push(row);
  }
  write(flags.out, preferenceJsonl(rows));
  warnSkipped(flags, skipped, unrenderable);
  if (unshared.length > 0)
    warn(`left out ${unshared.length} pairs that share no prompt (first: ${unshared[0]})`);
  const label = 'rubric' in by ? 'rubric' : by.keys.join(',');
  const rule =
    'rubric' in by ? 'the higher rubric score' : `fewer ${by.keys.join(', then fewer ')} among successes`;
  if (flags.json)
    return json({
      format: 'preference',
      out: flags.out,
      by: label,
      trajectories: kept.length,
      groups: found.groups,
      pairs: rows.length,
      unknown: found.unknown,
      unshared: unshared.length,
      unrenderable: unrenderable.length,
      ...(skipped ? { skipped } : {}),
    });
  out(
    `wrote ${rows.length} preference pairs of ${found.groups} tasks (from ${kept.length} trajectories; chosen by ${rule}${found.unknown > 0 ? `; ${found.unknown} pairs without the facts to decide` : ''}) to ${flags.out} (preference)`,
  );
}

export function registerExport(program: Command): void {
  program
    .command('export')
    .description(ABOUT.export.description)
    .option(
      '--in <file.jsonl>',
      'trajectories, one JSON object per line (gguf: the run directory or checkpoint of a transformer policy)',
    )
    .option('--format <f>', `${FORMATS.join(' | ')}`)
    .option('--out <path>', 'the file to write (.jsonl for openai, .parquet for the others); replaced whole')
    .option(
      '--method <m>',
      `credit method, as in \`turnwise credit\`: ${METHOD_NAMES.join(' | ')} | exact; parameters as m:key=value,…`,
      DEFAULT_METHOD,
    )
    .option(
      '--min-advantage <x>',
      'openai weights (and the weights inside turnwise-parquet messages): an assistant turn gets weight 1 when its advantage is > x, else 0',
      '0',
    )
    .option(
      '--chat <mode>',
      `how discrete-env trajectories (FrozenLake) are rendered as chat: ${MODES.join(' | ')} (the LLM policy's modes)`,
      'tools',
    )
    .option(
      '--policy <run>',
      'tokens: the transformer policy that made the file (a checkpoint or run directory, or its transformer: spec); it rebuilds every prompt in its tokens',
    )
    .option(
      '--skip-invalid',
      'skip (and count) malformed lines and trajectories that cannot be rendered as one conversation (tokens: that have no token ids), instead of refusing the file; the count and the first one go to stderr',
    )
    .option('--type <t>', 'gguf: the tensor type of the matrices, f32 (exact) | q8_0 (8-bit blocks of 32)')
    .option('--split <name>', "verl: the split written in each row's extra_info.split", DEFAULT_SPLIT)
    .option(
      '--include-failed',
      'verl-sft: export failed trajectories too (by default only successful ones: verl trains on every assistant message)',
    )
    .option(
      '--by <what>',
      'preference: which of two trajectories of a task is chosen — turns[,side-effects] (both successful, fewer of them, in order) or rubric (the higher score of a scored file: eval --reward … --scores)',
      'turns',
    )
    .option('--json', 'machine-readable summary')
    .action(async (flags: ExportFlags, cmd: Command) => {
      if (flags.format === undefined || !(FORMATS as readonly string[]).includes(flags.format))
        throw new InputError('--format', flags.format, `expected one of: ${FORMATS.join(', ')}`);
      const format = flags.format as Format;
      if (flags.in === undefined)
        throw new InputError(
          '--in',
          undefined,
          format === 'gguf'
            ? 'give the run directory or checkpoint of a transformer policy'
            : 'give a trajectory JSONL file',
        );
      if (format === 'gguf') return exportGguf(flags as ExportFlags & Record<string, unknown>, cmd);
      if (flags.type !== undefined)
        throw new InputError('--type', flags.type, 'is read by --format gguf only');
      if (flags.out === undefined) throw new InputError('--out', undefined, 'give the file to write');
      if (format === 'tokens' && flags.policy === undefined)
        throw new InputError(
          '--policy',
          undefined,
          '--format tokens needs the transformer policy that made the file (a checkpoint or its transformer: spec): its tokenizer and prompt format',
        );
      if (format !== 'tokens' && flags.policy !== undefined)
        throw new InputError('--policy', flags.policy, 'only --format tokens reads a policy');
      // A flag the format does not read would be ignored: refused instead, naming the formats that do.
      const given = (key: string) => cmd.getOptionValueSource(key) === 'cli';
      for (const [key, flag, readers] of [
        ['method', '--method', CREDITED],
        ['minAdvantage', '--min-advantage', WEIGHTED],
        ['chat', '--chat', CHAT],
        ['split', '--split', ['verl']],
        ['includeFailed', '--include-failed', ['verl-sft']],
        ['by', '--by', ['preference']],
      ] as const)
        if (given(key) && !(readers as readonly Format[]).includes(format)) {
          const names =
            readers.length === 1 ? readers[0] : `${readers.slice(0, -1).join(', ')} and ${readers.at(-1)}`;
          const why = `is read by --format ${names} only, not ${format}`;
          const value = flags[key];
          throw typeof value === 'string' ? new InputError(flag, value, why) : InputError.raw(flag, why);
        }
      if (flags.split.trim() === '')
        throw new InputError('--split', flags.split, 'expected a name, such as train or test');
      const policyFile = flags.policy === undefined ? undefined : specFile(flags.policy);
      checkOutput(flags.out, '--out', 'file', [
        ['--in', flags.in],
        ['--policy', policyFile],
      ]);
      const threshold = num('--min-advantage', flags.minAdvantage);
      if (!(MODES as readonly string[]).includes(flags.chat))
        throw new InputError('--chat', flags.chat, `expected one of: ${MODES.join(', ')}`);
      const spec = parseMethodSpec(flags.method, '--method', ['exact']);
      const by = format === 'preference' ? readBy(flags.by) : undefined;
      const skipped = flags.skipInvalid ? new SkippedLines() : undefined;
      const trajectories = readTrajectories(flags.in, '--in', checkSpacesOfRegistered, skipped);
      if (CREDITED.includes(format)) refuseWithoutOracle(spec, trajectories);
      if (format === 'tokens')
        return exportTokens(
          { ...flags, out: flags.out, policy: flags.policy as string },
          spec,
          trajectories,
          skipped,
        );

      const render = discreteRenderer(flags.chat as ChatMode);
      const to = { ...flags, out: flags.out };
      if (format === 'verl') return exportVerlRl(to, render, trajectories, skipped);
      if (format === 'verl-sft') return exportVerlSft(to, render, trajectories, skipped);
      if (format === 'preference')
        return exportPreference(to, by as PreferenceBy, render, trajectories, skipped);
      const { kept, unrenderable } = exportable<Conversation>(
        trajectories,
        (t) => conversationOf(t, { render, toolsOf: envTools }),
        flags,
        skipped,
      );
      // Credit groups by identical task over the trajectories exported, as `credit` on a file of them.
      const batch = kept.map((k) => k.t);
      const advantages = creditForSpec(batch, spec, () => exactValuesFromSpecs('--method'));

      let withTokens = 0;
      if (format === 'openai') {
        const examples = kept.map((k, i) => openaiExample(k.x, advantages[i], threshold));
        write(flags.out, openaiJsonl(examples));
      } else {
        const rows = kept.map((k, i) => turnwiseRow(k.t, k.x, advantages[i], threshold));
        withTokens = rows.filter((r) => r.response_ids !== null).length;
        write(flags.out, turnwiseParquet(rows));
      }
      warnSkipped(flags, skipped, unrenderable);
      if (format === 'turnwise-parquet' && withTokens < kept.length)
        warn(
          `${kept.length - withTokens} of ${kept.length} trajectories have no token ids on every turn (trace.tokens: the model server gave none): their response_ids, response_mask and token_advantages are null`,
        );
      const turns = kept.reduce((s, k) => s + k.t.turns.length, 0);
      const weighted = advantages.flat().filter((a) => a > threshold).length;
      if (flags.json)
        return json({
          format,
          out: flags.out,
          method: spec.label,
          trajectories: kept.length,
          turns,
          weighted,
          minAdvantage: threshold,
          withTokens: format === 'turnwise-parquet' ? withTokens : undefined,
          unrenderable: unrenderable.length,
          ...(skipped ? { skipped } : {}),
        });
      out(
        `${spec.label}: wrote ${kept.length} trajectories (${turns} turns, ${weighted} with advantage > ${threshold}) to ${flags.out} (${format}${format === 'turnwise-parquet' ? `, ${withTokens} with token ids` : ''})`,
      );
    });
}
