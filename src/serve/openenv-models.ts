// The models of OpenEnv's protocol as its reference server declares them with pydantic
// (meta-pytorch/OpenEnv src/openenv/core/env_server/types.py and mcp_types.py, openenv-core 0.2.3 at
// commit 685de41): their JSON schemas as `model_json_schema()` writes them, and validation with
// pydantic's error objects ({type, loc, msg, input, ctx?, url?}) in its lax mode for the few field types
// the protocol uses (dict, str, int with bounds, literals). The served env's action and observation
// models come from its EnvSpec: a tool env takes OpenEnv's own `CallToolAction` (and `ListToolsAction`),
// a discrete env with a chat encoding one enum field named as its chat tool's argument
// (FrozenLake: `{"direction": "Left"}`), any other discrete env an `action_id` integer.
import type { EnvSpec, ToolCall, ToolSchema } from '../core/types.ts';

/** pydantic's validation errors link its docs at the minor version that wrote them. */
const ERRORS_URL = 'https://errors.pydantic.dev/2.13/v/';

export interface PydanticError {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
  url?: string;
}

type FieldType =
  | { kind: 'dict' }
  | { kind: 'str'; maxLength?: number }
  | { kind: 'int'; ge?: number; le?: number }
  | { kind: 'float'; gt?: number }
  | { kind: 'literal'; values: readonly string[] };

interface Field {
  name: string;
  type: FieldType;
  /** No default: absent is an error `missing`. */
  required: boolean;
  /** `Optional[...]`: null is a value. */
  nullable?: boolean;
  /** The value of an absent field that has a default. */
  fallback?: () => unknown;
}

export interface Model {
  title: string;
  fields: readonly Field[];
  /** pydantic's `extra`: unknown keys refused (`forbid`, OpenEnv's Action and Observation) or kept. */
  extra: 'forbid' | 'allow';
  schema: Record<string, unknown>;
}

const pyRepr = (v: string) => `'${v}'`;
const expected = (values: readonly string[]) =>
  values.length === 1
    ? pyRepr(values[0])
    : `${values.slice(0, -1).map(pyRepr).join(', ')} or ${pyRepr(values[values.length - 1])}`;

const isDict = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** One field's value, lax as pydantic's Python mode is: an int field takes a bool, an integral float or a
 * string of digits. Returns the value or the error (without loc). */
function field(t: FieldType, v: unknown): { value: unknown } | Omit<PydanticError, 'loc'> {
  switch (t.kind) {
    case 'dict':
      return isDict(v)
        ? { value: v }
        : { type: 'dict_type', msg: 'Input should be a valid dictionary', input: v };
    case 'str':
      if (typeof v !== 'string')
        return { type: 'string_type', msg: 'Input should be a valid string', input: v };
      if (t.maxLength !== undefined && [...v].length > t.maxLength)
        return {
          type: 'string_too_long',
          msg: `String should have at most ${t.maxLength} characters`,
          input: v,
          ctx: { max_length: t.maxLength },
        };
      return { value: v };
    case 'literal':
      return typeof v === 'string' && t.values.includes(v)
        ? { value: v }
        : {
            type: 'literal_error',
            msg: `Input should be ${expected(t.values)}`,
            input: v,
            ctx: { expected: expected(t.values) },
          };
    case 'float': {
      const x = typeof v === 'boolean' ? Number(v) : typeof v === 'string' ? Number(v.trim()) : v;
      if (typeof x !== 'number' || Number.isNaN(x) || (typeof v === 'string' && v.trim() === ''))
        return typeof v === 'string'
          ? {
              type: 'float_parsing',
              msg: 'Input should be a valid number, unable to parse string as a number',
              input: v,
            }
          : { type: 'float_type', msg: 'Input should be a valid number', input: v };
      if (t.gt !== undefined && !(x > t.gt))
        return {
          type: 'greater_than',
          msg: `Input should be greater than ${t.gt}`,
          input: v,
          ctx: { gt: t.gt },
        };
      return { value: x };
    }
    case 'int': {
      let x: number;
      if (typeof v === 'boolean') x = Number(v);
      else if (typeof v === 'number') {
        if (!Number.isInteger(v))
          return Number.isFinite(v)
            ? {
                type: 'int_from_float',
                msg: 'Input should be a valid integer, got a number with a fractional part',
                input: v,
              }
            : { type: 'finite_number', msg: 'Input should be a finite number', input: v };
        x = v;
      } else if (typeof v === 'string') {
        if (!/^\s*[+-]?\d+\s*$/.test(v))
          return {
            type: 'int_parsing',
            msg: 'Input should be a valid integer, unable to parse string as an integer',
            input: v,
          };
        x = Number(v);
      } else return { type: 'int_type', msg: 'Input should be a valid integer', input: v };
      if (t.ge !== undefined && x < t.ge)
        return {
          type: 'greater_than_equal',
          msg: `Input should be greater than or equal to ${t.ge}`,
          input: v,
          ctx: { ge: t.ge },
        };
      if (t.le !== undefined && x > t.le)
        return {
          type: 'less_than_equal',
          msg: `Input should be less than or equal to ${t.le}`,
          input: v,
          ctx: { le: t.le },
        };
      return { value: x };
    }
  }
}

