// Exact success within each T on one map, by dynamic programming over the map (eval/exact for a
// policy, the env's oracle for the optimum): what the exact Pass@(K,T), the reference policies and the
// temperature control are made of.
import type { Oracle, Task } from '../../../core/types.ts';
import { exactPolicyValues } from '../../../eval/exact.ts';
import type { AnyPolicy } from '../setup.ts';
import type { MakeEnv } from '../world.ts';

/** Success within each T of a policy on one map, exactly (V^π_T at the start cells). */
export function exactByT(task: Task, policy: AnyPolicy, T: readonly number[], envs: MakeEnv): Float64Array {
  const env = envs.make(task);
  const oracle = env.oracle?.() as Oracle<unknown> | undefined;
  const Tmax = T[T.length - 1];
  const values = exactPolicyValues(env, policy, Tmax, policy.budgetAware);
  if (oracle === undefined || values === undefined) throw new Error(`no exact values for ${policy.id}`);
  return Float64Array.from(T, (t) => {
    let v = 0;
    for (const s of oracle.starts) v += values.V[t * values.nS + s];
    return v / oracle.starts.length;
  });
}

/** The optimum's success within each T on one map (V*_T at the start cells, from the env's oracle). */
export function optimalByT(task: Task, T: readonly number[], envs: MakeEnv): Float64Array {
  const oracle = envs.make(task).oracle!() as Oracle<unknown>;
  return Float64Array.from(T, (t) => {
    let v = 0;
    for (const s of oracle.starts) v += oracle.v(t, s);
    return v / oracle.starts.length;
  });
}
