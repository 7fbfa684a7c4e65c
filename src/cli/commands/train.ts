// turnwise train — GRPO/PPO/ES training runs with checkpoints, resume and metrics.
// `--config run.json` gives a whole config (src/train/config.ts); flags set single fields on top of it.
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { METHOD_NAMES } from '../../credit/index.ts';
import { envs } from '../../envs/index.ts';
import { readText } from '../../store/jsonl.ts';
import { parseTrainConfig, type TrainConfig } from '../../train/config.ts';
import { trainEs } from '../../train/es-train.ts';
import { trainPolicyGradient } from '../../train/loop.ts';
import { RunDir } from '../../train/run-dir.ts';
import { fmt, interactive, json, out, Progress, table, warn } from '../io.ts';
import {
  type EnvFlags,
  envConfigFromFlags,
  envOptions,
  int,
  intList,
  num,
  probability,
  seed,
  seedRange,
} from '../options.ts';

interface TrainFlags extends EnvFlags {
  config?: string;
  resume?: string;
  env?: string;
  policy?: string;
  algo?: string;
  iters?: string;
  groups?: string;
  groupSize?: string;
  budget?: string;
  budgetMix?: string;
  revealBudget?: boolean;
  credit?: string;
  gamma?: string;
  lambda?: string;
  lr?: string;
  epochs?: string;
  minibatches?: string;
  clipLow?: string;
  clipHigh?: string;
  kl?: string;
  entropy?: string;
  aggregation?: string;
  dynamicSampling?: boolean;
  guidance?: string;
  expert?: string;
  maxPrefix?: string;
  crossPolicy?: string;
  trainSeeds?: string;
  testSeeds?: string;
  evalEpisodes?: string;
  evalBudget?: string;
  esPairs?: string;
  esSigma?: string;
  esLr?: string;
  workers?: string;
  checkpointEvery?: string;
  storeTrajectories?: boolean;
  seed?: string;
  out?: string;
  json?: boolean;
}

const oneOf = (flag: string, raw: string, allowed: readonly string[]) => {
  if (!allowed.includes(raw)) throw new InputError(flag, raw, `expected one of: ${allowed.join(', ')}`);
  return raw;
};

/** `tabular`, `mlp[:hidden=64x64,activation=relu,budgetAware=1]`, or a checkpoint path. */
function policyConfig(raw: string): Record<string, unknown> {
  if (raw === 'tabular') return { kind: 'tabular' };
  if (raw === 'mlp' || raw.startsWith('mlp:')) {
    const p: Record<string, unknown> = { kind: 'mlp' };
    for (const part of raw.slice(4).split(',').filter(Boolean)) {
      const [k, v] = part.split('=');
      if (k === 'hidden') p.hidden = v.split('x').map((x) => int('--policy mlp.hidden', x, 1, 4096));
      else if (k === 'activation')
        p.activation = oneOf('--policy mlp.activation', v, ['relu', 'tanh', 'gelu']);
      else if (k === 'budgetAware') p.budgetAware = v === '1' || v === 'true';
      else throw new InputError('--policy', raw, 'mlp takes hidden=, activation=, budgetAware=');
    }
    return p;
  }
  if (existsSync(raw)) return { kind: 'checkpoint', path: raw };
  throw new InputError('--policy', raw, 'expected tabular, mlp[:hidden=64x64,…] or a checkpoint path');
}