/**
 * A dict validated by a model: every field in declaration order, then the unknown keys (`forbid`), as
 * pydantic reports them. `loc` prefixes each error's location (FastAPI's ["body", …]); `url` adds the
 * docs link pydantic's own `errors()` gives (FastAPI's request validation leaves it out).
 */
export function validate(
  model: Model,
  input: Record<string, unknown>,
  loc: (string | number)[] = [],
  url = true,
): { value: Record<string, unknown>; errors: PydanticError[] } {
  const errors: PydanticError[] = [];
  const value: Record<string, unknown> = {};
  const add = (e: Omit<PydanticError, 'loc'>, at: (string | number)[]) => {
    const full: PydanticError = { type: e.type, loc: [...loc, ...at], msg: e.msg, input: e.input };
    if (e.ctx !== undefined) full.ctx = e.ctx;
    if (url) full.url = `${ERRORS_URL}${e.type}`;
    errors.push(full);
  };
  const names = new Set(model.fields.map((f) => f.name));
  for (const f of model.fields) {
    if (!Object.hasOwn(input, f.name)) {
      if (f.required) add({ type: 'missing', msg: 'Field required', input }, [f.name]);
      else value[f.name] = f.fallback?.() ?? null;
      continue;
    }
    const v = input[f.name];
    if (v === null && f.nullable) {
      value[f.name] = null;
      continue;
    }
    const r = field(f.type, v);
    if ('value' in r) value[f.name] = r.value;
    else add(r, [f.name]);
  }
  for (const k of Object.keys(input)) {
    if (names.has(k)) continue;
    if (model.extra === 'forbid')
      add({ type: 'extra_forbidden', msg: 'Extra inputs are not permitted', input: input[k] }, [k]);
    else value[k] = input[k];
  }
  return { value, errors };
}

// ---------------------------------------------------------------------------------------------------
// The protocol's own models (types.py).

const METADATA: Field = { name: 'metadata', type: { kind: 'dict' }, required: false, fallback: () => ({}) };
const METADATA_SCHEMA = {
  additionalProperties: true,
  description: 'Additional metadata for the action',
  title: 'Metadata',
  type: 'object',
};
const nullable = (type: string) => ({ anyOf: [{ type }, { type: 'null' }] });

/** A seed of turnwise's: an integer a double holds exactly. The reference's Python ints have no upper
 * bound; a larger one would arrive here rounded, so it is refused as pydantic refuses a bound. */
const SEED: FieldType = { kind: 'int', ge: 0, le: Number.MAX_SAFE_INTEGER };

/** ResetRequest: seed ≥ 0 (and ≤ 2^53 − 1, turnwise's bound), episode_id ≤ 255 characters, extra fields
 * allowed (passed to reset) — turnwise's own extra, the env stream `env_seed`, checked as the seed is. */
export const RESET_REQUEST: Model = {
  title: 'ResetRequest',
  extra: 'allow',
  fields: [
    { name: 'seed', type: SEED, required: false, nullable: true },
    { name: 'episode_id', type: { kind: 'str', maxLength: 255 }, required: false, nullable: true },
    { name: 'env_seed', type: SEED, required: false, nullable: true },
  ],
  schema: {},
};

/** StepRequest: the action (a dict, checked by the env's action model next), an optional timeout and
 * request id, extra fields allowed. */
export const STEP_REQUEST: Model = {
  title: 'StepRequest',
  extra: 'allow',
  fields: [
    { name: 'action', type: { kind: 'dict' }, required: true },
    { name: 'timeout_s', type: { kind: 'float', gt: 0 }, required: false, nullable: true },
    { name: 'request_id', type: { kind: 'str', maxLength: 255 }, required: false, nullable: true },
  ],
  schema: {},
};

/** The WebSocket messages a client sends (WSResetMessage, WSStepMessage, WSStateMessage, WSCloseMessage;
 * WSMCPMessage from mcp_types.py), each `extra="forbid"`. */
