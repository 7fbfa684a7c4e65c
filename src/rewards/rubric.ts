// A rubric file (JSON): a weighted list of criteria over a trajectory, combined as it states — a
// weighted sum Σ w_i·s_i of the criteria's scores s_i ∈ [0, 1], and gates: a gated criterion that scores
// below its pass mark sets the trajectory's score to its floor (0 unless stated), whatever the others
// say. The zod schemas here are the one declaration of the format: loadRubric validates a file with
// them (each criterion by its kind's schema, so an error names `criteria[2].weight`), and
// `turnwise schema rubric` publishes their union as JSON Schema.
//
// YAML is not read: no YAML parser is a dependency of turnwise, and this format adds none.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { InputError } from '../core/errors.ts';
import { fromZod } from '../core/validate.ts';
import type { OpenAIOptions } from '../policies/openai.ts';
import { readOpenAISpec } from '../policies/openai-spec.ts';

const Id = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'expected 1 to 64 letters, digits, _ . or -');
const Gate = z.union([
  z.literal(true),
  z.strictObject({
    floor: z.number().optional().describe('the score of a trajectory that fails the gate (default 0)'),
    pass: z
      .number()
      .gt(0)
      .max(1)
      .optional()
      .describe('the criterion passes the gate when its score is ≥ pass (default 0.5)'),
  }),
]);

/** What every criterion may say besides its kind's own fields. */
const common = {
  id: Id.optional().describe('a name for the criterion (default: its kind); unique in the rubric'),
  weight: z.number().min(0).default(1).describe('its weight in the sum Σ w·s (default 1; 0: a gate only)'),
  gate: Gate.optional().describe('true or {floor, pass}: failing it sets the score to the floor'),
  description: z.string().optional(),
};

const Regex = z.string().min(1);
const Tool = z.string().min(1);

const Message = z.strictObject({ role: z.enum(['system', 'user', 'assistant']), content: z.string() });
const Prompt = z
  .union([z.string().min(1), z.array(Message).min(1)])
  .describe('a user message, or messages; {{placeholders}} as the mode allows');
const Scale = z.union([
  z.literal('yes-no'),
  z.strictObject({ min: z.number(), max: z.number() }).describe('the judge answers a number in [min, max]'),
]);
const Parser = z.discriminatedUnion('kind', [
  z
    .strictObject({ kind: z.literal('number'), pattern: Regex.optional() })
    .describe('a number: the first capture of pattern, or the last number of the answer'),
  z.strictObject({ kind: z.literal('yes-no') }).describe('the last standalone yes or no of the answer'),
  z
    .strictObject({
      kind: z.literal('regex'),
      pattern: Regex,
      map: z.record(z.string(), z.number()).optional(),
      expect: z.string().optional(),
    })
    .describe(
      "the first match's capture (or the match): looked up in map, or compared with expect (the scale's top when equal, its bottom otherwise), or read as a number",
    ),
  z
    .strictObject({ kind: z.literal('json'), field: z.string().min(1) })
    .describe('a field (dotted path) of the JSON object the answer holds'),
  z
    .strictObject({
      kind: z.literal('choice'),
      labels: z.tuple([z.string().min(1), z.string().min(1)]).optional(),
      pattern: Regex.optional(),
    })
    .describe('pairwise: which of the two shown is better, by its label (A, B)'),
]);
const Price = z
  .strictObject({ in: z.number().min(0), out: z.number().min(0) })
  .describe('dollars per million prompt and completion tokens: the judge calls’ cost in the totals');

export const JUDGE_MODES = ['pointwise', 'pairwise', 'group'] as const;
export type JudgeMode = (typeof JUDGE_MODES)[number];

