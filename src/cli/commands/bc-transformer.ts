// turnwise bc --policy transformer:…: behaviour cloning of an expert into the text policy (train/
// transformer-bc.ts), scored by rollouts on the training and held-out tasks beside the expert's, the
// random policy's and the optimum's exact success; the run directory's policy.safetensors is what
// `--policy DIR` loads.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../core/errors.ts';
import type { EnvConfig, EnvSpec, Policy, Task } from '../../core/types.ts';
import { envs } from '../../envs/index.ts';
import { POLICY_FILE } from '../../policies/checkpoint-file.ts';
import { makePolicy } from '../../policies/spec.ts';
import { TransformerPolicy } from '../../policies/transformer.ts';
import { cloneTransformer, type SampledSuccess } from '../../train/transformer-bc.ts';
import { fmt, json, out, Progress, table } from '../io.ts';
import { int, num } from '../options.ts';

/** The bc flags this path reads (bc.ts's BcFlags has them). */
export interface TransformerBcFlags {
  policy?: string;
  targets?: string;
  trainSeeds?: string;
  testSeeds?: string;
  epochs: string;
  batchSize?: string;
  lr?: string;
  weightDecay: string;
  episodesPerTask: string;
  evalSamples: string;
  out: string;
  json?: boolean;
}

export interface BcRun {
  config: EnvConfig;
  train: Task[];
  test: Task[];
  spec: EnvSpec;
  budget: number;
  expert: Policy<unknown, unknown>;
  runSeed: number;
}

export async function bcTransformer(flags: TransformerBcFlags, r: BcRun): Promise<void> {
  const policy = makePolicy(flags.policy as string, r.spec, '--policy');
  if (!(policy instanceof TransformerPolicy))
    throw new InputError(
      '--policy',
      flags.policy,
      'bc trains the MLP of --hidden (leave --policy out) or a transformer:… policy (or a saved one)',
    );
  if (flags.targets !== undefined && flags.targets !== 'actions')
    throw new InputError(
      '--targets',
      flags.targets,
      'a text policy learns the expert’s actions as text: actions',
    );
  const student = policy.trainedOn(r.spec);
  const epochs = int('--epochs', flags.epochs, 0, 1_000_000);
  const batchSize = int('--batch-size', flags.batchSize ?? '8', 1, 1_000_000);
  const lr = num('--lr', flags.lr ?? '0.001', (x) => x > 0 && x < 10, 'a learning rate in (0, 10)');
  const weightDecay = num('--weight-decay', flags.weightDecay, (x) => x >= 0 && x < 1, 'a number in [0, 1)');
  const episodesPerTask = int('--episodes-per-task', flags.episodesPerTask, 1, 10_000);
  const evalSamples = int('--eval-samples', flags.evalSamples, 1, 100_000);
  const t0 = performance.now();
  const progress = new Progress('bc', epochs);
  const res = await cloneTransformer({
    envs,
    train: r.train,
    test: r.test,
    expert: r.expert,
    student,
    budget: r.budget,
    episodesPerTask,
    evalSamples,
    runSeed: r.runSeed,
    clone: {
      epochs,
      batchSize,
      lr,
      weightDecay,
      seed: r.runSeed,
      onEpoch: (e, loss) => progress.update(e, `loss ${fmt(loss)}`),
    },
  });
  progress.done();
  if (res.data.targets === 0)
    throw InputError.raw('--train-seeds', 'the expert took no turn that fits the context');
  const file = join(flags.out, POLICY_FILE);
  const c = student.model.config;
  const summary = {
    env: r.config,
    expert: r.expert.id,
    student: {
      policy: policy.id,
      config: c,
      parameters: student.model.parameterCount(),
      vocab: student.tokenizer.vocabSize,
      format: student.format,
      maxTokens: student.maxTokens,
    },
    budget: r.budget,
    revealBudget: r.expert.budgetAware || student.budgetAware,
    train: {
      seeds: String(flags.trainSeeds).trim(),
      tasks: r.train.length,
      episodes: r.train.length * episodesPerTask,
      turns: res.data.turns,
      skipped: res.data.skipped,
      sequences: res.data.sequences.length,
      tokens: res.data.tokens,
      targets: res.data.targets,
      expertEpisodeSuccess: res.expertEpisodeSuccess,
      success: res.success.train,
    },
    test: { seeds: String(flags.testSeeds).trim(), tasks: r.test.length, success: res.success.test },
    training: {
      epochs,
      steps: res.result.steps,
      batchSize,
      lr,
      weightDecay,
      seed: r.runSeed,
      loss: res.result.losses.at(-1) ?? null,
      losses: res.result.losses,
    },
    out: file,
    seconds: (performance.now() - t0) / 1000,
  };
  mkdirSync(flags.out, { recursive: true });
  const { seconds: _s, out: _o, ...record } = summary; // the checkpoint stays byte-identical across reruns and moves
  student.save(file, res.result.optimizer, { bc: JSON.stringify(record) });
  writeFileSync(join(flags.out, 'bc.json'), `${JSON.stringify(summary, null, 2)}\n`);
  if (flags.json) return json(summary);
  const d = res.data;
  out(
    `behaviour cloning of ${r.expert.id} on ${r.config.env} ${JSON.stringify(r.config.params)}, budget ${r.budget}: ` +
      `${d.turns} expert turns (${d.skipped} left out) in ${d.sequences.length} sequences, ${d.tokens} tokens of which ${d.targets} the expert's; ` +
      `${epochs} epochs, final loss ${fmt(summary.training.loss)} per expert token`,
  );
  const row = (
    name: string,
    s: SampledSuccess,
    expert: number | null,
    random: number | null,
    best: number | null,
  ) => [
    name,
    fmt(s.success),
    fmt(s.stdErr),
    fmt(s.invalidRate),
    fmt(expert),
    random === null ? '-' : fmt(random),
    fmt(best),
    best === null || best === 0 ? '-' : fmt(s.success / best),
  ];
  const { train, test } = res.success;
  out(
    table([
      [
        'success',
        `student (${evalSamples} episodes/task)`,
        's.e.',
        'invalid rate',
        'expert',
        'random',
        'optimum',
        'student/optimum',
      ],
      row(`train (${r.train.length} tasks)`, train.student, train.expert, null, train.optimum),
      row(`held-out (${r.test.length} tasks)`, test.student, test.expert, test.random, test.optimum),
    ]),
  );
  out(`wrote ${file} (${student.model.parameterCount()} parameters) and ${join(flags.out, 'bc.json')}`);
}
