// Packed transformer training against the earlier path, in the same run: behaviour-cloning minibatches
// (train/transformer-bc.ts: packedCloningLoss against cloningLoss) and GRPO-style minibatches of the
// token-level learner (train/transformer-learner.ts: packed against one padded row per turn), at the
// size of the language agent's figures (2 layers, d 64, heads 4; FrozenLake's text view at ctx 192 with
// a 512-token BPE, sql level 1 at ctx 1024 with a 1024-token BPE, learned here as the figures' script
// learns them). Each step runs forward and backward (no optimizer step: the same in both paths),
// alternating the two paths step by step so that both see the same load. Printed per world and batch
// kind: action (expert or policy) tokens trained and tokens computed (padding included) per CPU-second
// and per wall-second, the speed-up, and the largest gradient difference between the paths (relative
// to the largest gradient, per parameter tensor) as a check. Machine- and load-dependent (the load
// average is printed), never asserted in tests.
//   node --import tsx bench/transformer-packing.ts [--steps N] [--tasks N] [--world frozenlake|sql]
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../src/core/rng.ts';
import { makeTasks } from '../src/core/tasks.ts';
import type { Env, EnvConfig, Task, Trajectory } from '../src/core/types.ts';
import { envConfig, envs } from '../src/envs/index.ts';
import { layoutTokens } from '../src/nn/attention.ts';
import { trainBpe } from '../src/nn/bpe.ts';
import { backward } from '../src/nn/tensor.ts';
import { makePolicy } from '../src/policies/spec.ts';
import type { TransformerPolicy } from '../src/policies/transformer.ts';
import { rollout } from '../src/rollout/batch.ts';
import type { Unit } from '../src/train/learner.ts';
import { expertTranscripts, transcriptTexts } from '../src/train/transcripts.ts';
import {
  cloningLoss,
  cloningSequences,
  packedCloningLoss,
  packedTokenBatch,
  tokenBatch,
} from '../src/train/transformer-bc.ts';
import { packTurns, TransformerLearner } from '../src/train/transformer-learner.ts';
import { benchArgs } from './args.ts';

const { values } = benchArgs('bench/transformer-packing.ts', {
  options: {
    steps: { type: 'string', default: '12' },
    tasks: { type: 'string', default: '24' },
    world: { type: 'string' },
  },
});
const steps = Number(values.steps);
const nTasks = Number(values.tasks);

interface World {
  name: string;
  config: EnvConfig;
  model: string;
  vocab: number;
  mode?: 'text';
  budget: number;
  batchSize: number;
}
const WORLDS: World[] = [
  {
    name: 'frozenlake',
    config: envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true }),
    model: 'layers=2,d=64,heads=4,ctx=192,mode=text',
    vocab: 512,
    mode: 'text',
    budget: 100,
    batchSize: 16,
  },
  {
    name: 'sql',
    config: envConfig('sql', { level: 1 }),
    model: 'layers=2,d=64,heads=4,ctx=1024,temperature=0.3',
    vocab: 1024,
    budget: 20,
    batchSize: 8,
  },
];

interface Tally {
  action: number;
  computed: number;
  cpu: number;
  wall: number;
}
const tally = (): Tally => ({ action: 0, computed: 0, cpu: 0, wall: 0 });

/** Runs f, adding its CPU (user + system, every thread of the process) and wall seconds to t. */
function timed(t: Tally, f: () => void): void {
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  f();
  const c = process.cpuUsage(c0);
  t.wall += (performance.now() - w0) / 1000;
  t.cpu += (c.user + c.system) / 1e6;
}