/** The criteria kinds: each one's schema, declared once (the file's validation and its JSON Schema). */
export const CRITERION_SCHEMAS = {
  success: z
    .strictObject({ kind: z.literal('success'), ...common })
    .describe('1 when the env verified the final state (outcome.success)'),
  'max-turns': z
    .strictObject({ kind: z.literal('max-turns'), ...common, n: z.number().int().min(0) })
    .describe('1 when the episode took at most n turns'),
  'no-invalid': z
    .strictObject({ kind: z.literal('no-invalid'), ...common })
    .describe('1 when no turn was invalid (info.valid false) and the episode did not end as invalid-action'),
  'tool-order': z
    .strictObject({ kind: z.literal('tool-order'), ...common, before: Tool, after: Tool })
    .describe('1 when tool `after` is never called, or tool `before` is called before its first call'),
  'never-called': z
    .strictObject({
      kind: z.literal('never-called'),
      ...common,
      tool: Tool,
      arguments: z.record(z.string(), z.unknown()).optional(),
    })
    .describe('1 when no turn calls the tool (with these argument values, when given)'),
  'final-regex': z
    .strictObject({
      kind: z.literal('final-regex'),
      ...common,
      pattern: Regex,
      flags: z
        .string()
        .regex(/^[imsu]*$/, 'expected flags among i, m, s, u')
        .optional(),
    })
    .describe("1 when the pattern matches the final message (the last turn's text)"),
  'side-effects': z
    .strictObject({
      kind: z.literal('side-effects'),
      ...common,
      max: z.number().int().min(0).default(0),
      count: z
        .enum(['changes', 'unrequested'])
        .default('changes')
        .describe(
          "changes: every call that changed the state (replayed); unrequested: the tools env's own count of changes the request did not ask for (info.sideEffects, recorded with a reward-hacking param)",
        ),
    })
    .describe("1 when the episode changed the env's state at most max times (the tools env)"),
  'valid-calls': z
    .strictObject({ kind: z.literal('valid-calls'), ...common, n: z.number().int().min(1).default(1) })
    .describe(
      'the format alone: min(1, k/n), k the well-formed tool calls (a known function, arguments that fit its schema) whatever they did',
    ),
  preference: z
    .strictObject({
      kind: z.literal('preference'),
      ...common,
      by: z
        .array(z.enum(['turns', 'side-effects']))
        .min(1)
        .default(['turns'])
        .describe('what is fewer in a preferred trajectory, in order'),
    })
    .describe(
      'among the successful trajectories of a task: 1 − the share of them that did it with fewer turns (then side effects); 0 when it failed',
    ),
  judge: z
    .strictObject({
      kind: z.literal('judge'),
      ...common,
      judge: z
        .string()
        .describe('openai:URL#MODEL[,temperature=,max_tokens=,concurrency=,timeout=,retries=,rpm=,tpm=]'),
      mode: z.enum(JUDGE_MODES).default('pointwise'),
      prompt: Prompt.optional(),
      scale: Scale.optional(),
      parser: Parser.optional(),
      price: Price.optional(),
    })
    .describe('an LLM judge behind an OpenAI-compatible endpoint'),
} as const;

export type CriterionKind = keyof typeof CRITERION_SCHEMAS;
export const CRITERION_KINDS = Object.keys(CRITERION_SCHEMAS) as CriterionKind[];

const CriterionSchema = z.discriminatedUnion('kind', [
  CRITERION_SCHEMAS.success,
  CRITERION_SCHEMAS['max-turns'],
  CRITERION_SCHEMAS['no-invalid'],
  CRITERION_SCHEMAS['tool-order'],
  CRITERION_SCHEMAS['never-called'],
  CRITERION_SCHEMAS['final-regex'],
  CRITERION_SCHEMAS['side-effects'],
  CRITERION_SCHEMAS['valid-calls'],
  CRITERION_SCHEMAS.preference,
  CRITERION_SCHEMAS.judge,
]);

const top = {
  name: z.string().optional(),
  description: z.string().optional(),
  combine: z
    .literal('weighted-sum')
    .default('weighted-sum')
    .describe('Σ w·s over the criteria; a failed gate sets the score to its floor'),
};

/** The whole file (what `turnwise schema rubric` prints). */
export const RubricSchema = z.strictObject({ ...top, criteria: z.array(CriterionSchema).min(1) });
/** The file with its criteria unread: each is read by its kind's schema, to name `criteria[i]`. */
const RubricShape = z.strictObject({ ...top, criteria: z.array(z.unknown()).min(1) });

type Parsed<K extends CriterionKind> = z.output<(typeof CRITERION_SCHEMAS)[K]>;

