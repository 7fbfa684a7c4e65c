// Credit fidelity as a study: roll a policy out (K samples per task), compute the exact per-turn
// advantage A^π_{T−t}(s,a) from the env's oracle, run every credit method on the same batch and score
// each against the truth (credit/fidelity.ts). Also the glue that resolves method specs against a batch
// — `exact` and GAE's `values=exact` need V^π/Q^π of the policy that played — shared with
// `turnwise credit --in`.
import { InputError } from '../core/errors.ts';
import { stateKeyOf } from '../core/policy.ts';
import { Rng, STREAM } from '../core/rng.ts';
import type { EnvConfig, Oracle, Policy, Trajectory } from '../core/types.ts';
import {
  type ExactValues,
  type ExactValuesOf,
  exactAdvantages,
  exactValueFn,
  type FidelityScores,
  fidelity,
  flatten,
} from '../credit/fidelity.ts';
import {
  type Advantages,
  canonicalJson,
  creditBatch,
  deadGroups,
  isMethodName,
  type MethodOptions,
  type MethodSpec,
  methodOptions,
  type ValueFn,
  type ValueSource,
} from '../credit/index.ts';
import { ENV_IDS, envSpec, makeEnv, makeTasks } from '../envs/index.ts';
import { exactPolicyValues } from '../eval/exact.ts';
import { makePolicy } from '../policies/spec.ts';
import { rollout } from '../rollout/batch.ts';

type AnyPolicy = Policy<unknown, unknown>;

/** GAE's value source when none is named: the exact V^π (a perfect critic), refused loudly — never
 * replaced by zeros — when the env has no oracle or the policy no explicit distribution. */
export const DEFAULT_VALUE_SOURCE: ValueSource = 'exact';

/** Pseudo-methods of the fidelity study: the truth itself, and the truth shuffled across turns (a
 * control that keeps the distribution of credit but destroys its assignment). */
export const CONTROL_METHODS = ['exact', 'shuffled'] as const;

export const DEFAULT_FIDELITY_METHODS =
  'exact,outcome,discounted,gae,gae:gamma=1,lambda=0,grpo,drgrpo,rloo,gigpo,gigpo:std=false,turn-level,turn-level:crest=true,reverse-turn,rtpo,shuffled';

/**
 * V^π, Q^π for the trajectories of a batch, computed once per (map, policy, budget, revealBudget).
 * `policyOf` names the policy that played each trajectory.
 */
export function exactValueSource(
  policyOf: (trajectory: Trajectory) => AnyPolicy,
  field: string,
): ExactValuesOf {
  const cache = new Map<Oracle<unknown>, Map<string, ExactValues>>();
  return (traj) => {
    const env = makeEnv(traj.task);
    const oracle = env.oracle?.();
    if (oracle === undefined) {
      void env.close?.(); // a tool env holds a database or a sandbox
      throw InputError.raw(field, `env ${traj.task.env} has no exact oracle (trajectory ${traj.id})`);
    }
    let byPolicy = cache.get(oracle);
    if (byPolicy === undefined) {
      byPolicy = new Map();
      cache.set(oracle, byPolicy);
    }
    const policy = policyOf(traj);
    const key = `${policy.id}|${traj.budget}|${traj.revealBudget}`;
    let exact = byPolicy.get(key);
    if (exact === undefined) {
      const values = exactPolicyValues(env, policy, traj.budget, traj.revealBudget);
      if (values === undefined) {
        throw InputError.raw(
          field,
          `policy ${policy.id} has no explicit action distribution, so its exact values are unknown`,
        );
      }
      exact = { values, state: (o) => oracle.state(o) };
      byPolicy.set(key, exact);
    }
    return exact;
  };
}

/** Exact values for a trajectory file: each trajectory's policy is rebuilt from its `policy` field
 * (random, oracle[:…], or a checkpoint path a loader can read). */
export function exactValuesFromSpecs(field = '--values'): ExactValuesOf {
  const policies = new Map<string, AnyPolicy>();
  return exactValueSource((traj) => {
    const key = `${traj.task.env}|${traj.policy}`;
    let policy = policies.get(key);
    if (policy === undefined) {
      // `tabular` names a fresh (uniform) table: rebuilt from its id, a trained table would silently be
      // evaluated as the untrained one, so it is refused rather than guessed.
      if (traj.policy === 'tabular' || traj.policy.startsWith('tabular:')) {
        throw InputError.raw(
          field,
          `trajectory ${traj.id} was played by "${traj.policy}", whose table is not in the file${field === '--values' ? '; use --values zero' : ''}`,
        );
      }
      policy = makePolicy(traj.policy, envSpec(traj.task), `trajectory ${traj.id} policy`);
      policies.set(key, policy);
    }
    return policy;
  }, field);
}

