// Packed training of the transformer (the shared prefix computed once, nested turns in one sequence)
// against the earlier path (one padded row per turn or sequence), on real transcripts: FrozenLake's text
// view at ctx 192 (prompts share the system message, never nest) and sql at ctx 1024 (a trajectory's
// prompts nest). The logits and the loss are the same bits; every parameter's gradient is the same to
// float rounding — the prefix's share arrives as one sum over the rows instead of one per row, so the
// additions run in another order: we require max |Δg| ≤ 1e-5 · max |g| per parameter tensor (float32
// keeps 24 bits, ≈ 6e-8 relative, and a gradient sums a few thousand terms).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Rng } from '../../src/core/rng.ts';
import type { Env, EnvConfig, Task, Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { layoutTokens } from '../../src/nn/attention.ts';
import { trainBpe } from '../../src/nn/bpe.ts';
import { backward, noGrad, type Tensor } from '../../src/nn/tensor.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { rollout } from '../../src/rollout/batch.ts';
import type { Unit } from '../../src/train/learner.ts';
import { expertTranscripts, transcriptTexts } from '../../src/train/transcripts.ts';
import {
  cloningLoss,
  cloningSequences,
  packedCloningLoss,
  packedTokenBatch,
  tokenBatch,
} from '../../src/train/transformer-bc.ts';
import { packTurns, TransformerLearner } from '../../src/train/transformer-learner.ts';

const bits = (x: Float32Array) => [...new Uint32Array(x.buffer, x.byteOffset, x.length)];
const dir = mkdtempSync(join(tmpdir(), 'tw-tpack-'));

interface World {
  name: string;
  config: EnvConfig;
  model: string;
  budget: number;
}
const worlds: World[] = [
  {
    name: 'frozenlake',
    config: envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true }),
    model: 'layers=2,d=16,heads=2,ctx=192,mode=text',
    budget: 12,
  },
  {
    name: 'sql',
    config: envConfig('sql', { level: 1 }),
    model: 'layers=2,d=16,heads=2,ctx=1024,max_tokens=48',
    budget: 20,
  },
];

async function setup(w: World, vocab: number) {
  const corpus = await expertTranscripts({
    envs,
    config: w.config,
    episodes: 30,
    seed: 0,
    eps: 0.1,
    mode: w.name === 'frozenlake' ? 'text' : undefined,
  });
  const tok = join(dir, `${w.name}.json`);
  writeFileSync(tok, JSON.stringify(trainBpe(transcriptTexts(corpus), vocab).toJSON()));
  const tasks = makeTasks(w.config, 3, 500);
  const spec = envs.spec(tasks[0]);
  const made = new Map<Task, Env<unknown, unknown>>();
  for (const t of tasks) made.set(t, (await envs.make(t)) as Env<unknown, unknown>);
  const policy = makePolicy(`transformer:${w.model},seed=3,tokenizer=${tok}`, spec) as TransformerPolicy;
  // The expert's episodes, 2 per task (a GRPO group's shape), its turns as the policy would write them.
  const expert = await rollout({
    tasks,
    samples: 2,
    budget: w.budget,
    runSeed: 7,
    policy: makePolicy('oracle:eps=0.2', spec),
    makeEnv: envs.make,
  });
  return { policy, spec, expert, viewOf: (t: Task) => made.get(t) as Env<unknown, unknown> };
}

/** Each parameter's gradient after backward(f()), zeroed before. */
function grads(
  p: TransformerPolicy,
  f: () => Tensor,
  w?: Float32Array,
): { value: Float32Array; g: Float32Array[] } {
  const params = p.model.namedParameters().map(([, t]) => t);
  for (const t of params) t.grad = null;
  const y = f();
  backward(y, w);
  return {
    value: Float32Array.from(y.data),
    g: params.map((t) => Float32Array.from(t.grad ?? new Float32Array(t.size))),
  };
}

function sameGradients(p: TransformerPolicy, a: Float32Array[], b: Float32Array[], what: string): void {
  const names = p.model.namedParameters().map(([n]) => n);
  a.forEach((ga, i) => {
    let diff = 0;
    let most = 0;
    for (let j = 0; j < ga.length; j++) {
      diff = Math.max(diff, Math.abs(ga[j] - b[i][j]));
      most = Math.max(most, Math.abs(b[i][j]));
    }
    assert.ok(most > 0, `${what}: ${names[i]} has no gradient`);
    assert.ok(diff <= 1e-5 * most, `${what}: ${names[i]} off by ${diff} (max |g| ${most})`);
  });
}