export interface GateRule {
  floor: number;
  pass: number;
}
type Resolved<K extends CriterionKind> = Omit<Parsed<K>, 'gate' | 'id'> & {
  id: string;
  gate?: GateRule;
  /** `criteria[i]`: where the criterion is in its file. */
  at: string;
};

export type Message = z.output<typeof Message>;
export type ScaleSpec = { min: number; max: number } | 'yes-no';
export type ParserSpec = z.output<typeof Parser>;

export type JudgeCriterion = Omit<Resolved<'judge'>, 'prompt' | 'scale' | 'parser'> & {
  prompt: Message[];
  scale: ScaleSpec;
  parser: ParserSpec;
  /** The endpoint and its client options, read from `judge`. */
  options: OpenAIOptions;
};
export type Criterion =
  | Resolved<'success'>
  | Resolved<'max-turns'>
  | Resolved<'no-invalid'>
  | Resolved<'tool-order'>
  | Resolved<'never-called'>
  | Resolved<'final-regex'>
  | Resolved<'side-effects'>
  | Resolved<'valid-calls'>
  | Resolved<'preference'>
  | JudgeCriterion;

export interface Rubric {
  /** The file it was read from (messages name it). */
  file: string;
  name?: string;
  description?: string;
  criteria: Criterion[];
}

/** The options a judge's spec takes: a client's, not a policy's (no chat mode, history, log-probs). */
export const JUDGE_OPTIONS = [
  'temperature',
  'max_tokens',
  'concurrency',
  'timeout',
  'retries',
  'backoff',
  'rpm',
  'tpm',
] as const;
/** A judge answers deterministically unless told otherwise, and may reason before its score. */
const JUDGE_DEFAULTS: Partial<OpenAIOptions> = { temperature: 0, maxTokens: 512, logprobs: false };

/** The placeholders each mode's prompt may use. */
export const PLACEHOLDERS: Record<JudgeMode, readonly string[]> = {
  pointwise: ['task', 'transcript', 'final', 'last_observation', 'turns'],
  pairwise: ['task', 'transcript_a', 'transcript_b', 'final_a', 'final_b', 'turns_a', 'turns_b'],
  group: ['task', 'transcripts', 'k'],
};
export const PLACEHOLDER = /\{\{\s*([A-Za-z_]+)\s*\}\}/g;

const JUDGE_SYSTEM =
  "You judge how well an AI agent carried out a task, from the transcript of its episode. Judge only what the transcript shows: the episode's own result is not shown.";

const conversation = (system: string, user: string): Message[] => [
  { role: 'system', content: system },
  { role: 'user', content: user },
];

/** The default prompt, scale and parser of each mode (a rubric may give its own). */
export const JUDGE_DEFAULT: Record<JudgeMode, { prompt: Message[]; scale: ScaleSpec; parser: ParserSpec }> = {
  pointwise: {
    prompt: conversation(
      JUDGE_SYSTEM,
      'Task:\n{{task}}\n\nTranscript ({{turns}} turns):\n{{transcript}}\n\nFinal action: {{final}}\n\nHow well did the agent carry out the task? Think briefly, then end with a line "Score: N", N an integer from 1 (failed) to 10 (done, and efficiently).',
    ),
    scale: { min: 1, max: 10 },
    parser: { kind: 'number', pattern: 'Score:\\s*(-?\\d+(?:\\.\\d+)?)' },
  },
  pairwise: {
    prompt: conversation(
      JUDGE_SYSTEM,
      'Task:\n{{task}}\n\nAgent A ({{turns_a}} turns):\n{{transcript_a}}\nFinal action: {{final_a}}\n\nAgent B ({{turns_b}} turns):\n{{transcript_b}}\nFinal action: {{final_b}}\n\nWhich agent carried out the task better? Think briefly, then end with a line "Answer: A" or "Answer: B".',
    ),
    scale: { min: 0, max: 1 },
    parser: { kind: 'choice', labels: ['A', 'B'], pattern: 'Answer:\\s*(A|B)\\b' },
  },
  group: {
    prompt: conversation(
      "You judge several AI agents' attempts at the same task side by side, and score each from 0 to 1, relative to the others: an attempt that carries out the task scores above one that does not, and among those that do, the more efficient scores higher. Judge only what the transcripts show: the episodes' own results are not shown.",
      'Task:\n{{task}}\n\n{{transcripts}}\n\nScore each of the {{k}} trajectories. Answer with JSON only: {"scores": [{"trajectory_id": "1", "explanation": "…", "score": 0.8}, …]}, one entry per trajectory.',
    ),
    scale: { min: 0, max: 1 },
    parser: { kind: 'json', field: 'scores' },
  },
};

