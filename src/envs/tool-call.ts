// A tool env's action checked against its declarations: a `{name, arguments}` object whose name is
// declared and whose arguments fit that tool's zod schema. Shared by every tool env (sql, tools), so
// that a malformed call gets the same kind of message everywhere.
import type { z } from 'zod';
import type { EnvSpec, ToolCall, ToolSchema } from '../core/types.ts';

export type CheckedCall<N extends string> =
  | { ok: true; name: N; args: Record<string, unknown> }
  | { ok: false; message: string };

/** `noun` is what the env calls its tools in messages ("tool", "function"). */
export function checkToolCall<N extends string>(
  action: unknown,
  declared: Readonly<Record<N, z.ZodType>>,
  noun: string,
): CheckedCall<N> {
  if (typeof action !== 'object' || action === null || Array.isArray(action))
    return { ok: false, message: 'an action is a tool call {"name": TOOL, "arguments": {…}}' };
  const { name, arguments: args } = action as Partial<ToolCall>;
  if (typeof name !== 'string' || !Object.hasOwn(declared, name))
    return {
      ok: false,
      message: `unknown ${noun} ${JSON.stringify(name)}; ${noun}s are ${Object.keys(declared).join(', ')}`,
    };
  const r = declared[name as N].safeParse(args ?? {});
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue.path.length > 0 ? `.${issue.path.join('.')}` : '';
    return { ok: false, message: `${name}: arguments${where}: ${issue.message}` };
  }
  return { ok: true, name: name as N, args: r.data as Record<string, unknown> };
}

/** The spec every tool env shares: text actions (tool calls), snapshots, no exact oracle, scripted
 * policies from its gold path and menu. */
export function toolEnvSpec(id: string, tools: readonly ToolSchema[], maxTurns: number): EnvSpec {
  return { id, actions: 'text', oracle: false, snapshots: true, maxTurns, tools, scripted: true };
}
