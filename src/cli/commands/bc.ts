// turnwise bc: behaviour cloning of an expert into a neural policy over random-map tasks, scored by
// exact success on the training maps and on held-out maps, next to the expert and the random policy.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { EnvConfig } from '../../core/types.ts';
import { envSpec, envs, makeTasks } from '../../envs/index.ts';
import { meanExactSuccess } from '../../eval/exact.ts';
import { ACTIVATIONS } from '../../nn/layers.ts';
import { mlpPolicyConfig, NeuralPolicy, POLICY_FILE } from '../../policies/neural.ts';
import { activation, hiddenWidths, makePolicy } from '../../policies/spec.ts';
import { checkOutput } from '../../store/paths.ts';
import { type BcTargets, collectDemonstrations, revealFor, trainBc } from '../../train/bc.ts';
import { fmt, json, out, Progress, table } from '../io.ts';
import { type EnvFlags, envConfigFromFlags, envOptions, int, num, seed, seedRange } from '../options.ts';
import { ABOUT } from './about.ts';
import { bcTransformer } from './bc-transformer.ts';

interface BcFlags extends EnvFlags {
  env: string;
  policy?: string;
  evalSamples: string;
  expert?: string;
  trainSeeds?: string;
  testSeeds?: string;
  budget?: string;
  hidden: string;
  activation: string;
  budgetAware?: boolean;
  targets?: string;
  episodesPerTask: string;
  epochs: string;
  batchSize?: string;
  lr?: string;
  weightDecay: string;
  out: string;
  seed: string;
  json?: boolean;
}

