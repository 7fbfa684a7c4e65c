// Fixtures of the budget study's tests: a tiny configuration, and a small, honest stand-in for issue
// 6's trainer (also used for a sample run): plain REINFORCE with a group-mean baseline (GRPO without the std division, Dr. GRPO's form), one
// Adam step per iteration on the loss of train/ppo.ts with ratio 1. It does train — the study's
// numbers move — but it is not the project's RL; the point is the pipeline's structure.

import { Rng } from '../../src/core/rng.ts';
import type { Env, Task, TurnContext } from '../../src/core/types.ts';
import { makeEnv } from '../../src/envs/index.ts';
import { stepReward } from '../../src/eval/step-reward.ts';
import { Adam } from '../../src/nn/optim.ts';
import { backward, tensor } from '../../src/nn/tensor.ts';
import type { StudyConfig } from '../../src/studies/budget/config.ts';
import { type CurvePoint, iterationRollouts, type RlTrainer } from '../../src/studies/budget/trainer.ts';
import { pgLoss } from '../../src/train/ppo.ts';

/** Small enough for a test (well under a second of study), big enough for every stage to have data. */
export const TINY: StudyConfig = {
  profile: 'custom',
  seed: 3,
  env: { size: 4, p: 0.8, slippery: true },
  seeds: { train: { start: 0, count: 150 }, test: { start: 1_000_000, count: 30 } },
  base: {
    expert: 'oracle:temp=0.02,horizon=20',
    budget: 100,
    episodesPerTask: 1,
    hidden: [16],
    epochs: 4,
    batchSize: 128,
    lr: 0.01,
  },
  rl: { budget: 50, iters: 8, groupSize: 4, groupsPerIter: 4, gigpo: false },
  budgetmix: { budgets: [10, 50] },
  eval: {
    K: [1, 2, 4],
    T: [10, 20, 50],
    samples: 4,
    diagnosticSamples: 3,
    states: 30,
    actions: 4,
    continuations: 2,
    resamples: 200,
  },
  timePlan: { total: 60, study: 25, training: 30 },
};

export function reinforceTrainer(lr = 0.002): RlTrainer {
  return async (req) => {
    const policy = req.base.clone(`${req.name}:reinforce`);
    const optimizer = new Adam(policy.net.namedParameters(), { lr });
    const curves: CurvePoint[] = [];
    const rng = Rng.derive(0);
    const envs = new Map<Task, Env<unknown, unknown>>();
    for (let iter = 0; iter < req.iters; iter++) {
      const batch = iterationRollouts(req, iter, policy);
      const G = req.groupSize;
      let turns = 0;
      for (const tr of batch) turns += tr.turns.length;
      const x = new Float32Array(turns * policy.inputs);
      const actions = new Int32Array(turns);
      const logpOld = new Float64Array(turns);
      const advantages = new Float64Array(turns);
      let row = 0;
      batch.forEach((tr, i) => {
        const group = batch.slice(i - (i % G), i - (i % G) + G);
        const mean = group.reduce((a, t) => a + (t.outcome.success ? 1 : 0), 0) / G;
        const A = (tr.outcome.success ? 1 : 0) - mean;
        let env = envs.get(tr.task);
        if (env === undefined) {
          env = makeEnv(tr.task);
          envs.set(tr.task, env);
        }
        for (const turn of tr.turns) {
          const ctx: TurnContext<unknown> = {
            observation: turn.observation,
            history: [],
            turn: turn.t,
            turnsLeft: req.revealBudget ? tr.budget - turn.t : undefined,
            rng,
            env,
          };
          policy.encode(ctx, x, row);
          actions[row] = turn.action as number;
          logpOld[row] = turn.logp;
          advantages[row] = A;
          row++;
        }
      });
      if (turns > 0) {
        optimizer.zeroGrad();
        const logits = policy.logits(tensor(x, [turns, policy.inputs]));
        const loss = pgLoss(
          {
            n: turns,
            nA: policy.actions,
            logits: logits.data,
            actions,
            logpOld,
            advantages,
            weights: new Float64Array(turns).fill(1 / turns),
          },
          { clipLow: 0.2, clipHigh: 0.2, klCoef: 0, entCoef: 0 },
        );
        backward(logits, Float32Array.from(loss.dlogits));
        optimizer.step();
      }
      const success = batch.filter((t) => t.outcome.success).length / batch.length;
      curves.push({ iter, trajectoryReward: success, stepReward: stepReward(batch) ?? Number.NaN });
      req.onProgress?.(iter + 1, req.iters);
    }
    return { policy, curves };
  };
}