export const WS_MESSAGES: Record<string, Model> = {
  reset: wsMessage('WSResetMessage', 'reset', {
    name: 'data',
    type: { kind: 'dict' },
    required: false,
    fallback: () => ({}),
  }),
  step: wsMessage('WSStepMessage', 'step', { name: 'data', type: { kind: 'dict' }, required: true }),
  state: wsMessage('WSStateMessage', 'state'),
  close: wsMessage('WSCloseMessage', 'close'),
  mcp: wsMessage('WSMCPMessage', 'mcp', { name: 'data', type: { kind: 'dict' }, required: true }),
};

function wsMessage(title: string, type: string, data?: Field): Model {
  const fields: Field[] = [{ name: 'type', type: { kind: 'literal', values: [type] }, required: false }];
  if (data !== undefined) fields.push(data);
  return { title, extra: 'forbid', fields, schema: {} };
}

/** State.model_json_schema(): what /schema gives as `state` (the base State, whatever the env). */
export const STATE_SCHEMA = {
  additionalProperties: true,
  description:
    'Base class for environment state.\n\nRepresents internal environment state, separate from observations.',
  properties: {
    episode_id: {
      ...nullable('string'),
      default: null,
      description: 'Unique identifier for the current episode',
      title: 'Episode Id',
    },
    step_count: {
      default: 0,
      description: 'Number of steps taken in the current episode',
      minimum: 0,
      title: 'Step Count',
      type: 'integer',
    },
  },
  title: 'State',
  type: 'object',
};

// ---------------------------------------------------------------------------------------------------
// The served env's action model.

const CALL_TOOL_DOC =
  "Call a specific tool via MCP.\n\nThis action triggers MCP's tools/call operation with the\nspecified tool name and arguments.";

/** mcp_types.py's CallToolAction, field for field. */
const CALL_TOOL: Model = {
  title: 'CallToolAction',
  extra: 'forbid',
  fields: [
    METADATA,
    {
      name: 'type',
      type: { kind: 'literal', values: ['call_tool'] },
      required: false,
      fallback: () => 'call_tool',
    },
    { name: 'tool_name', type: { kind: 'str' }, required: true },
    { name: 'arguments', type: { kind: 'dict' }, required: false, fallback: () => ({}) },
  ],
  schema: {
    additionalProperties: false,
    description: CALL_TOOL_DOC,
    properties: {
      metadata: METADATA_SCHEMA,
      type: {
        const: 'call_tool',
        default: 'call_tool',
        description: 'Action type discriminator',
        title: 'Type',
        type: 'string',
      },
      tool_name: { description: 'Name of the tool to call', title: 'Tool Name', type: 'string' },
      arguments: {
        additionalProperties: true,
        description: 'Arguments to pass to the tool',
        title: 'Arguments',
        type: 'object',
      },
    },
    required: ['tool_name'],
    title: 'CallToolAction',
    type: 'object',
  },
};

/** mcp_types.py's ListToolsAction: a step that lists the tools (it takes no turn). */
const LIST_TOOLS: Model = {
  title: 'ListToolsAction',
  extra: 'forbid',
  fields: [
    METADATA,
    {
      name: 'type',
      type: { kind: 'literal', values: ['list_tools'] },
      required: false,
      fallback: () => 'list_tools',
    },
  ],
  schema: {},
};

/** pydantic's title of a field: words capitalised, joined by spaces (`action_id` → `Action Id`). */
const titleOf = (name: string) =>
  name
    .split('_')
    .map((w) => (w === '' ? w : w[0].toUpperCase() + w.slice(1)))
    .join(' ');

/** A served env's actions: the model that checks a step's data, and how valid data becomes the env's
 * action. `listTools` is set for tool envs (a `{"type": "list_tools"}` step lists them). */
export interface ActionModel {
  model: Model;
  toAction(data: Record<string, unknown>): unknown;
  listTools?: readonly ToolSchema[];
}

