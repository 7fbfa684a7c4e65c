// Policy specs on the command line: `random`, `oracle`, `oracle:eps=0.2`, `oracle:temp=0.5`,
// `oracle:horizon=100` (budget-blind), parameters comma-separated (`oracle:eps=0.2,horizon=100`),
// `tabular`, `mlp:hidden=64x64,seed=0` (a freshly initialised neural policy), `transformer:layers=2,…`
// (a freshly initialised text policy, transformer-spec.ts); a checkpoint path or a run
// directory goes through the loaders registered in CHECKPOINT_LOADERS.
import { existsSync } from 'node:fs';
import { InputError } from '../core/errors.ts';
import type { EnvSpec } from '../core/types.ts';
import type { Activation } from '../nn/layers.ts';
import { loadGgufPolicy, makeGgufPolicy } from './gguf-spec.ts';
import { loadNeuralPolicy, type MlpPolicyOptions, mlpPolicyConfig, NeuralPolicy } from './neural.ts';
import { OpenAIPolicy, type ResponseCache } from './openai.ts';
import { readOpenAISpec } from './openai-spec.ts';
import { OraclePolicy } from './oracle.ts';
import { discreteActions, RandomPolicy } from './random.ts';
import { ReplayPolicy } from './replay.ts';
import { ScriptedOraclePolicy, ScriptedRandomPolicy } from './scripted.ts';
import {
  type AnyPolicy,
  activation,
  flag,
  layerSizes,
  type PolicyKind,
  positive,
  positiveInt,
  probability,
  seedValue,
} from './spec-values.ts';
import { loadTabularPolicy, TabularPolicy } from './tabular.ts';
import { loadTransformerPolicy } from './transformer.ts';
import { TRANSFORMER_KIND } from './transformer-spec.ts';

// What commands import from here, where it lived before spec-values.ts.
export { type AnyPolicy, activation, hiddenWidths } from './spec-values.ts';

const KINDS: Record<string, PolicyKind> = {
  random: {
    summary: 'uniform over the actions (tool envs: over the menu of valid tool calls)',
    params: {},
    make: (_p, env, id) => {
      if (env.scripted === true) return new ScriptedRandomPolicy() as AnyPolicy;
      // Text actions without a menu of valid calls (an OpenEnv server's tool env): nothing to draw from.
      if (typeof env.actions !== 'number')
        throw new InputError(
          '--policy',
          id,
          `env ${env.id} has neither discrete actions nor a menu of valid tool calls`,
        );
      discreteActions(env);
      return new RandomPolicy() as AnyPolicy;
    },
  },
  oracle: {
    summary: 'greedy on the exact Q* (eps=, temp=, horizon= for a budget-blind lookahead)',
    params: { eps: probability, temp: positive, horizon: positiveInt },
    make: (p, env, id) => {
      if (env.scripted === true && !env.oracle) {
        // A tool env: the scripted oracle follows the gold path; only eps applies.
        if (p.temp !== undefined || p.horizon !== undefined)
          throw new InputError('--policy', id, `on env ${env.id} (scripted oracle) oracle takes only eps`);
        return new ScriptedOraclePolicy((p.eps as number | undefined) ?? 0, id) as AnyPolicy;
      }
      if (!env.oracle) throw new InputError('--policy', id, `env ${env.id} has no exact oracle`);
      const num = (x: number | string | undefined) => x as number | undefined;
      return new OraclePolicy(
        { eps: num(p.eps), temp: num(p.temp), horizon: num(p.horizon) },
        id,
      ) as AnyPolicy;
    },
  },
  tabular: {
    summary: 'a softmax table over discrete observations, uniform at start',
    params: {},
    make: (_p, env, id) => {
      if (env.observations === undefined) {
        throw new InputError('--policy', id, `env ${env.id} has no finite observation space`);
      }
      return new TabularPolicy(env.observations, discreteActions(env), undefined, id) as AnyPolicy;
    },
  },
  transformer: TRANSFORMER_KIND,
  mlp: {
    summary:
      'a freshly initialised MLP over the feature view (hidden=64x64, seed=, activation=, budgetAware=1)',
    params: { hidden: layerSizes, seed: seedValue, activation, budgetAware: flag },
    make: (p, env, id) => new NeuralPolicy(mlpPolicyConfig(env, mlpOptions(p), '--policy'), id) as AnyPolicy,
  },
};

