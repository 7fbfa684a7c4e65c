// The tools env as a registered env: params, tasks → worlds (cached), env construction, and the task's
// description (with its gold calls and goal state).
import type { EnvSpec, Task } from '../../core/types.ts';
import type { Ticket } from './apis.ts';
import { ToolsChoiceEnv, toolsChoiceSpec } from './choice.ts';
import { ToolsEnv, toolsSpec } from './env.ts';
import { toolsParams, toolsWorld } from './task.ts';

export * from './apis.ts';
export * from './checkers.ts';
export * from './choice.ts';
export * from './effects.ts';
export * from './env.ts';
export * from './task.ts';
export * from './tools.ts';

export function makeToolsEnv(task: Task): ToolsEnv {
  return new ToolsEnv(toolsWorld(task));
}

/** The env of a task: the call-writing env, or the slot variant (params mode 'choose'). */
export function makeToolsTaskEnv(task: Task): ToolsEnv | ToolsChoiceEnv {
  const world = toolsWorld(task);
  return world.params.mode === 'choose' ? new ToolsChoiceEnv(world, task.seed) : new ToolsEnv(world);
}

/** The spec of a task's env (the slot variant's is discrete). */
export function toolsTaskSpec(task: Task): EnvSpec {
  const p = toolsParams(task.params);
  return p.mode === 'choose' ? toolsChoiceSpec() : toolsSpec(p);
}

/** Plain data describing a task: its level, request and initial state; with `gold` the gold calls,
 * their results and the goal state. */
export function describeTools(task: Task, gold = false): Record<string, unknown> {
  const w = toolsWorld(task);
  const out: Record<string, unknown> = {
    level: w.level,
    steps: w.steps.length,
    request: w.request,
    initial: w.initial,
  };
  if (gold)
    out.gold = {
      calls: w.steps.map((s) => s.call),
      results: w.goldResults.map((r) => JSON.parse(r) as unknown),
      goal: w.goal,
    };
  return out;
}

/** The description as lines of text (turnwise env describe). */
export function describeToolsText(d: Record<string, unknown>): string[] {
  const init = d.initial as {
    files: Record<string, string>;
    accounts: Record<string, { owner: string; balance: number; open: boolean }>;
    tickets?: Record<string, Ticket>;
  };
  const lines = [
    `level ${d.level} (${d.steps} steps)`,
    `request:`,
    ...String(d.request)
      .split('\n')
      .map((l) => `  ${l}`),
  ];
  lines.push('files:');
  for (const [f, c] of Object.entries(init.files)) lines.push(`  ${f}: ${JSON.stringify(c)}`);
  lines.push('accounts:');
  for (const [id, a] of Object.entries(init.accounts)) lines.push(`  ${id} ${a.owner} $${a.balance}`);
  if (init.tickets !== undefined) {
    lines.push('tickets:');
    for (const [id, t] of Object.entries(init.tickets))
      lines.push(
        `  ${id} ${JSON.stringify(t.title)} ${t.status} ${t.priority} ${t.assignee ?? '(unassigned)'}${t.comments.length > 0 ? ` comments ${JSON.stringify(t.comments)}` : ''}`,
      );
  }
  const gold = d.gold as { calls: { name: string; arguments: unknown }[]; results: unknown[] } | undefined;
  if (gold !== undefined) {
    lines.push('gold:');
    gold.calls.forEach((c, i) => {
      lines.push(`  ${c.name}(${JSON.stringify(c.arguments)}) → ${JSON.stringify(gold.results[i])}`);
    });
    lines.push('  finish({})');
  }
  return lines;
}