/** `criteria.2.weight` (fromZod's path) in the file's own terms: `criteria[2].weight`. */
const bracketed = (path: string) => path.replace(/\.(\d+)(?=\.|$)/g, '[$1]');

/** fromZod with the path after `root` written with brackets (and after a space when `root` is the
 * file itself: `r.json criteria`). */
function parseAt<S extends z.ZodType>(schema: S, value: unknown, root: string, file = false): z.output<S> {
  try {
    return fromZod(schema, value, root);
  } catch (e) {
    if (!(e instanceof InputError) || !e.field.startsWith(root)) throw e;
    const path = bracketed(e.field.slice(root.length));
    const field = root + (file && path.startsWith('.') ? ` ${path.slice(1)}` : path);
    throw InputError.raw(field, e.message.slice(e.field.length + 2));
  }
}

/** Reads and checks a rubric file; every refusal names the file and the field (`criteria[2].weight`). */
export function loadRubric(path: string, field = '--rubric'): Rubric {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new InputError(field, path, `cannot read the file (${(e as NodeJS.ErrnoException).code ?? e})`);
  }
  if (/\.ya?ml$/i.test(path))
    throw new InputError(
      field,
      path,
      'a rubric is a JSON file (YAML is not read: no YAML parser is bundled)',
    );
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new InputError(field, path, `not valid JSON (${(e as Error).message})`);
  }
  return parseRubric(value, path);
}

/** A rubric from its parsed JSON; `file` names it in messages. */
export function parseRubric(value: unknown, file: string): Rubric {
  const shape = parseAt(RubricShape, value, file, true);
  const criteria = shape.criteria.map((raw, i) => readCriterion(raw, `criteria[${i}]`, file));
  const seen = new Map<string, string>();
  for (const c of criteria) {
    const other = seen.get(c.id);
    if (other !== undefined)
      throw new InputError(
        `${file} ${c.at}.id`,
        c.id,
        `${other} has this id too (a criterion's id is its kind unless given); give each an id of its own`,
      );
    seen.set(c.id, c.at);
  }
  if (criteria.every((c) => c.weight === 0 && c.gate === undefined))
    throw InputError.raw(
      `${file} criteria`,
      'every weight is 0 and no criterion is a gate: the score would always be 0; give a criterion a weight > 0',
    );
  return { file, name: shape.name, description: shape.description, criteria };
}

function readCriterion(raw: unknown, at: string, file: string): Criterion {
  const where = `${file} ${at}`;
  const kind = (raw as { kind?: unknown } | null)?.kind;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new InputError(where, raw, 'expected a criterion object with a kind');
  if (typeof kind !== 'string' || !Object.hasOwn(CRITERION_SCHEMAS, kind))
    throw new InputError(`${where}.kind`, kind, `expected one of ${CRITERION_KINDS.join(', ')}`);
  const parsed = parseAt(CRITERION_SCHEMAS[kind as CriterionKind], raw, where) as Parsed<CriterionKind>;
  const { gate, id, ...rest } = parsed;
  const resolved = {
    ...rest,
    id: id ?? kind,
    at,
    ...(gate === undefined
      ? {}
      : {
          gate: {
            floor: gate === true ? 0 : (gate.floor ?? 0),
            pass: gate === true ? 0.5 : (gate.pass ?? 0.5),
          },
        }),
  };
  if (resolved.kind === 'final-regex') compile(resolved.pattern, resolved.flags, `${where}.pattern`);
  if (resolved.kind === 'judge') return readJudge(resolved as Resolved<'judge'>, where);
  return resolved as Criterion;
}

/** The pattern compiled, or an InputError naming the field. */
export function compile(pattern: string, flags: string | undefined, field: string): RegExp {
  try {
    return new RegExp(pattern, flags);
  } catch (e) {
    throw new InputError(field, pattern, `not a regular expression (${(e as Error).message})`);
  }
}