/** The network options of an `mlp:` spec's values, as its parameter readers left them. */
function mlpOptions(p: Record<string, number | string>): MlpPolicyOptions {
  const o: MlpPolicyOptions = {};
  if (p.hidden !== undefined) o.hidden = String(p.hidden).split('x').map(Number);
  if (p.seed !== undefined) o.seed = p.seed as number;
  if (p.activation !== undefined) o.activation = p.activation as Activation;
  if (p.budgetAware !== undefined) o.budgetAware = p.budgetAware === 1;
  return o;
}

/**
 * `mlp[:hidden=64x64,seed=S,activation=relu,budgetAware=1]` read into the options of the network it
 * names (only those given): the one reading of the spec, for `--policy` of every command (`train`
 * builds its config's policy from it).
 */
export function mlpSpec(spec: string, field = '--policy'): MlpPolicyOptions {
  const { kind, params } = parsePolicySpec(spec, field);
  if (kind !== 'mlp') throw new InputError(field, spec, 'expected mlp[:hidden=64x64,…]');
  return mlpOptions(readParams(KINDS.mlp, kind, spec, params, field));
}

/** Loaders for policies saved on disk; each returns undefined when the path is not its format. */
export const CHECKPOINT_LOADERS: ((path: string, env: EnvSpec) => AnyPolicy | undefined)[] = [
  (path, env) => loadNeuralPolicy(path, env) as AnyPolicy | undefined,
  (path, env) => loadTabularPolicy(path, env) as AnyPolicy | undefined,
  (path, env) => loadTransformerPolicy(path, env) as AnyPolicy | undefined,
  (path, env) => loadGgufPolicy(path, env) as AnyPolicy | undefined,
];

export const POLICY_KINDS: readonly string[] = Object.keys(KINDS);

const ALLOWED = `expected random, oracle[:eps=E,temp=T,horizon=H], tabular, mlp[:hidden=64x64,seed=S], transformer[:layers=L,d=D,heads=H,ctx=C,seed=S,tokenizer=FILE], openai:URL#MODEL[,options], gguf:PATH[,options], replay:FILE.jsonl, or a checkpoint path`;

export function parsePolicySpec(
  spec: string,
  field = '--policy',
): { kind: string; params: Record<string, string> } {
  const colon = spec.indexOf(':');
  const kind = (colon < 0 ? spec : spec.slice(0, colon)).trim();
  const params: Record<string, string> = {};
  if (colon >= 0) {
    for (const part of spec.slice(colon + 1).split(',')) {
      const eq = part.indexOf('=');
      if (eq <= 0) throw new InputError(field, spec, `parameters are key=value pairs separated by commas`);
      const key = part.slice(0, eq).trim();
      if (Object.hasOwn(params, key)) throw new InputError(field, spec, `parameter ${key} is given twice`);
      params[key] = part.slice(eq + 1).trim();
    }
  }
  return { kind, params };
}

function looksLikePath(spec: string): boolean {
  // A kind's spec may name a file in its parameters (transformer:tokenizer=dir/tok.json): not a path.
  const colon = spec.indexOf(':');
  if (colon > 0 && Object.hasOwn(KINDS, spec.slice(0, colon).trim())) return false;
  return spec.includes('/') || spec.endsWith('.safetensors') || existsSync(spec);
}

/** The environment variable the key is read from (`--api-key-env NAME`); OPENAI_API_KEY by default. */
export interface OpenAIConnect {
  keyEnv?: string;
  /** The run's env configuration: a `turnwise serve` serving another is refused at connect. */
  env?: { id: string; params: Record<string, unknown> };
}

/** `openai:URL#MODEL[,options]` or `openai:env#MODEL` (the URL from OPENAI_BASE_URL); the key from
 * OPENAI_API_KEY. The policy id is the spec without its options' defaults (never the key). */
