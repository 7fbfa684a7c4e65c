// What an OpenEnv server's /schema says about its actions and observations, read as a turnwise EnvSpec.
// OpenEnv's schemas are pydantic's model_json_schema() of the env's Action and Observation classes; an
// action is an object of fields (plus Action's `metadata`). Three shapes are told apart:
//
//   tools     OpenEnv's CallToolAction (fields tool_name and arguments): a tool env. turnwise's actions
//             are tool calls {name, arguments}, sent as {"type": "call_tool", "tool_name", "arguments"};
//             the tools come from the server's MCP tools/list (client.ts).
//   discrete  one required field whose values are finite: a string enum (grid_world's MoveAction, a
//             served FrozenLake's direction) or an integer with a minimum and a maximum (OpenSpiel's
//             action_id, when bounded). Action i is the i-th value; a discrete env with a chat encoding
//             for language policies: the action model's title as the tool, the field as its argument.
//   object    anything else: one tool whose arguments are the action's fields; a tool call's arguments
//             are sent as the action.
//
// Observations: the observation dict as it comes, unless the schema has turnwise's own shape
// (serve/openenv-models.ts: observation, info, terminated, truncated), whose `observation` field is the
// served env's observation itself — what makes a round trip give the in-process trajectories.
import type { ChatSpec, ToolSchema } from '../../core/types.ts';

export type ActionShape =
  | { kind: 'tools'; typed: boolean }
  | { kind: 'discrete'; field: string; values: readonly (string | number)[]; chat: ChatSpec }
  | { kind: 'object'; tool: ToolSchema };

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A schema with its local `$ref` (#/$defs/…) resolved, a one-element `allOf` merged and an Optional's
 * null branch dropped — how pydantic writes an enum field, a described ref and Optional[X]. */
export function resolve(s: unknown, root: Schema, depth = 0): Schema {
  if (!isObject(s) || depth > 32) return {};
  let out: Schema = s;
  const ref = s.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/')) {
    let target: unknown = root;
    for (const part of ref.slice(2).split('/'))
      target = isObject(target) ? target[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
    const { $ref: _, ...rest } = s;
    out = { ...resolve(target, root, depth + 1), ...rest };
  }
  const allOf = out.allOf;
  if (Array.isArray(allOf) && allOf.length === 1) {
    const { allOf: _, ...rest } = out;
    out = { ...resolve(allOf[0], root, depth + 1), ...rest };
  }
  const anyOf = out.anyOf;
  if (Array.isArray(anyOf)) {
    const branches = anyOf.filter((b) => !(isObject(b) && b.type === 'null'));
    if (branches.length === 1) {
      const { anyOf: _, ...rest } = out;
      out = { ...resolve(branches[0], root, depth + 1), ...rest };
    }
  }
  return out;
}

const properties = (s: Schema): Schema => (isObject(s.properties) ? s.properties : {});
const required = (s: Schema): string[] =>
  Array.isArray(s.required) ? s.required.filter((x): x is string => typeof x === 'string') : [];

/** The finite values of a field's schema: a string (or number) enum, or a bounded integer range. */
function finiteValues(f: Schema): (string | number)[] | undefined {
  if (
    Array.isArray(f.enum) &&
    f.enum.length > 0 &&
    f.enum.every((v) => typeof v === 'string' || typeof v === 'number')
  )
    return f.enum as (string | number)[];
  if (typeof f.const === 'string') return [f.const];
  if (f.type === 'integer') {
    const lo =
      typeof f.minimum === 'number'
        ? Math.ceil(f.minimum)
        : typeof f.exclusiveMinimum === 'number'
          ? Math.floor(f.exclusiveMinimum) + 1
          : undefined;
    const hi =
      typeof f.maximum === 'number'
        ? Math.floor(f.maximum)
        : typeof f.exclusiveMaximum === 'number'
          ? Math.ceil(f.exclusiveMaximum) - 1
          : undefined;
    if (lo !== undefined && hi !== undefined && hi >= lo && hi - lo < 65536)
      return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
  }
  return undefined;
}

/** A name an LLM API takes for a tool (OpenAI: ^[a-zA-Z0-9_-]{1,64}$). */
export const toolName = (title: unknown, fallback: string): string => {
  const s = typeof title === 'string' ? title.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64) : '';
  return s === '' ? fallback : s;
};

/** The action shape of an action schema; `about` is the env's description (from /metadata), the
 * instructions of a discrete env whose action model has no description of its own. */
export function actionShape(action: Schema, about: string): ActionShape {
  const root = action;
  const s = resolve(action, root);
  const props = properties(s);
  if (isObject(props.tool_name) && isObject(props.arguments))
    return { kind: 'tools', typed: isObject(props.type) };
  const fields = Object.keys(props).filter((k) => k !== 'metadata');
  const req = required(s).filter((k) => k !== 'metadata');
  if (fields.length === 1 && req.length === 1 && req[0] === fields[0]) {
    const field = fields[0];
    const values = finiteValues(resolve(props[field], root));
    if (values !== undefined) {
      const description = typeof s.description === 'string' && s.description !== '' ? s.description : about;
      return {
        kind: 'discrete',
        field,
        values,
        chat: {
          instructions: description,
          tool: toolName(s.title, 'act'),
          argument: field,
          names: values.map(String),
        },
      };
    }
  }
  const { metadata: _, ...rest } = props;
  const parameters: Schema = { type: 'object', properties: rest };
  if (req.length > 0) parameters.required = req;
  if (isObject(s.$defs)) parameters.$defs = s.$defs;
  return {
    kind: 'object',
    tool: {
      name: toolName(s.title, 'step'),
      description: typeof s.description === 'string' ? s.description : about,
      parameters,
    },
  };
}

/** turnwise's observation shape (serve/openenv-models.ts), and the size of its observation space when
 * the served observation is a bounded integer (FrozenLake's cell). */
export function observationShape(observation: Schema): { turnwise: boolean; observations?: number } {
  const s = resolve(observation, observation);
  const props = properties(s);
  const turnwise = ['observation', 'info', 'terminated', 'truncated'].every((k) => isObject(props[k]));
  if (!turnwise) return { turnwise };
  const own = resolve(props.observation, observation);
  if (
    own.type === 'integer' &&
    own.minimum === 0 &&
    typeof own.maximum === 'number' &&
    Number.isInteger(own.maximum)
  )
    return { turnwise, observations: own.maximum + 1 };
  return { turnwise };
}

/** An observation dict as text for language policies: one `field: value` line per field (strings as
 * they are, anything else as JSON). */
export function renderObservation(o: unknown): string {
  if (!isObject(o)) return typeof o === 'string' ? o : JSON.stringify(o);
  return Object.entries(o)
    .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('\n');
}