export function registerBc(program: Command): void {
  envOptions(program.command('bc').description(ABOUT.bc.description))
    .option('--env <id>', 'environment id', 'frozenlake')
    .option(
      '--expert <spec>',
      'the policy to imitate (needs probs for --targets probs) (default: oracle:horizon=100 on frozenlake, the scripted oracle on a tool env)',
    )
    .option('--train-seeds <A:B>', 'training task seeds A..B−1 (random maps: one map per seed)')
    .option('--test-seeds <A:B>', 'held-out task seeds A..B−1')
    .option('--budget <T>', 'turn budget of demonstrations and evaluation (default: the registered limit)')
    .option(
      '--policy <spec>',
      'the student: an MLP over the features by default (--hidden, --activation), or transformer:… (a text policy cloned on its prompt; see docs)',
    )
    .option('--hidden <sizes>', 'hidden layer widths', '64x64')
    .option('--activation <name>', ACTIVATIONS.join(' | '), 'relu')
    .option('--budget-aware', 'the student sees the turns left (default: when the expert does)')
    .option('--no-budget-aware', 'the student never sees the turns left')
    .option(
      '--targets <kind>',
      "probs (the expert's distribution) | actions (its sampled actions); default probs (a transformer: actions, as text)",
    )
    .option('--episodes-per-task <n>', 'demonstration episodes per training task', '1')
    .option('--epochs <n>', 'passes over the demonstrations', '30')
    .option('--batch-size <n>', 'examples per Adam step (default 256; a transformer: 8 sequences)')
    .option('--lr <x>', 'Adam learning rate (default 0.003; a transformer: 0.001)')
    .option('--eval-samples <n>', 'a text policy is scored by rollouts: episodes per task', '8')
    .option('--weight-decay <x>', 'decoupled weight decay (AdamW); 0 = Adam', '0')
    .option('--out <dir>', `run directory (the policy goes to <dir>/${POLICY_FILE})`, 'runs/bc')
    .option('--seed <n>', 'seed of the initialisation, the demonstrations and the shuffling', '0')
    .option('--json', 'machine-readable output')
    .action(async (flags: BcFlags) => {
      if (flags.trainSeeds === undefined)
        throw InputError.raw('--train-seeds', 'missing; give A:B, e.g. 0:5000');
      if (flags.testSeeds === undefined)
        throw InputError.raw('--test-seeds', 'missing; give A:B, e.g. 1000000:1000200');
      const trainRange = seedRange('--train-seeds', flags.trainSeeds);
      const testRange = seedRange('--test-seeds', flags.testSeeds);
      // Scores on "held-out" tasks that were trained on would be reported as generalisation: refused.
      if (trainRange.start < testRange.end && testRange.start < trainRange.end) {
        throw new InputError(
          '--test-seeds',
          flags.testSeeds,
          `must not overlap --train-seeds ${trainRange.start}:${trainRange.end} (the held-out tasks would include trained ones)`,
        );
      }
      checkOutput(flags.out, '--out', 'dir');
      const runSeed = seed(flags.seed);
      const config: EnvConfig = envConfigFromFlags(flags.env, flags);
      const train = makeTasks(config, trainRange.end - trainRange.start, trainRange.start);
      const test = makeTasks(config, testRange.end - testRange.start, testRange.start);
      const spec = envSpec(train[0]);
      const budget =
        flags.budget === undefined ? (spec.maxTurns ?? 100) : int('--budget', flags.budget, 1, 1_000_000);
      const expertSpec = flags.expert ?? (spec.tools === undefined ? 'oracle:horizon=100' : 'oracle');
      const expert = makePolicy(expertSpec, spec, '--expert');
      if (flags.policy !== undefined)
        return bcTransformer(flags, { config, train, test, spec, budget, expert, runSeed });
      const targets = (flags.targets ?? 'probs') as BcTargets;
      if (targets !== 'probs' && targets !== 'actions') {
        throw new InputError('--targets', targets, 'expected probs or actions');
      }
      const student = new NeuralPolicy(
        mlpPolicyConfig(
          spec,
          {
            hidden: hiddenWidths(flags.hidden, '--hidden'),
            activation: activation(flags.activation, '--activation'),
            budgetAware: flags.budgetAware ?? expert.budgetAware,
            seed: runSeed,
          },
          '--env',
        ),
      );
      const epochs = int('--epochs', flags.epochs, 0, 1_000_000);
      const batchSize = int('--batch-size', flags.batchSize ?? '256', 1, 1_000_000);
      const lr = num('--lr', flags.lr ?? '0.003', (x) => x > 0 && x < 10, 'a learning rate in (0, 10)');
      const weightDecay = num(
        '--weight-decay',
        flags.weightDecay,
        (x) => x >= 0 && x < 1,
        'a number in [0, 1)',
      );
      const episodesPerTask = int('--episodes-per-task', flags.episodesPerTask, 1, 10_000);
      const reveal = revealFor(expert, student);

      const t0 = performance.now();
      const data = await collectDemonstrations({
        envs,
        tasks: train,
        expert,
        student,
        budget,
        episodesPerTask,
        runSeed,
        targets,
      });
      if (data.n === 0) throw InputError.raw('--train-seeds', 'the expert took no turns on these tasks');
      const progress = new Progress('bc', epochs);
      const result = trainBc(student, data, {
        epochs,
        batchSize,
        lr,
        weightDecay,
        seed: runSeed,
        onEpoch: (e, loss) => progress.update(e, `loss ${fmt(loss)}`),
      });
      progress.done();
      const random = makePolicy('random', spec);
      const success = {
        train: {
          student: await meanExactSuccess(envs, train, student, budget, reveal),
          expert: await meanExactSuccess(envs, train, expert, budget, reveal),
        },
        test: {
          student: await meanExactSuccess(envs, test, student, budget, reveal),
          expert: await meanExactSuccess(envs, test, expert, budget, reveal),
          random: await meanExactSuccess(envs, test, random, budget, false),
        },
      };
      const file = join(flags.out, POLICY_FILE);
      const summary = {
        env: config,
        expert: expert.id,
        student: {
          hidden: student.config.hidden,
          activation: student.config.activation,
          budgetAware: student.budgetAware,
          parameters: student.parameterCount(),
        },
        budget,
        revealBudget: reveal,
        train: {
          seeds: flags.trainSeeds.trim(),
          tasks: train.length,
          episodes: train.length * episodesPerTask,
          turns: data.turns,
          examples: data.n,
          expertEpisodeSuccess: data.expertSuccess,
          success: success.train,
        },
        test: { seeds: flags.testSeeds.trim(), tasks: test.length, success: success.test },
        training: {
          targets,
          epochs,
          steps: result.steps,
          batchSize,
          lr,
          weightDecay,
          seed: runSeed,
          loss: result.losses.at(-1) ?? null,
          losses: result.losses,
        },
        out: file,
        seconds: (performance.now() - t0) / 1000,
      };
      mkdirSync(flags.out, { recursive: true });
      const { seconds: _s, out: _o, ...record } = summary; // the checkpoint stays byte-identical across reruns and moves
      student.save(file, result.optimizer, { bc: JSON.stringify(record) });
      writeFileSync(join(flags.out, 'bc.json'), `${JSON.stringify(summary, null, 2)}\n`);

      if (flags.json) return json(summary);
      out(
        `behaviour cloning of ${expert.id} on ${config.env} ${JSON.stringify(config.params)}, budget ${budget}: ` +
          `${data.n} examples from ${data.turns} expert turns on ${train.length} tasks, ${epochs} epochs, final loss ${fmt(summary.training.loss)}`,
      );
      out(
        table([
          ['exact success', 'student', 'expert', 'random'],
          [`train (${train.length} tasks)`, fmt(success.train.student), fmt(success.train.expert), '-'],
          [
            `held-out (${test.length} tasks)`,
            fmt(success.test.student),
            fmt(success.test.expert),
            fmt(success.test.random),
          ],
        ]),
      );
      out(`wrote ${file} (${student.parameterCount()} parameters) and ${join(flags.out, 'bc.json')}`);
    });
}
