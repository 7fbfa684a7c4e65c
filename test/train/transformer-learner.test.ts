// The transformer's token-level learner: one unit per action token (own false for forced turns), its
// log-probs are the ones the tokens were sampled with, and a short GRPO run changes the parameters and
// gives the same bytes for the same seed.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import type { Env, Task } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { expertTranscripts, transcriptTexts } from '../../src/train/transcripts.ts';
import { TransformerLearner } from '../../src/train/transformer-learner.ts';

const lake = envConfig('frozenlake', { random: true, size: 4, slippery: false });
const tasks = makeTasks(lake, 2, 0);
const spec = envs.spec(tasks[0]);
const dir = mkdtempSync(join(tmpdir(), 'tw-tlearn-'));
const tok = join(dir, 'tok.json');
writeFileSync(
  tok,
  JSON.stringify(
    trainBpe(
      transcriptTexts(await expertTranscripts({ envs, config: lake, episodes: 4, seed: 0, eps: 0.1 })),
      380,
    ).toJSON(),
  ),
);
const policy = (extra = '') =>
  makePolicy(
    `transformer:layers=1,d=16,heads=2,ctx=256,mode=text,seed=2,tokenizer=${tok}${extra}`,
    spec,
  ) as TransformerPolicy;
const view = (task: Task) => envs.make(task) as Env<unknown, unknown>;

test('units: one per action token, with the log-prob it was sampled with; a forced turn is not the policy’s own', async () => {
  for (const temperature of ['1', '0.7']) {
    const p = policy(`,temperature=${temperature}`);
    const trajectories = await rollout({
      tasks,
      samples: 2,
      budget: 3,
      runSeed: 4,
      policy: p,
      makeEnv: envs.make,
    });
    // An expert's forced turn: a valid action, no trace of the policy's.
    const first = trajectories[0].turns[0];
    Object.assign(first, { forced: true, action: 2, trace: undefined });
    const l = new TransformerLearner(p);
    const units = l.units(trajectories, view);
    let i = 0;
    const lp = l.logProbs(units);
    trajectories.forEach((t, b) => {
      for (const turn of t.turns) {
        const forced = turn.forced === true;
        const tokens = forced ? (p.actionTokens(spec, turn.action) ?? []) : (turn.trace?.tokens ?? []);
        assert.ok(tokens.length > 0);
        tokens.forEach((id, k) => {
          const u = units[i];
          assert.deepEqual([u.traj, u.t, u.k, u.target, u.own], [b, turn.t, k, id, !forced]);
          if (!forced) {
            assert.equal(u.logpOld, turn.trace!.logprobs![k]);
            assert.ok(
              Math.abs(lp[i] - u.logpOld) < 1e-5,
              `τ ${temperature} unit ${i}: ${lp[i]} vs ${u.logpOld}`,
            );
          }
          i++;
        });
      }
    });
    assert.equal(i, units.length);
  }
  assert.throws(() => new TransformerLearner(policy(',top_p=0.9')), InputError);
});

test('a short token-level GRPO run changes the parameters and repeats itself byte for byte', async () => {
  const config = parseTrainConfig({
    env: lake,
    iters: 2,
    groups: 2,
    groupSize: 4,
    budget: { kind: 'fixed', budget: 6 },
    trainSeeds: [0, 3],
    testSeeds: [1000, 1003],
    eval: { episodes: 4 },
    // An untrained model rarely writes a valid action, so its groups are dead (advantage 0): the
    // entropy bonus gives every token a gradient.
    ppo: { epochs: 1, minibatches: 2, entCoef: 0.01 },
    optim: { lr: 0.003 },
    // Expert prefixes: forced turns in the batch, read and never learned.
    guidance: { mode: 'gaussian', maxPrefix: 6 },
    seed: 7,
  });
  const run = async () => {
    const p = policy();
    const before = p.checkpoint();
    const r = await trainPolicyGradient({ config, envs, learner: new TransformerLearner(p) });
    return { before, after: (r.learner.policy as TransformerPolicy).checkpoint(), metrics: r.metrics };
  };
  const [a, b] = [await run(), await run()];
  assert.notDeepEqual(a.after, a.before);
  assert.deepEqual(a.after, b.after);
  assert.deepEqual(a.metrics, b.metrics);
  assert.equal(a.metrics.length, 2);
  for (const m of a.metrics) {
    assert.ok(m.values['train/turns'] > 8, 'every action token is a unit');
    assert.ok(m.values['train/grad_norm'] > 0);
    assert.ok(m.values['guidance/forced_turns'] > 0);
  }
});

test('forward groups: a step run one turn at a time (gradients accumulated) equals the step in one forward', async () => {
  const config = parseTrainConfig({
    env: lake,
    iters: 1,
    groups: 2,
    groupSize: 4,
    budget: { kind: 'fixed', budget: 6 },
    trainSeeds: [0, 3],
    testSeeds: [1000, 1003],
    eval: { episodes: 1 },
    ppo: { epochs: 1, minibatches: 1, entCoef: 0.01, klCoef: 0.1 },
    optim: { lr: 0.003 },
    seed: 7,
  });
  const run = async (forwardTokens: number) => {
    const learner = new TransformerLearner(policy());
    learner.forwardTokens = forwardTokens;
    const r = await trainPolicyGradient({ config, envs, learner });
    return { params: r.learner.params.map(([, t]) => Array.from(t.data)), m: r.metrics[0].values };
  };
  const [whole, perTurn] = [await run(1e9), await run(1)];
  assert.ok(perTurn.m['train/turns'] > 8);
  // The same sums in another order: equal to float32 rounding, never a different step.
  for (const k of ['train/loss', 'train/entropy', 'train/kl', 'train/grad_norm', 'train/approx_kl'])
    assert.ok(
      Math.abs(whole.m[k] - perTurn.m[k]) <= 1e-5 * (1 + Math.abs(whole.m[k])),
      `${k}: ${whole.m[k]} vs ${perTurn.m[k]}`,
    );
  let most = 0;
  whole.params.forEach((w, i) => {
    w.forEach((x, j) => {
      most = Math.max(most, Math.abs(x - perTurn.params[i][j]));
    });
  });
  assert.ok(most < 1e-5, `largest parameter difference ${most}`);
});