const set = (o: Record<string, unknown>, path: string[], value: unknown) => {
  let cur = o;
  for (const k of path.slice(0, -1)) {
    if (typeof cur[k] !== 'object' || cur[k] === null) cur[k] = {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[path.at(-1)!] = value;
};

/** The config file (if any) with every given flag applied, validated. */
export function configFromFlags(f: TrainFlags): TrainConfig {
  let raw: Record<string, unknown> = {};
  if (f.config !== undefined) {
    try {
      raw = JSON.parse(readText(f.config, '--config'));
    } catch (e) {
      if (e instanceof InputError) throw e;
      throw new InputError('--config', f.config, `not valid JSON (${(e as Error).message})`);
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new InputError('--config', f.config, 'expected a JSON object');
  }
  const envGiven = [f.env, f.map, f.slippery, f.successRate, f.random, f.size, f.p].some(
    (x) => x !== undefined,
  );
  if (envGiven || raw.env === undefined) raw.env = envConfigFromFlags(f.env ?? 'frozenlake', f);
  if (f.policy !== undefined) raw.policy = policyConfig(f.policy);
  if (f.algo !== undefined) raw.algo = oneOf('--algo', f.algo, ['grpo', 'ppo', 'es']);
  if (f.iters !== undefined) raw.iters = int('--iters', f.iters, 1, 10_000_000);
  if (f.groups !== undefined) raw.groups = int('--groups', f.groups, 1, 100_000);
  if (f.groupSize !== undefined) raw.groupSize = int('--group-size', f.groupSize, 1, 100_000);
  if (f.budget !== undefined && f.budgetMix !== undefined) {
    throw new InputError('--budget-mix', f.budgetMix, 'give --budget or --budget-mix, not both');
  }
  if (f.budget !== undefined) raw.budget = { kind: 'fixed', budget: int('--budget', f.budget, 1, 1_000_000) };
  if (f.budgetMix !== undefined) raw.budget = { kind: 'mix', budgets: intList('--budget-mix', f.budgetMix) };
  if (f.revealBudget !== undefined) raw.revealBudget = f.revealBudget;
  if (f.credit !== undefined) set(raw, ['credit', 'method'], oneOf('--credit', f.credit, METHOD_NAMES));
  if (f.gamma !== undefined) set(raw, ['credit', 'gamma'], probability('--gamma', f.gamma));
  if (f.lambda !== undefined)
    set(
      raw,
      ['credit', 'lambda'],
      num('--lambda', f.lambda, (x) => x >= 0, 'a number ≥ 0'),
    );
  if (f.lr !== undefined)
    set(
      raw,
      ['optim', 'lr'],
      num('--lr', f.lr, (x) => x > 0, 'a number > 0'),
    );
  if (f.epochs !== undefined) set(raw, ['ppo', 'epochs'], int('--epochs', f.epochs, 1, 1000));
  if (f.minibatches !== undefined)
    set(raw, ['ppo', 'minibatches'], int('--minibatches', f.minibatches, 1, 100_000));
  if (f.clipLow !== undefined) set(raw, ['ppo', 'clipLow'], probability('--clip-low', f.clipLow));
  if (f.clipHigh !== undefined)
    set(
      raw,
      ['ppo', 'clipHigh'],
      num('--clip-high', f.clipHigh, (x) => x >= 0, 'a number ≥ 0'),
    );
  if (f.kl !== undefined)
    set(
      raw,
      ['ppo', 'klCoef'],
      num('--kl', f.kl, (x) => x >= 0, 'a number ≥ 0'),
    );
  if (f.entropy !== undefined)
    set(
      raw,
      ['ppo', 'entCoef'],
      num('--entropy', f.entropy, (x) => x >= 0, 'a number ≥ 0'),
    );
  if (f.aggregation !== undefined) {
    set(
      raw,
      ['ppo', 'aggregation'],
      oneOf('--aggregation', f.aggregation, ['turn-mean', 'sequence-mean', 'constant-sum']),
    );
  }
  if (f.dynamicSampling) set(raw, ['dynamicSampling', 'enabled'], true);
  if (f.guidance !== undefined)
    set(raw, ['guidance', 'mode'], oneOf('--guidance', f.guidance, ['none', 'gaussian', 'bread']));
  if (f.expert !== undefined) set(raw, ['guidance', 'expert'], f.expert);
  if (f.maxPrefix !== undefined)
    set(raw, ['guidance', 'maxPrefix'], int('--max-prefix', f.maxPrefix, 0, 1_000_000));
  if (f.crossPolicy !== undefined)
    set(raw, ['crossPolicy', 'q'], probability('--cross-policy', f.crossPolicy));
  if (f.trainSeeds !== undefined) {
    const r = seedRange('--train-seeds', f.trainSeeds);
    raw.trainSeeds = [r.start, r.end];
  }
  if (f.testSeeds !== undefined) {
    const r = seedRange('--test-seeds', f.testSeeds);
    raw.testSeeds = [r.start, r.end];
  }
  if (f.evalEpisodes !== undefined)
    set(raw, ['eval', 'episodes'], int('--eval-episodes', f.evalEpisodes, 1, 100_000_000));
  if (f.evalBudget !== undefined)
    set(raw, ['eval', 'budget'], int('--eval-budget', f.evalBudget, 1, 1_000_000));
  if (f.esPairs !== undefined) set(raw, ['es', 'pairs'], int('--es-pairs', f.esPairs, 1, 100_000));
  if (f.esSigma !== undefined)
    set(
      raw,
      ['es', 'sigma'],
      num('--es-sigma', f.esSigma, (x) => x > 0, 'a number > 0'),
    );
  if (f.esLr !== undefined)
    set(
      raw,
      ['es', 'lr'],
      num('--es-lr', f.esLr, (x) => x > 0, 'a number > 0'),
    );
  if (f.workers !== undefined) set(raw, ['es', 'workers'], int('--workers', f.workers, 1, 256));
  if (f.checkpointEvery !== undefined)
    raw.checkpointEvery = int('--checkpoint-every', f.checkpointEvery, 1, 10_000_000);
  if (f.storeTrajectories) raw.storeTrajectories = true;
  if (f.seed !== undefined) raw.seed = seed(f.seed);
  return parseTrainConfig(raw, f.config ?? 'config');
}

const TRAINING_FLAGS: (keyof TrainFlags)[] = [
  'config',
  'env',
  'policy',
  'algo',
  'iters',
  'groups',
  'groupSize',
  'budget',
  'budgetMix',
  'revealBudget',
  'credit',
  'gamma',
  'lambda',
  'lr',
  'epochs',
  'minibatches',
  'clipLow',
  'clipHigh',
  'kl',
  'entropy',
  'aggregation',
  'dynamicSampling',
  'guidance',
  'expert',
  'maxPrefix',
  'crossPolicy',
  'trainSeeds',
  'testSeeds',
  'evalEpisodes',
  'evalBudget',
  'esPairs',
  'esSigma',
  'esLr',
  'workers',
  'checkpointEvery',
  'seed',
  'out',
  'map',
  'slippery',
  'successRate',
  'random',
  'size',
  'p',
];

export function registerTrain(program: Command): void {
  envOptions(
    program.command('train').description('train a policy (GRPO, PPO, ES) with checkpoints and resume'),
  )
    .option('--config <file.json>', 'a training config (src/train/config.ts); flags override its fields')
    .option('--resume <run-dir>', 'continue a run from its last checkpoint (no other training flags)')
    .option('--env <id>', 'environment id (default frozenlake)')
    .option('--policy <spec>', 'tabular | mlp[:hidden=64x64,activation=relu,budgetAware=1] | checkpoint path')
    .option('--algo <algo>', 'grpo | ppo (GAE with a critic) | es')
    .option('--iters <n>', 'iterations (default 300)')
    .option('--groups <n>', 'tasks per iteration (default: 16 tables, 64 MLPs)')
    .option('--group-size <k>', 'rollouts per task (GRPO group size G, default 8)')
    .option('--budget <T>', 'turn budget of training episodes (default 100)')
    .option(
      '--budget-mix <list>',
      'BudgetMix: each episode draws its budget from this list, e.g. 10,20,50,100',
    )
    .option('--reveal-budget', 'tell the policy the turns left')
    .option('--credit <method>', 'outcome|discounted|gae|grpo|drgrpo|rloo|gigpo|turn-level|reverse-turn')
    .option('--gamma <g>', 'discount γ of the credit method')
    .option('--lambda <l>', 'λ of GAE / turn-level credit')
    .option('--lr <lr>', 'Adam learning rate (default: 0.1 tables, 3e-3 MLPs, annealed)')
    .option('--epochs <n>', 'PPO epochs per batch')
    .option('--minibatches <n>', 'minibatches per epoch')
    .option('--clip-low <e>', 'ε_low (default 0.2)')
    .option('--clip-high <e>', 'ε_high (default 0.28, DAPO clip-higher)')
    .option('--kl <beta>', 'β of the k3 KL to the initial policy (default 0)')
    .option('--entropy <c>', 'entropy bonus, decayed linearly to 0 (default: 0 tables, 0.05 MLPs)')
    .option('--aggregation <mode>', 'turn-mean | sequence-mean | constant-sum')
    .option('--dynamic-sampling', 'DAPO: drop groups with equal outcomes and refill')
    .option('--guidance <mode>', 'expert-prefix guidance: gaussian | bread')
    .option('--expert <spec>', 'guidance expert: a policy spec or a demonstrations .jsonl (default oracle)')
    .option('--max-prefix <n>', 'longest expert prefix in turns (default 10)')
    .option('--cross-policy <q>', 'probability that a stale snapshot acts (default 0)')
    .option('--train-seeds <A:B>', 'training task seeds A..B−1')
    .option('--test-seeds <A:B>', 'held-out task seeds for the final evaluation')
    .option('--eval-episodes <n>', 'final evaluation episodes (default 2000)')
    .option('--eval-budget <T>', 'final evaluation budget (default: the largest training budget)')
    .option('--es-pairs <n>', 'ES antithetic pairs per iteration')
    .option('--es-sigma <s>', 'ES noise scale σ')
    .option('--es-lr <a>', 'ES step size α')
    .option('--workers <n>', 'ES worker threads (default: all cores)')
    .option('--checkpoint-every <n>', 'checkpoint every N iterations (default 25)')
    .option(
      '--store-trajectories',
      'keep every turn of every trajectory in the run store (default: outcome rows)',
    )
    .option('--seed <n>', 'run seed (default 0)')
    .option('--out <dir>', 'run directory (default runs/train-<time>)')
    .option('--json', 'machine-readable output')
    .action(async (f: TrainFlags) => {
      let config: TrainConfig;
      let outDir: string;
      if (f.resume !== undefined) {
        const extra = TRAINING_FLAGS.filter(
          (k) => f[k] !== undefined && !(k === 'seed' && f.seed === undefined),
        );
        if (extra.length > 0) {
          throw new InputError(
            '--resume',
            f.resume,
            `continues a run with its own config; drop --${extra[0].replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`,
          );
        }
        outDir = f.resume;
        config = RunDir.readConfig(outDir);
      } else {
        config = configFromFlags(f);
        outDir = f.out ?? `runs/train-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      }
      const progress = new Progress('train', config.iters);
      const onIter = (iter: number, iters: number, m: Record<string, number>) => {
        const line = `success ${fmt(m['rollout/success'], 3)} step quality ${fmt(m['rollout/step_quality'], 3)}`;
        if (interactive()) progress.update(iter + 1, line);
        else if ((iter + 1) % config.logEvery === 0 || iter + 1 === iters)
          warn(`iter ${iter + 1}/${iters} ${line}`);
      };
      const options = { config, envs, out: outDir, resume: f.resume !== undefined, onIter };
      const result = config.algo === 'es' ? await trainEs(options) : await trainPolicyGradient(options);
      progress.done();
      const last = result.metrics.at(-1);
      const report = {
        final: result.final,
        seconds: result.seconds,
        iters: config.iters,
        ...(result.evaluations === undefined ? {} : { evaluations: result.evaluations }),
        out: outDir,
        last: last?.values ?? null,
      };
      if (f.json) return json(report);
      const fin = result.final;
      const evals = result.evaluations === undefined ? '' : ` (${result.evaluations} fitness evaluations)`;
      out(
        `trained ${config.policy.kind} with ${config.algo} for ${config.iters} iterations${evals} in ${fmt(result.seconds, 1)} s → ${outDir}`,
      );
      if (fin) {
        out(
          table([
            [
              fin.train ? 'held-out maps' : 'fresh episodes',
              'success',
              'exact',
              'optimal',
              'of optimal',
              'episodes',
              'budget',
            ],
            [
              '',
              fmt(fin.success),
              fmt(fin.exact),
              fmt(fin.optimal),
              fin.ratio === null ? '-' : `${(100 * fin.ratio).toFixed(1)}%`,
              fin.episodes,
              fin.budget,
            ],
          ]),
        );
        if (fin.train)
          out(
            `training maps (${fin.train.tasks}): exact ${fmt(fin.train.exact)}, optimal ${fmt(fin.train.optimal)}`,
          );
      }
      out(`policy: ${outDir}/policy.safetensors (use --policy ${outDir})`);
    });
}