function report(before: Tally, after: Tally, gradDiff: number) {
  const rate = (t: Tally) => ({
    actionTokens: t.action,
    tokensComputed: t.computed,
    cpuSeconds: +t.cpu.toFixed(2),
    wallSeconds: +t.wall.toFixed(2),
    actionTokensPerCpuSecond: Math.round(t.action / t.cpu),
    tokensComputedPerCpuSecond: Math.round(t.computed / t.cpu),
    actionTokensPerWallSecond: Math.round(t.action / t.wall),
  });
  return {
    before: rate(before),
    after: rate(after),
    speedupCpu: +(before.cpu / after.cpu).toFixed(2),
    speedupWall: +(before.wall / after.wall).toFixed(2),
    tokensComputedRatio: +(after.computed / before.computed).toFixed(3),
    maxRelativeGradientDifference: gradDiff,
  };
}

/** Each parameter's gradient, then zeroed. */
function takeGrads(p: TransformerPolicy): Float32Array[] {
  return p.model.namedParameters().map(([, t]) => {
    const g = Float32Array.from(t.grad ?? new Float32Array(t.size));
    t.grad = null;
    return g;
  });
}

function relDiff(a: Float32Array[], b: Float32Array[]): number {
  let worst = 0;
  a.forEach((ga, i) => {
    let d = 0;
    let m = 0;
    for (let j = 0; j < ga.length; j++) {
      d = Math.max(d, Math.abs(ga[j] - b[i][j]));
      m = Math.max(m, Math.abs(b[i][j]));
    }
    if (m > 0) worst = Math.max(worst, d / m);
  });
  return Number(worst.toExponential(2));
}

