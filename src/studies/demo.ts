// The first-look demo (`npm start` until the budget study lands): random and oracle policies on
// slippery FrozenLake, success within T turns, measured by rollouts and computed exactly.
// Budget-blind policies run once at T_max and success within T is read off firstSuccessTurn (prefix
// mode); the budget-aware oracle plays differently at each T, so it runs once per T.
import type { EnvConfig, Policy, Task } from '../core/types.ts';
import { envConfig, envSpec, makeEnv, makeTasks } from '../envs/index.ts';
import { exactSuccess } from '../eval/exact.ts';
import { makePolicy } from '../policies/spec.ts';
import { rollout } from '../rollout/batch.ts';

export interface DemoCell {
  T: number;
  success: number;
  /** Wilson 95% interval of the measured rate. */
  ci95: [number, number];
  exact: number | null;
}

export interface DemoRow {
  map: string;
  policy: string;
  budgetAware: boolean;
  cells: DemoCell[];
}

export interface DemoOptions {
  episodes: number;
  budgets: number[];
  seed: number;
  maps: string[];
  policies: string[];
}

export const DEMO_DEFAULTS: DemoOptions = {
  episodes: 4000,
  budgets: [10, 20, 50, 100],
  seed: 0,
  maps: ['4x4', '8x8'],
  policies: ['random', 'oracle:eps=0.2,horizon=100', 'oracle:horizon=100', 'oracle'],
};

export function wilson(successes: number, n: number, z = 1.959963984540054): [number, number] {
  if (n === 0) return [0, 1];
  const p = successes / n;
  const d = 1 + (z * z) / n;
  const c = (p + (z * z) / (2 * n)) / d;
  const h = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / d;
  return [Math.max(0, c - h), Math.min(1, c + h)];
}

function run(tasks: Task[], policy: Policy<unknown, unknown>, budget: number, seed: number) {
  const r = rollout({ tasks, samples: 1, budget, runSeed: seed, policy, makeEnv });
  if (r instanceof Promise) throw new Error('demo policies are synchronous');
  return r;
}

export function budgetDemo(options: Partial<DemoOptions> = {}): DemoRow[] {
  const o = { ...DEMO_DEFAULTS, ...options };
  const Tmax = Math.max(...o.budgets);
  const rows: DemoRow[] = [];
  for (const map of o.maps) {
    const config: EnvConfig = envConfig('frozenlake', { map, slippery: true });
    const tasks = makeTasks(config, o.episodes, o.seed);
    const spec = envSpec(tasks[0]);
    const env = makeEnv(tasks[0]);
    for (const spec_ of o.policies) {
      const policy = makePolicy(spec_, spec);
      const cells: DemoCell[] = [];
      const prefix = policy.budgetAware ? undefined : run(tasks, policy, Tmax, o.seed);
      for (const T of o.budgets) {
        const trajectories = prefix ?? run(tasks, policy, T, o.seed);
        let c = 0;
        for (const t of trajectories)
          if (t.outcome.firstSuccessTurn !== null && t.outcome.firstSuccessTurn <= T) c++;
        cells.push({
          T,
          success: c / trajectories.length,
          ci95: wilson(c, trajectories.length),
          exact: exactSuccess(env, policy, T) ?? null,
        });
      }
      rows.push({ map, policy: policy.id, budgetAware: policy.budgetAware, cells });
    }
  }
  return rows;
}
