// `replay:FILE`: plays actions from a JSONL file — for tests, and for reproducing a reported trajectory
// (an MCP session, an outside agent's run) in process. One line per episode:
//
//   {"task": 3, "sample": 0, "actions": [{"name": "list_tables", "arguments": {}}, …]}
//
// `task` is the task seed, `sample` the sample index within the task (rollout's K samples); a tool env's
// action is `{"name": TOOL, "arguments": {…}}` (any name and arguments: the env judges them, so a file
// can hold tool misuse and destructive calls), a discrete env's an integer action index as trajectories
// record it (-1: an action the env refuses, what an LLM policy records for an output that is no action).
//
// The file is read and checked whole when the policy is made (one line naming file:line and the field,
// before any episode). `checkEpisodes` refuses a run with an episode the file has no line for. At turn t
// the policy plays actions[t]; an episode that asks for more actions than its line holds ends with kind
// `error` ("replay: out of actions"), so a file shorter than the episode is never silently padded.
// The replay cannot score actions (no logProb): diagnostics that need likelihoods refuse it.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { InputError } from '../core/errors.ts';
import type { Action, EnvSpec, Policy, TurnContext } from '../core/types.ts';
import { fromZod } from '../core/validate.ts';

const toolAction = z
  .object({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()) })
  .strict();

function lineSchema(spec: EnvSpec) {
  const action =
    typeof spec.actions === 'number'
      ? z
          .number()
          .int()
          .min(-1)
          .max(spec.actions - 1)
      : toolAction;
  return z
    .object({
      task: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
      sample: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
      actions: z.array(action),
    })
    .strict();
}

const key = (task: number, sample: number) => `${task}/${sample}`;

/** The file's lines by (task seed, sample); throws an InputError naming file:line and the field. */
export function readReplayFile(path: string, spec: EnvSpec, field = '--policy'): Map<string, unknown[]> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new InputError(
      field,
      `replay:${path}`,
      `cannot read the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
  const schema = lineSchema(spec);
  const lines = new Map<string, unknown[]>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (line === '') return;
    const where = `${path}:${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      throw InputError.raw(where, `not valid JSON (${(e as Error).message})`);
    }
    const v = fromZod(schema, value, where);
    const k = key(v.task, v.sample);
    if (lines.has(k)) throw new InputError(`${where}`, `task ${v.task} sample ${v.sample}`, 'is given twice');
    lines.set(k, v.actions);
  });
  if (lines.size === 0) throw new InputError(field, `replay:${path}`, 'the file has no lines');
  return lines;
}

export class ReplayPolicy implements Policy<unknown, unknown> {
  readonly id: string;
  readonly budgetAware = false;
  readonly path: string;
  private readonly lines: Map<string, unknown[]>;

  constructor(path: string, spec: EnvSpec, field = '--policy') {
    this.path = path;
    this.id = `replay:${path}`;
    this.lines = readReplayFile(path, spec, field);
  }

  /** Refuses (InputError) a run with an episode (task seed, sample) the file has no line for. */
  checkEpisodes(taskSeeds: Iterable<number>, samples: number, field = '--policy'): void {
    for (const t of taskSeeds) {
      for (let s = 0; s < samples; s++) {
        if (!this.lines.has(key(t, s)))
          throw new InputError(field, this.id, `the file has no line for task ${t} sample ${s}`);
      }
    }
  }

  act(ctx: TurnContext<unknown>): Action<unknown> {
    if (ctx.task === undefined || ctx.sample === undefined)
      throw new Error(
        'replay: this episode has no task and sample (a continuation); replay plays whole episodes',
      );
    const actions = this.lines.get(key(ctx.task.seed, ctx.sample));
    if (actions === undefined)
      throw new Error(`replay: ${this.path} has no line for task ${ctx.task.seed} sample ${ctx.sample}`);
    if (ctx.turn >= actions.length)
      throw new Error(`replay: out of actions at turn ${ctx.turn + 1} (the line has ${actions.length})`);
    return { action: structuredClone(actions[ctx.turn]), logp: 0 };
  }
}

/** A policy that can check, before work starts, that it covers every episode of a run. */
export function checksEpisodes(p: Policy<unknown, unknown>): p is Policy<unknown, unknown> & {
  checkEpisodes(taskSeeds: Iterable<number>, samples: number, field?: string): void;
} {
  return typeof (p as { checkEpisodes?: unknown }).checkEpisodes === 'function';
}