/** Units as update.ts's minibatches see them: shuffled. */
function shuffled(units: readonly Unit[], seed: number): Unit[] {
  const out = [...units];
  Rng.derive(seed).shuffle(out);
  return out;
}

for (const w of worlds) {
  test(`${w.name}: the token-level learner's packed logits are the per-turn path's bits, its gradients equal to rounding`, async () => {
    const { policy, expert, viewOf, spec } = await setup(w, w.name === 'sql' ? 600 : 512);
    // The policy's own turns (its tokens and log-probs in the trace) where it writes a short reply,
    // and the expert's turns written as the policy would write them (forced: read, never learned).
    const own = await rollout({
      tasks: [...new Set(expert.map((t) => t.task))],
      samples: 2,
      budget: 3,
      runSeed: 9,
      policy,
      makeEnv: envs.make,
    });
    const forced: Trajectory[] = expert.map((t) => ({
      ...t,
      turns: t.turns.map((turn) => ({ ...turn, forced: true, trace: undefined })),
    }));
    const batch = [...own, ...forced];
    const l = new TransformerLearner(policy);
    const units = shuffled(l.units(batch, viewOf), 1);
    assert.ok(units.some((u) => u.own) && units.some((u) => !u.own));
    // Packing removes tokens: the shared system message on both envs, nested turns on sql.
    const turns = [...new Map(units.map((u) => [u.ctx, u])).values()]
      .sort((a, b) => a.traj - b.traj || a.t - b.t)
      .map((u) => ({
        prompt: policy.prompt(u.ctx).tokens,
        action:
          u.traj < own.length
            ? (own[u.traj].turns[u.t].trace?.tokens ?? [])
            : (policy.actionTokens(spec, batch[u.traj].turns[u.t].action) ?? []),
      }));
    const perTurn = turns.reduce((n, t) => n + t.prompt.length + t.action.length - 1, 0);
    const packed = packTurns(turns);
    assert.ok(packed.layout.prefix > 20, `a shared prefix of ${packed.layout.prefix} tokens`);
    assert.ok(
      layoutTokens(packed.layout) < 0.6 * perTurn,
      `${layoutTokens(packed.layout)} of ${perTurn} tokens`,
    );
    if (w.name === 'sql') assert.ok(new Set(packed.place).size < turns.length, 'sql turns share sequences');

    const weights = Float32Array.from({ length: units.length * l.actions }, (_, i) => Math.sin(i * 0.37));
    l.packed = false;
    const before = grads(policy, () => l.logits(units), weights);
    const lpBefore = l.logProbs(units);
    l.packed = true;
    const after = grads(policy, () => l.logits(units), weights);
    assert.deepEqual(bits(after.value), bits(before.value), 'logits');
    sameGradients(policy, after.g, before.g, w.name);
    // logProbs (no graph), in forward groups small enough to split trajectories between them.
    for (const cap of [16_384, 300]) {
      l.forwardTokens = cap;
      const groups = l.forwardGroups(units);
      assert.deepEqual(
        groups.flat().sort((a, b) => a - b),
        units.map((_, i) => i),
      );
      if (cap === 300) assert.ok(groups.length > 1);
      assert.deepEqual([...l.logProbs(units)], [...lpBefore], `logProbs in groups of ${cap} tokens`);
    }
    assert.deepEqual(bits(noGrad(() => l.logits(units)).data), bits(before.value));
  });

  test(`${w.name}: behaviour cloning's packed batch has the padded batch's loss bit for bit, its gradients to rounding, and the same targets`, async () => {
    const { policy, expert, viewOf } = await setup(w, w.name === 'sql' ? 600 : 512);
    const data = cloningSequences(policy, expert, viewOf);
    const seqs = data.sequences.slice(0, 9);
    const padded = tokenBatch(seqs);
    const packed = packedTokenBatch(seqs);
    // The mask: the packed targets are exactly the padded batch's weighted (expert) targets, in order.
    const want: number[] = [];
    padded.weights.forEach((x, i) => {
      if (x === 1) want.push(padded.targets[i]);
    });
    assert.deepEqual([...packed.targets], want);
    assert.equal(
      packed.targets.length,
      seqs.reduce((n, s) => n + s.assistant.slice(1).reduce((a, b) => a + b, 0), 0),
    );
    assert.ok(packed.layout.prefix > 20 && layoutTokens(packed.layout) < padded.inputs.length / 2);
    const before = grads(policy, () => cloningLoss(policy, padded));
    const after = grads(policy, () => packedCloningLoss(policy, packed));
    assert.deepEqual(bits(after.value), bits(before.value), 'loss');
    sameGradients(policy, after.g, before.g, w.name);
  });
}