/** The truth permuted across all turns of the batch (seeded). */
export function shuffledAdvantages(exact: Advantages, rng: Rng): Advantages {
  const flat = Array.from(flatten(exact));
  rng.shuffle(flat);
  let k = 0;
  return exact.map((row) => row.map(() => flat[k++]));
}

/**
 * Per-turn advantages of a batch for a parsed spec. `exact()` is asked for only when the spec needs the
 * oracle (`exact`, `shuffled`, GAE with values=exact).
 */
/** GiGPO's anchor key from the env's own `stateKey` for registered envs (one env per distinct task);
 * files from envs turnwise does not know fall back to the whole observation. */
function registryStateKey(): NonNullable<MethodOptions['gigpo']['key']> {
  const views = new Map<string, ReturnType<typeof makeEnv> | null>();
  return (turn, traj) => {
    const k = JSON.stringify(traj.task);
    let env = views.get(k);
    if (env === undefined) {
      env = ENV_IDS.includes(traj.task.env) ? makeEnv(traj.task) : null;
      views.set(k, env);
    }
    return env === null ? canonicalJson(turn.observation) : String(stateKeyOf(env, turn.observation));
  };
}

export function creditForSpec(
  batch: readonly Trajectory[],
  spec: MethodSpec,
  exact: () => ExactValuesOf,
  seed = 0,
): Advantages {
  if (spec.name === 'exact') return exactAdvantages(batch, exact());
  if (spec.name === 'shuffled')
    return shuffledAdvantages(exactAdvantages(batch, exact()), Rng.derive(seed, STREAM.eval));
  const name = spec.name;
  if (!isMethodName(name)) throw new InputError('--method', spec.label, 'unknown method');
  let values: ValueFn | undefined;
  if (name === 'gae') {
    const source = spec.params.values ?? DEFAULT_VALUE_SOURCE;
    values = source === 'zero' ? () => 0 : exactValueFn(exact());
  }
  const taskNorm = spec.params.taskNorm;
  const options = methodOptions(name, spec.params, values);
  if (name === 'gigpo') (options as MethodOptions['gigpo']).key = registryStateKey();
  return creditBatch(batch, name, options, taskNorm === undefined ? {} : { taskNorm: { by: taskNorm } });
}

export interface CreditFidelityOptions {
  config: EnvConfig;
  policy: AnyPolicy;
  budget: number;
  /** Defaults to whether the policy is budget-aware. */
  revealBudget?: boolean;
  /** Tasks (seeds seed, seed+1, …), one group each. */
  groups: number;
  /** K samples per task. */
  groupSize: number;
  seed: number;
  methods: readonly MethodSpec[];
}

export interface CreditFidelityResult {
  /** By method label, in the order given. */
  methods: Record<string, FidelityScores>;
  trajectories: number;
  turns: number;
  /** Share of successful trajectories. */
  success: number;
  /** Groups with no outcome contrast (GRPO gives them 0 everywhere). */
  deadGroups: number;
  /** Share of turns whose exact advantage is 0 (every action equally good there). */
  exactZeroShare: number;
}

export async function creditFidelity(opts: CreditFidelityOptions): Promise<CreditFidelityResult> {
  const tasks = makeTasks(opts.config, opts.groups, opts.seed);
  const batch = await rollout({
    tasks,
    samples: opts.groupSize,
    budget: opts.budget,
    revealBudget: opts.revealBudget ?? opts.policy.budgetAware,
    runSeed: opts.seed,
    policy: opts.policy,
    makeEnv,
  });
  const source = exactValueSource(() => opts.policy, '--policy');
  const truth = exactAdvantages(batch, source);
  const methods: Record<string, FidelityScores> = {};
  for (const spec of opts.methods) {
    methods[spec.label] = fidelity(
      creditForSpec(batch, spec, () => source, opts.seed),
      truth,
    );
  }
  const flat = flatten(truth);
  let zeros = 0;
  for (const x of flat) if (x === 0) zeros++;
  return {
    methods,
    trajectories: batch.length,
    turns: flat.length,
    success: batch.filter((t) => t.outcome.success).length / batch.length,
    deadGroups: deadGroups(batch).counts.dead,
    exactZeroShare: flat.length > 0 ? zeros / flat.length : 0,
  };
}