export function makeOpenAIPolicy(
  spec: string,
  env: EnvSpec,
  field = '--policy',
  keyEnv = 'OPENAI_API_KEY',
): OpenAIPolicy {
  const options = readOpenAISpec(spec, field, {
    // Checked after the URL and before the options, as it always was.
    check: () => {
      if (typeof env.actions !== 'number' || env.chat === undefined)
        throw new InputError(field, spec, `env ${env.id} has no chat encoding for LLM policies`);
    },
  });
  return new OpenAIPolicy(options, env, spec.trim(), process.env[keyEnv], field);
}

/** A policy that must reach something before it acts (an endpoint): `connect` checks it and throws an
 * InputError when it cannot. */
export function isConnectable(p: AnyPolicy): p is AnyPolicy & { connect(): Promise<void> } {
  return typeof (p as { connect?: unknown }).connect === 'function';
}

/** makePolicy, then the policy's own check that it can act (an endpoint that answers and lists the
 * model) — what the CLI calls so that bad input fails before any episode. With a replay cache, an
 * openai: policy records its requests there and answers from it what it holds (others ignore it). */
export async function openPolicy(
  spec: string,
  env: EnvSpec,
  field = '--policy',
  cache?: ResponseCache,
  connect: OpenAIConnect = {},
): Promise<AnyPolicy> {
  const policy = spec.startsWith('openai:')
    ? (makeOpenAIPolicy(spec, env, field, connect.keyEnv) as AnyPolicy)
    : makePolicy(spec, env, field);
  if (policy instanceof OpenAIPolicy) {
    if (cache !== undefined) policy.useCache(cache);
    if (connect.env !== undefined) policy.expectEnv(connect.env.id, connect.env.params);
  }
  if (isConnectable(policy)) await policy.connect();
  return policy;
}

/** The file a policy spec reads — a replay file or a checkpoint, as makePolicy tells them — or
 * undefined: what an output of the same command must not be (store/paths.ts checkOutput). */
export function specFile(spec: string): string | undefined {
  if (spec.startsWith('openai:')) return undefined;
  if (spec.startsWith('gguf:')) return spec.slice('gguf:'.length).split(',')[0].trim();
  if (spec.startsWith('replay:')) return spec.slice('replay:'.length);
  return looksLikePath(spec) ? spec : undefined;
}

/** Builds a policy from its spec for an env, or throws an InputError naming the spec. */
export function makePolicy(spec: string, env: EnvSpec, field = '--policy'): AnyPolicy {
  if (spec.startsWith('openai:')) return makeOpenAIPolicy(spec, env, field) as AnyPolicy;
  if (spec.startsWith('gguf:')) return makeGgufPolicy(spec, env, field) as AnyPolicy;
  if (spec.startsWith('replay:')) return new ReplayPolicy(spec.slice('replay:'.length), env, field);
  if (looksLikePath(spec)) {
    if (!existsSync(spec)) throw new InputError(field, spec, `no such file or directory (${ALLOWED})`);
    for (const load of CHECKPOINT_LOADERS) {
      const policy = load(spec, env);
      if (policy !== undefined) return policy;
    }
    throw new InputError(field, spec, 'not a policy checkpoint turnwise can read');
  }
  const { kind, params } = parsePolicySpec(spec, field);
  const entry = Object.hasOwn(KINDS, kind) ? KINDS[kind] : undefined;
  if (entry === undefined) throw new InputError(field, spec, ALLOWED);
  const values = readParams(entry, kind, spec, params, field);
  const id =
    Object.keys(values).length > 0
      ? `${kind}:${Object.entries(values)
          .map(([k, v]) => `${k}=${v}`)
          .join(',')}`
      : kind;
  return entry.make(values, env, id);
}

/** A spec's parameters, each read (and checked) by its kind's reader; an unknown one is refused. */
function readParams(
  entry: PolicyKind,
  kind: string,
  spec: string,
  params: Record<string, string>,
  field: string,
): Record<string, number | string> {
  const values: Record<string, number | string> = {};
  for (const [key, raw] of Object.entries(params)) {
    const read = Object.hasOwn(entry.params, key) ? entry.params[key] : undefined;
    if (read === undefined) {
      const known = Object.keys(entry.params);
      throw new InputError(
        field,
        spec,
        known.length > 0 ? `${kind} takes ${known.join(', ')}` : `${kind} takes no parameters`,
      );
    }
    values[key] = read(raw, `${field} ${kind}.${key}`);
  }
  return values;
}
