// Policy specs on the command line: `random`, `oracle`, `oracle:eps=0.2`, `oracle:temp=0.5`,
// `oracle:horizon=100` (budget-blind), parameters comma-separated (`oracle:eps=0.2,horizon=100`),
// `tabular`, `mlp:hidden=64x64,seed=0` (a freshly initialised neural policy); a checkpoint path or a run
// directory goes through the loaders registered in CHECKPOINT_LOADERS.
import { existsSync } from 'node:fs';
import { InputError } from '../core/errors.ts';
import type { EnvSpec, Policy } from '../core/types.ts';
import { ACTIVATIONS, type Activation } from '../nn/layers.ts';
import { loadNeuralPolicy, mlpPolicyConfig, NeuralPolicy } from './neural.ts';
import { OraclePolicy } from './oracle.ts';
import { discreteActions, RandomPolicy } from './random.ts';
import { ScriptedOraclePolicy, ScriptedRandomPolicy } from './scripted.ts';
import { loadTabularPolicy, TabularPolicy } from './tabular.ts';

export type AnyPolicy = Policy<unknown, unknown>;

interface PolicyKind {
  summary: string;
  /** Allowed parameters and how each is read (throws InputError on a bad value). */
  params: Record<string, (value: string, field: string) => number | string>;
  make(params: Record<string, number | string>, env: EnvSpec, id: string): AnyPolicy;
}

const probability = (v: string, field: string): number => {
  const x = Number(v);
  if (v.trim() === '' || !(x >= 0 && x <= 1)) throw new InputError(field, v, 'expected a number in [0, 1]');
  return x;
};
const positive = (v: string, field: string): number => {
  const x = Number(v);
  if (v.trim() === '' || !(x > 0 && Number.isFinite(x)))
    throw new InputError(field, v, 'expected a number > 0');
  return x;
};
const positiveInt = (v: string, field: string): number => {
  const x = Number(v);
  if (!/^\d+$/.test(v.trim()) || !(x >= 1)) throw new InputError(field, v, 'expected an integer ≥ 1');
  return x;
};
const seedValue = (v: string, field: string): number => {
  const x = Number(v);
  if (!/^\d+$/.test(v.trim()) || !Number.isSafeInteger(x))
    throw new InputError(field, v, 'expected an integer ≥ 0');
  return x;
};
/** Hidden layer widths such as `64x64`, returned in that canonical form. */
const layerSizes = (v: string, field: string): string => {
  const parts = v.trim().split('x');
  if (!parts.every((p) => /^\d+$/.test(p) && Number(p) >= 1 && Number(p) <= 65536)) {
    throw new InputError(field, v, 'expected layer widths such as 64x64 (integers ≥ 1 joined by x)');
  }
  return parts.map(Number).join('x');
};
const activation = (v: string, field: string): string => {
  if (!(ACTIVATIONS as readonly string[]).includes(v))
    throw new InputError(field, v, `expected ${ACTIVATIONS.join(', ')}`);
  return v;
};
const flag = (v: string, field: string): number => {
  if (v === '1' || v === 'true') return 1;
  if (v === '0' || v === 'false') return 0;
  throw new InputError(field, v, 'expected 1 or 0');
};

const KINDS: Record<string, PolicyKind> = {
  random: {
    summary: 'uniform over the actions (tool envs: over the menu of valid tool calls)',
    params: {},
    make: (_p, env) => {
      if (env.scripted === true) return new ScriptedRandomPolicy() as AnyPolicy;
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
  mlp: {
    summary:
      'a freshly initialised MLP over the feature view (hidden=64x64, seed=, activation=, budgetAware=1)',
    params: { hidden: layerSizes, seed: seedValue, activation, budgetAware: flag },
    make: (p, env, id) => {
      const config = mlpPolicyConfig(
        env,
        {
          hidden: p.hidden === undefined ? undefined : String(p.hidden).split('x').map(Number),
          seed: p.seed as number | undefined,
          activation: p.activation as Activation | undefined,
          budgetAware: p.budgetAware === 1,
        },
        '--policy',
      );
      return new NeuralPolicy(config, id) as AnyPolicy;
    },
  },
};

/** Loaders for policies saved on disk; each returns undefined when the path is not its format. */
export const CHECKPOINT_LOADERS: ((path: string, env: EnvSpec) => AnyPolicy | undefined)[] = [
  (path, env) => loadNeuralPolicy(path, env) as AnyPolicy | undefined,
  (path, env) => loadTabularPolicy(path, env) as AnyPolicy | undefined,
];

export const POLICY_KINDS: readonly string[] = Object.keys(KINDS);

const ALLOWED = `expected random, oracle[:eps=E,temp=T,horizon=H], tabular, mlp[:hidden=64x64,seed=S], or a checkpoint path`;

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
  return spec.includes('/') || spec.endsWith('.safetensors') || existsSync(spec);
}

/** Builds a policy from its spec for an env, or throws an InputError naming the spec. */
export function makePolicy(spec: string, env: EnvSpec, field = '--policy'): AnyPolicy {
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
  const id =
    Object.keys(values).length > 0
      ? `${kind}:${Object.entries(values)
          .map(([k, v]) => `${k}=${v}`)
          .join(',')}`
      : kind;
  return entry.make(values, env, id);
}
