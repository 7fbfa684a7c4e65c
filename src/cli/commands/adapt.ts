// turnwise adapt — test-time adaptation (src/train/adapt.ts): a trained policy meets tasks of a new
// distribution (the env flags) and adapts by GRPO on its own rollouts and rewards; its held-out success
// before and after every --at episodes.
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { envs, makeTasks } from '../../envs/index.ts';
import { makePolicy, parsePolicySpec } from '../../policies/spec.ts';
import { checkOutput } from '../../store/paths.ts';
import { adapt } from '../../train/adapt.ts';
import { parseTrainConfig } from '../../train/config.ts';
import { fmt, interactive, json, out, Progress, table, warn } from '../io.ts';
import {
  distinctIntList,
  type EnvFlags,
  envConfigFromFlags,
  envOptions,
  int,
  num,
  seed,
} from '../options.ts';
import { ABOUT } from './about.ts';

type AdaptFlags = EnvFlags & {
  env: string;
  policy: string;
  episodes?: string;
  at?: string;
  groups: string;
  groupSize: string;
  budget?: string;
  lr?: string;
  entCoef: string;
  evalTasks: string;
  seed: string;
  out?: string;
  json?: boolean;
};

/** Held-out tasks start here: the training config's default test seeds, disjoint from its train seeds. */
const HELD_OUT_FROM = 1_000_000;

/** The saved policy a spec adapts: the path itself, or a saved transformer sampled otherwise
 * (`transformer:from=RUN,temperature=0.3`: the run adapts at that temperature). */
function savedPath(spec: string): string {
  if (!spec.startsWith('transformer:')) return spec;
  const from = parsePolicySpec(spec).params.from;
  if (from === undefined)
    throw new InputError('--policy', spec, 'a fresh transformer has learned nothing to adapt: give from=RUN');
  return from;
}