async function bench(w: World) {
  const dir = mkdtempSync(join(tmpdir(), 'tw-bench-pack-'));
  const corpus = await expertTranscripts({
    envs,
    config: w.config,
    episodes: 200,
    seed: 0,
    eps: 0.1,
    mode: w.mode,
  });
  const tok = join(dir, 'tok.json');
  writeFileSync(tok, JSON.stringify(trainBpe(transcriptTexts(corpus), w.vocab).toJSON()));
  const tasks = makeTasks(w.config, nTasks, 0);
  const spec = envs.spec(tasks[0]);
  const policy = makePolicy(`transformer:${w.model},seed=0,tokenizer=${tok}`, spec) as TransformerPolicy;
  const made = new Map<Task, Env<unknown, unknown>>();
  for (const t of tasks) made.set(t, (await envs.make(t)) as Env<unknown, unknown>);
  const viewOf = (t: Task) => made.get(t) as Env<unknown, unknown>;
  const expert = makePolicy('oracle:eps=0.1', spec);
  const rng = Rng.derive(1);

  // Behaviour cloning: one expert episode per task, minibatches of batchSize sequences.
  const demos = await rollout({
    tasks,
    samples: 1,
    budget: w.budget,
    runSeed: 0,
    policy: expert,
    makeEnv: envs.make,
  });
  const data = cloningSequences(policy, demos, viewOf);
  const bcBefore = tally();
  const bcAfter = tally();
  let bcDiff = 0;
  for (let s = 0; s < steps; s++) {
    const seqs = Array.from({ length: w.batchSize }, () => data.sequences[rng.int(data.sequences.length)]);
    const padded = tokenBatch(seqs);
    const packed = packedTokenBatch(seqs);
    timed(bcBefore, () => backward(cloningLoss(policy, padded)));
    const gBefore = takeGrads(policy);
    timed(bcAfter, () => backward(packedCloningLoss(policy, packed)));
    bcDiff = Math.max(bcDiff, relDiff(takeGrads(policy), gBefore));
    bcBefore.action += packed.targets.length;
    bcAfter.action += packed.targets.length;
    bcBefore.computed += padded.inputs.length;
    bcAfter.computed += layoutTokens(packed.layout);
  }

  // GRPO-style: 8 groups × 8 episodes per batch (the figures' `train`), its units shuffled into two
  // minibatches as update.ts does, each minibatch in the learner's forward groups. The turns are the
  // expert's written as the policy writes them (its trained policy's prompts look the same).
  const grpoBefore = tally();
  const grpoAfter = tally();
  let grpoDiff = 0;
  const learner = new TransformerLearner(policy);
  const batches = Math.max(1, Math.round(steps / 6));
  for (let b = 0; b < batches; b++) {
    const groupTasks = Array.from({ length: 8 }, (_, i) => tasks[(b * 8 + i) % tasks.length]);
    const episodes: Trajectory[] = await rollout({
      tasks: groupTasks,
      samples: 8,
      budget: w.budget,
      runSeed: 10 + b,
      policy: expert,
      makeEnv: envs.make,
    });
    const forced = episodes.map((t) => ({ ...t, turns: t.turns.map((turn) => ({ ...turn, forced: true })) }));
    const units = learner.units(forced, viewOf);
    const turnOf = new Map<unknown, TurnTokens>();
    for (const u of units)
      if (!turnOf.has(u.ctx))
        turnOf.set(u.ctx, {
          prompt: policy.prompt(u.ctx).tokens,
          action: policy.actionTokens(spec, forced[u.traj].turns[u.t].action) ?? [],
        });
    const order = [...units];
    rng.shuffle(order);
    const half = Math.ceil(order.length / 2);
    for (const mb of [order.slice(0, half), order.slice(half)]) {
      // The loss's gradient by the logits, a fixed pseudo-random row per unit (whatever group it is in).
      const index = new Map(mb.map((u, i) => [u, i]));
      const V = learner.actions;
      const weights = (part: readonly Unit[]) => {
        const out = new Float32Array(part.length * V);
        part.forEach((u, r) => {
          const i = index.get(u) as number;
          for (let c = 0; c < V; c++) out[r * V + c] = Math.sin(i * V + c);
        });
        return out;
      };
      const run = (packed: boolean, t: Tally) => {
        learner.packed = packed;
        const groups = learner.forwardGroups(mb);
        for (const g of groups) {
          const part = g.map((j) => mb[j]);
          t.computed += computedTokens(part, turnOf, packed);
          timed(t, () => backward(learner.logits(part), weights(part)));
        }
        t.action += mb.length;
      };
      run(false, grpoBefore);
      const gBefore = takeGrads(policy);
      run(true, grpoAfter);
      grpoDiff = Math.max(grpoDiff, relDiff(takeGrads(policy), gBefore));
    }
  }
  return {
    world: w.name,
    model: w.model,
    bc: { steps, batchSize: w.batchSize, ...report(bcBefore, bcAfter, bcDiff) },
    grpo: { batches, groups: 8, groupSize: 8, minibatches: 2, ...report(grpoBefore, grpoAfter, grpoDiff) },
  };
}

type TurnTokens = { prompt: number[]; action: number[] };

/** Tokens one forward computes: the per-turn path pads every turn to the longest; packed, the layout. */
function computedTokens(units: readonly Unit[], turnOf: Map<unknown, TurnTokens>, packed: boolean): number {
  const seen = new Map<unknown, Unit>();
  for (const u of units) if (!seen.has(u.ctx)) seen.set(u.ctx, u);
  const list = [...seen.values()];
  const turns = list.map((u) => turnOf.get(u.ctx) as TurnTokens);
  if (!packed) return turns.length * Math.max(...turns.map((t) => t.prompt.length + t.action.length - 1));
  list.sort((a, b) => a.traj - b.traj || a.t - b.t);
  return layoutTokens(packTurns(list.map((u) => turnOf.get(u.ctx) as TurnTokens)).layout);
}

const load0 = loadavg();
const worlds = WORLDS.filter((w) => values.world === undefined || w.name === values.world);
const results = [];
for (const w of worlds) results.push(await bench(w));
console.log(
  JSON.stringify(
    {
      loadavg: { before: load0.map((x) => +x.toFixed(2)), after: loadavg().map((x) => +x.toFixed(2)) },
      results,
    },
    null,
    1,
  ),
);