export function actionModel(spec: EnvSpec): ActionModel {
  if (spec.tools !== undefined)
    return {
      model: CALL_TOOL,
      toAction: (d): ToolCall => ({
        name: d.tool_name as string,
        arguments: d.arguments as Record<string, unknown>,
      }),
      listTools: spec.tools,
    };
  if (typeof spec.actions === 'number' && spec.chat !== undefined) {
    const { tool, argument, names, instructions } = spec.chat;
    return {
      model: {
        title: tool,
        extra: 'forbid',
        fields: [METADATA, { name: argument, type: { kind: 'literal', values: names }, required: true }],
        schema: {
          additionalProperties: false,
          description: instructions,
          properties: {
            metadata: METADATA_SCHEMA,
            [argument]: { enum: [...names], title: titleOf(argument), type: 'string' },
          },
          required: [argument],
          title: tool,
          type: 'object',
        },
      },
      toAction: (d) => names.indexOf(d[argument] as string),
    };
  }
  if (typeof spec.actions === 'number') {
    const last = spec.actions - 1;
    return {
      model: {
        title: `${spec.id}Action`,
        extra: 'forbid',
        fields: [METADATA, { name: 'action_id', type: { kind: 'int', ge: 0, le: last }, required: true }],
        schema: {
          additionalProperties: false,
          description: `An action of ${spec.id}: its index, 0 to ${last}.`,
          properties: {
            metadata: METADATA_SCHEMA,
            action_id: { maximum: last, minimum: 0, title: 'Action Id', type: 'integer' },
          },
          required: ['action_id'],
          title: `${spec.id}Action`,
          type: 'object',
        },
      },
      toAction: (d) => d.action_id,
    };
  }
  return {
    model: {
      title: `${spec.id}Action`,
      extra: 'forbid',
      fields: [METADATA, { name: 'text', type: { kind: 'str' }, required: true }],
      schema: {
        additionalProperties: false,
        description: `A free-text action of ${spec.id}.`,
        properties: { metadata: METADATA_SCHEMA, text: { title: 'Text', type: 'string' } },
        required: ['text'],
        title: `${spec.id}Action`,
        type: 'object',
      },
    },
    toAction: (d) => d.text,
  };
}

/** A step's data decoded: the env's action, a tool listing (tool envs), or pydantic's errors. Like
 * serialization.py's deserialize_action, a `type` of `list_tools` selects ListToolsAction. */
export function decodeAction(
  m: ActionModel,
  data: Record<string, unknown>,
): { action: unknown } | { listTools: true } | { errors: PydanticError[] } {
  if (m.listTools !== undefined && data.type === 'list_tools') {
    const r = validate(LIST_TOOLS, data);
    return r.errors.length > 0 ? { errors: r.errors } : { listTools: true };
  }
  const r = validate(m.model, data);
  return r.errors.length > 0 ? { errors: r.errors } : { action: m.toAction(r.value) };
}

/** ListToolsObservation's tools: mcp_types.py's Tool (name, description, input_schema). */
export const listedTools = (tools: readonly ToolSchema[]) =>
  tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));

// ---------------------------------------------------------------------------------------------------
// The served env's observation model.

export const OBSERVATION_TITLE = 'TurnwiseObservation';

/** The observation schema: OpenEnv's base Observation (done, reward, metadata) and turnwise's fields —
 * the env's own observation, its text view, the step's info, whether the task ended by itself
 * (terminated) or the budget cut it (truncated), and the turns left. A client that knows the shape takes
 * `observation` as the env's observation; any other reads the fields it wants. */
export function observationSchema(spec: EnvSpec): Record<string, unknown> {
  const own: Record<string, unknown> =
    typeof spec.observations === 'number'
      ? { maximum: spec.observations - 1, minimum: 0, type: 'integer' }
      : {};
  return {
    additionalProperties: false,
    description: `An observation of turnwise's ${spec.id} env served over OpenEnv: the env's own observation beside its text view and the step's info. done = terminated or truncated.`,
    properties: {
      done: {
        default: false,
        description: 'Whether the episode has terminated',
        title: 'Done',
        type: 'boolean',
      },
      reward: {
        anyOf: [{ type: 'boolean' }, { type: 'integer' }, { type: 'number' }, { type: 'null' }],
        default: null,
        description: 'Reward signal from the last action',
        title: 'Reward',
      },
      metadata: {
        additionalProperties: true,
        description: 'Additional metadata for the observation',
        title: 'Metadata',
        type: 'object',
      },
      observation: {
        ...own,
        description: `The env's own observation (what turnwise's trajectories record)`,
        title: 'Observation',
      },
      text: {
        ...nullable('string'),
        default: null,
        description: 'The text view of the observation, as language policies see it (null: the env has none)',
        title: 'Text',
      },
      info: {
        additionalProperties: true,
        description:
          "The step's info: success, failure (a failure kind), valid (false: a malformed action, nothing moved) and the env's extras",
        title: 'Info',
        type: 'object',
      },
      terminated: {
        default: false,
        description: 'The task ended by itself (success or failure)',
        title: 'Terminated',
        type: 'boolean',
      },
      truncated: {
        default: false,
        description: "The turn budget ended the episode (Gymnasium's truncated)",
        title: 'Truncated',
        type: 'boolean',
      },
      turns_left: {
        description: 'Turns left in the budget after this observation',
        minimum: 0,
        title: 'Turns Left',
        type: 'integer',
      },
    },
    required: ['observation', 'turns_left'],
    title: OBSERVATION_TITLE,
    type: 'object',
  };
}