export function registerAdapt(program: Command): void {
  envOptions(program.command('adapt').description(ABOUT.adapt.description))
    .option('--env <id>', 'environment id of the new distribution', 'frozenlake')
    .requiredOption(
      '--policy <run>',
      'the trained policy: a run directory of turnwise train, or its checkpoint',
    )
    .option(
      '--episodes <N>',
      'episodes of the new distribution the policy adapts on (a multiple of groups × group size)',
    )
    .option(
      '--at <list>',
      'episode counts at which held-out success is measured (default: N/4, N/2, 3N/4, N on whole iterations)',
    )
    .option('--groups <n>', 'tasks (GRPO groups) per iteration', '16')
    .option('--group-size <k>', 'rollouts per task', '8')
    .option('--budget <T>', "turn budget of the adaptation and held-out episodes (default: the env's limit)")
    .option(
      '--lr <x>',
      "Adam learning rate of the adaptation (default: turnwise train's for the policy's kind — MLP 3e-3 annealed to 0, transformer 3e-4 constant)",
    )
    .option('--ent-coef <x>', 'entropy bonus (annealed to 0)', '0')
    .option('--eval-tasks <n>', 'held-out tasks of the new distribution (task seeds from 1000000)', '200')
    .option('--seed <n>', 'run seed', '0')
    .option(
      '--out <dir>',
      "a run directory for the adaptation (the adapted policy, metrics: turnwise train's layout)",
    )
    .option('--json', 'machine-readable output')
    .action(async (f: AdaptFlags) => {
      const env = envConfigFromFlags(f.env, f);
      const groups = int('--groups', f.groups, 1, 100_000);
      const groupSize = int('--group-size', f.groupSize, 2, 100_000);
      const perIter = groups * groupSize;
      if (f.episodes === undefined) throw InputError.raw('--episodes', 'missing; give --episodes N');
      const episodes = int('--episodes', f.episodes, perIter, 100_000_000);
      if (episodes % perIter !== 0)
        throw new InputError(
          '--episodes',
          f.episodes,
          `expected a multiple of --groups × --group-size = ${groups} × ${groupSize} = ${perIter}`,
        );
      const iters = episodes / perIter;
      const at =
        f.at === undefined
          ? [...new Set([1, 2, 3, 4].map((q) => Math.max(1, Math.round((iters * q) / 4)) * perIter))]
          : distinctIntList('--at', f.at, 1).sort((a, b) => a - b);
      for (const n of at)
        if (n % perIter !== 0 || n > episodes)
          throw new InputError(
            '--at',
            f.at,
            `expected multiples of ${perIter} (groups × group size) up to --episodes ${episodes}`,
          );
      const lr =
        f.lr === undefined ? undefined : num('--lr', f.lr, (x) => x > 0 && x <= 1, 'a number in (0, 1]');
      const entCoef = num('--ent-coef', f.entCoef, (x) => x >= 0 && x <= 1, 'a number in [0, 1]');
      const evalTasks = int('--eval-tasks', f.evalTasks, 1, 1_000_000);
      const runSeed = seed(f.seed);
      const tasks = makeTasks(env, evalTasks, HELD_OUT_FROM);
      const spec = envs.spec(tasks[0]);
      const budget =
        f.budget === undefined ? (spec.maxTurns ?? 100) : int('--budget', f.budget, 1, 1_000_000);
      const policy = makePolicy(f.policy, spec, '--policy');
      const saved = savedPath(f.policy);
      if (f.out !== undefined) checkOutput(f.out, '--out', 'dir', [['--policy', saved]]);
      const config = parseTrainConfig(
        {
          env,
          policy: { kind: 'checkpoint', path: saved },
          iters,
          groups,
          groupSize,
          budget: { kind: 'fixed', budget },
          optim: lr === undefined ? {} : { lr },
          ppo: { entCoef },
          trainSeeds: [0, HELD_OUT_FROM],
          testSeeds: [HELD_OUT_FROM, HELD_OUT_FROM + evalTasks],
          eval: { episodes: 1 },
          seed: runSeed,
        },
        'adapt',
      );
      const progress = new Progress('adapt', iters);
      const result = await adapt({
        config,
        envs,
        policy,
        at,
        evalTasks: tasks,
        evalBudget: budget,
        out: f.out,
        onIter: (iter, n, m) => {
          const line = `success ${fmt(m['rollout/success'], 3)}`;
          if (interactive()) progress.update(iter + 1, line);
          else if ((iter + 1) % 10 === 0 || iter + 1 === n) warn(`iter ${iter + 1}/${n} ${line}`);
        },
      });
      progress.done();
      const before = result.points[0].success;
      const report = {
        policy: f.policy,
        env,
        budget,
        episodes,
        evalTasks,
        measure: result.measure,
        optimal: result.optimal,
        points: result.points.map((p) => ({ ...p, gain: p.success - before })),
        seconds: result.seconds,
        ...(f.out === undefined ? {} : { out: f.out }),
      };
      if (f.json) return json(report);
      out(
        `adapt ${f.policy} to ${env.env} ${JSON.stringify(env.params)}: ${episodes} episodes (${iters} iterations of ${groups} tasks × ${groupSize}), budget ${budget}`,
      );
      out(
        `held-out success (${result.measure === 'exact' ? 'exact, by DP' : 'sampled, one episode'} on ${evalTasks} tasks from seed ${HELD_OUT_FROM})${result.optimal === null ? '' : `; the optimum ${fmt(result.optimal)}`}`,
      );
      out(
        table([
          ['episodes', 'env steps', 'success', 'gain'],
          ...report.points.map((p) => [
            String(p.episodes),
            String(p.steps),
            fmt(p.success),
            p.episodes === 0 ? '' : `${p.gain >= 0 ? '+' : ''}${fmt(p.gain)}`,
          ]),
        ]),
      );
      if (f.out !== undefined) out(`the adapted policy: ${f.out}`);
    });
}