/** A judge criterion with its mode's defaults filled in, and what its parts say checked together. */
function readJudge(c: Resolved<'judge'>, where: string): JudgeCriterion {
  const options = readOpenAISpec(c.judge, `${where}.judge`, {
    allowed: JUDGE_OPTIONS,
    defaults: JUDGE_DEFAULTS,
  });
  const mode = c.mode;
  const defaults = JUDGE_DEFAULT[mode];
  const prompt: Message[] =
    c.prompt === undefined
      ? defaults.prompt
      : typeof c.prompt === 'string'
        ? [{ role: 'user', content: c.prompt }]
        : c.prompt;
  prompt.forEach((m, i) => {
    const at = typeof c.prompt === 'string' ? `${where}.prompt` : `${where}.prompt[${i}].content`;
    for (const [, name] of m.content.matchAll(PLACEHOLDER))
      if (!PLACEHOLDERS[mode].includes(name))
        throw new InputError(
          at,
          `{{${name}}}`,
          `the ${mode} mode's placeholders are ${PLACEHOLDERS[mode].map((p) => `{{${p}}}`).join(', ')}`,
        );
  });
  if (mode === 'pairwise' && c.scale !== undefined)
    throw new InputError(`${where}.scale`, c.scale, 'a pairwise judge chooses one of two: it has no scale');
  const scale = c.scale ?? (mode === 'pointwise' && c.parser?.kind === 'yes-no' ? 'yes-no' : defaults.scale);
  if (scale !== 'yes-no' && !(scale.min < scale.max))
    throw new InputError(`${where}.scale`, scale, 'expected min < max');
  const parser = c.parser ?? (scale === 'yes-no' ? { kind: 'yes-no' as const } : defaults.parser);
  const allowed: Record<JudgeMode, readonly ParserSpec['kind'][]> = {
    pointwise: scale === 'yes-no' ? ['yes-no', 'regex', 'json'] : ['number', 'regex', 'json'],
    pairwise: ['choice'],
    group: ['json'],
  };
  if (!allowed[mode].includes(parser.kind))
    throw new InputError(
      `${where}.parser.kind`,
      parser.kind,
      `a ${mode} judge${mode === 'pointwise' ? ` on ${scale === 'yes-no' ? 'a yes-no scale' : 'a numeric scale'}` : ''} takes ${allowed[mode].join(', ')}`,
    );
  if (mode === 'group' && scale === 'yes-no')
    throw new InputError(`${where}.scale`, scale, 'a group judge scores each trajectory on {min, max}');
  if ('pattern' in parser && parser.pattern !== undefined)
    compile(parser.pattern, undefined, `${where}.parser.pattern`);
  if (parser.kind === 'regex') {
    if (parser.map !== undefined && parser.expect !== undefined)
      throw InputError.raw(`${where}.parser`, 'give map or expect, not both');
    for (const [k, v] of Object.entries(parser.map ?? {}))
      if (!onScale(v, scale))
        throw new InputError(
          `${where}.parser.map.${k}`,
          v,
          `expected a value on the scale (${scaleText(scale)})`,
        );
    for (const [, name] of (parser.expect ?? '').matchAll(PLACEHOLDER))
      if (!PLACEHOLDERS.pointwise.includes(name))
        throw new InputError(
          `${where}.parser.expect`,
          `{{${name}}}`,
          `expected placeholders of the pointwise mode`,
        );
  }
  return { ...c, options, prompt, scale, parser };
}

/** Whether x is on the scale: in [min, max], or 0/1 for yes-no. */
export const onScale = (x: number, scale: ScaleSpec): boolean =>
  scale === 'yes-no' ? x === 0 || x === 1 : x >= scale.min && x <= scale.max;

export const scaleText = (scale: ScaleSpec): string =>
  scale === 'yes-no' ? 'yes 1, no 0' : `${scale.min} to ${scale.max}`;

/** A value of the scale mapped to [0, 1]. */
export const normalise = (x: number, scale: ScaleSpec): number =>
  scale === 'yes-no' ? x : (x - scale.min) / (scale.max - scale.min);

/** The rubric's judge criteria. */
export const judgesOf = (r: Rubric): JudgeCriterion[] =>
  r.criteria.filter((c): c is JudgeCriterion => c.kind === 'judge');
