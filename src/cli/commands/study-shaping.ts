// turnwise study shaping: tabular training on one FrozenLake map without shaping and under each shaping,
// same seeds and iterations, judged on the TRUE reward (src/studies/shaping.ts, docs/shaping.md).
// stdout: the table (or --json); stderr: one line per run.
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { makeTasks } from '../../core/tasks.ts';
import { frozenLakeWorld } from '../../envs/frozenlake/index.ts';
import { envConfig, envs } from '../../envs/index.ts';
import type { StudyKind } from '../../studies/shaping.ts';
import { DEFAULT_SHAPING_COEF, MAX_SHAPING_COEF, SHAPINGS } from '../../theory/shaping.ts';
import { DEFAULT_BUDGET } from '../../train/config-sections.ts';
import { fmt, json, out, table, warn } from '../io.ts';
import { distinctIntList, int, num } from '../options.ts';

interface Flags {
  map?: string;
  slippery?: boolean;
  seeds?: string;
  iters?: string;
  algo?: string;
  budget?: string;
  kinds?: string;
  coef?: string;
  json?: boolean;
}

const DEFAULT_ITERS = 300;
/** studies/shaping.ts's STUDY_KINDS, written here from the same list: that module (the training loop)
 * loads only once the flags have passed. */
const STUDY_KINDS = ['none', ...SHAPINGS] as const;

type Est = { value: number | null; ci95: [number | null, number | null] } | null;
const plain = (x: number) => fmt(x);
const plus = (x: number) => `${x >= 0 ? '+' : ''}${fmt(x)}`;
/** `0.7276 [0.7010, 0.7542]` (no interval from one seed). */
function interval(e: Est, f = plain): string {
  if (e === null || e.value === null) return '-';
  const [lo, hi] = e.ci95;
  return lo === null || hi === null ? f(e.value) : `${f(e.value)} [${f(lo)}, ${f(hi)}]`;
}

export function registerShapingStudy(study: Command): void {
  study
    .command('shaping')
    .description(
      'tabular training on a FrozenLake map under each reward shaping and without, same seeds: the TRUE success at the end against the unshaped run and the shaped-optimal policy (docs/shaping.md)',
    )
    .option('--map <map>', '4x4, 8x8 or rows such as SFFF,FHFH,FFFH,HFFG (default 4x4)')
    .option('--slippery', 'slippery ice (success rate 1/3)')
    .option('--seeds <list>', 'run seeds, comma-separated (default 0,1,2)')
    .option('--iters <n>', `iterations of every run (default ${DEFAULT_ITERS})`)
    .option('--algo <algo>', 'grpo | ppo (ppo: GAE on the per-turn rewards, with a critic; default grpo)')
    .option(
      '--budget <T>',
      `turn budget of training and of the final evaluation (default ${DEFAULT_BUDGET.budget})`,
    )
    .option('--kinds <list>', `comma-separated, from ${STUDY_KINDS.join(', ')} (default all)`)
    .option(
      '--coef <c>',
      `the coefficient c of every shaping, in (0, ${MAX_SHAPING_COEF}] (default ${DEFAULT_SHAPING_COEF})`,
    )
    .option('--json', 'machine-readable output')
    .action(async (f: Flags) => {
      const env = envConfig('frozenlake', { map: f.map ?? '4x4', slippery: f.slippery === true });
      const seeds = f.seeds === undefined ? [0, 1, 2] : distinctIntList('--seeds', f.seeds, 0);
      const iters = f.iters === undefined ? DEFAULT_ITERS : int('--iters', f.iters, 1, 100_000);
      const algo = f.algo ?? 'grpo';
      if (algo !== 'grpo' && algo !== 'ppo') throw new InputError('--algo', f.algo, 'expected grpo or ppo');
      const budget = f.budget === undefined ? DEFAULT_BUDGET.budget : int('--budget', f.budget, 1, 10_000);
      const kinds = (f.kinds ?? STUDY_KINDS.join(',')).split(',').map((k) => k.trim());
      if (
        kinds.some((k) => !(STUDY_KINDS as readonly string[]).includes(k)) ||
        new Set(kinds).size !== kinds.length
      )
        throw new InputError(
          '--kinds',
          f.kinds,
          `expected distinct kinds from ${STUDY_KINDS.join(', ')}, comma-separated`,
        );
      const coef =
        f.coef === undefined
          ? DEFAULT_SHAPING_COEF
          : num(
              '--coef',
              f.coef,
              (x) => x > 0 && x <= MAX_SHAPING_COEF,
              `a number in (0, ${MAX_SHAPING_COEF}]`,
            );
      const world = frozenLakeWorld(makeTasks(env, 1, 0)[0]);
      const { shapingStudy } = await import('../../studies/shaping.ts');
      const study = await shapingStudy({
        env,
        envs,
        world,
        kinds: kinds as StudyKind[],
        coef,
        seeds,
        algo,
        iters,
        budget,
        onRun: (kind, seed, exact) => warn(`study shaping: ${kind} seed ${seed}: true success ${fmt(exact)}`),
      });
      if (f.json) return json(study);
      const params = env.params as { map: string; slippery: boolean };
      out(
        `Shaping study: FrozenLake ${params.map}${params.slippery ? ' slippery' : ''}, tabular ${algo}, ${iters} iterations, budget ${budget}, seeds ${seeds.join(',')}, c = ${coef}`,
      );
      out(
        `TRUE success of the trained policy at the end (exact), mean over seeds with 95% t-intervals; optimum V*_${budget}(start) = ${fmt(study.optimum, 6)}`,
      );
      out(
        table([
          [
            'shaping',
            'potential',
            'true success',
            '− none (paired)',
            'shaped optimum',
            '− shaped optimum',
            'in training',
          ],
          ...study.rows.map((r) => [
            r.kind,
            r.potentialBased === null ? '-' : r.potentialBased ? 'yes' : 'no',
            interval(r.success),
            interval(r.vsNone, plus),
            fmt(r.shapedOptimal, 4),
            interval(r.vsShapedOptimal, plus),
            fmt(r.duringTraining.value, 4),
          ]),
        ]),
      );
      out(
        '“shaped optimum”: the true success of the policy optimal for the shaped reward (calc shaping; none: the optimum); “in training”: rollout/success averaged over all iterations.',
      );
    });
}
