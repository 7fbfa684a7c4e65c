// turnwise eval: Pass@(K,T) of one policy with bootstrap intervals over tasks (docs/methods.md §5).
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { envSpec, envs, makeTasks } from '../../envs/index.ts';
import type { Interval } from '../../eval/bootstrap.ts';
import {
  checkIncreasing,
  type EvalReport,
  evaluate,
  PASS_MODES,
  type PassMode,
  resolveMode,
} from '../../eval/evaluate.ts';
import { hackLine } from '../../eval/hacking.ts';
import { passFromOutcomes } from '../../eval/recorded.ts';
import { checksEpisodes } from '../../policies/replay.ts';
import { openPolicy } from '../../policies/spec.ts';
import { SkippedLines } from '../../store/jsonl.ts';
import { iterateOutcomes } from '../../store/outcomes.ts';
import { openCache, requestTotals } from '../cache.ts';
import { fmt, json, out, Progress, table, warn } from '../io.ts';
import {
  CACHE_HELP,
  connectOptions,
  type OpenAIFlags,
  openaiOptions,
  parsePrice,
  totalsLine,
} from '../openai-flags.ts';
import {
  checkSpacesOfRegistered,
  type EnvFlags,
  envConfigFromFlags,
  envOptions,
  int,
  intList,
  seed,
  spacesOfRegistered,
} from '../options.ts';
import { checkQueueFlag, queueOption, refuseWithQueue } from '../queue.ts';
import { openQueue, policyRef } from '../queue-run.ts';
import { ABOUT } from './about.ts';
import { SKIP_HELP } from './summary.ts';

export interface PassFlags extends EnvFlags {
  env: string;
  tasks: string;
  samples: string;
  K: string;
  T: string;
  mode?: string;
  resamples: string;
  seed: string;
  concurrency: string;
  json?: boolean;
}

/** The flags `eval` and `compare` share: tasks, samples, budgets, K, mode, bootstrap, seed. */
export function passOptions(cmd: Command): Command {
  return envOptions(cmd)
    .option('--env <id>', 'environment id', 'frozenlake')
    .option('--tasks <n>', 'number of tasks (task seed = --seed + index)', '16')
    .option('--samples <n>', 'samples per task (n of pass@k)', '64')
    .option('--K <list>', 'values of K, increasing, each ≤ --samples', '1,2,4,8,16')
    .option('--T <list>', 'turn budgets, increasing', '10,20,50,100')
    .option(
      '--mode <mode>',
      'prefix (one run at the largest T; budget-blind policies only) or separate (one run per T); default: the valid one',
    )
    .option('--resamples <n>', 'bootstrap resamples over tasks', '2000')
    .option('--seed <n>', 'run seed (and first task seed)', '0')
    .option('--concurrency <n>', 'episodes in flight for asynchronous envs/policies', '8');
}

export function readPassFlags(flags: PassFlags) {
  const runSeed = seed(flags.seed);
  const tasksN = int('--tasks', flags.tasks, 1, 10_000_000);
  const samples = int('--samples', flags.samples, 1, 100_000);
  if (tasksN * samples > 2 ** 27) {
    throw new InputError('--tasks', flags.tasks, `tasks × samples must stay ≤ ${2 ** 27}`);
  }
  const K = checkIncreasing(intList('--K', flags.K), '--K');
  const T = checkIncreasing(intList('--T', flags.T), '--T');
  if (T[T.length - 1] > 1_000_000) throw new InputError('--T', flags.T, 'expected budgets ≤ 1000000');
  if (K[K.length - 1] > samples) {
    throw new InputError('--K', flags.K, `each K must be ≤ --samples (${samples})`);
  }
  let mode: PassMode | undefined;
  if (flags.mode !== undefined) {
    if (!PASS_MODES.includes(flags.mode as PassMode)) {
      throw new InputError('--mode', flags.mode, `expected one of: ${PASS_MODES.join(', ')}`);
    }
    mode = flags.mode as PassMode;
  }
  const resamples = int('--resamples', flags.resamples, 1, 1_000_000);
  const concurrency = int('--concurrency', flags.concurrency, 1, 4096);
  const config = envConfigFromFlags(flags.env, flags);
  const tasks = makeTasks(config, tasksN, runSeed);
  return { runSeed, samples, K, T, mode, resamples, concurrency, config, tasks, spec: envSpec(tasks[0]) };
}

export const interval = ([lo, hi]: Interval, digits = 4): string =>
  `[${fmt(lo, digits)}, ${fmt(hi, digits)}]`;

/** Rows K, columns T: "estimate [lo, hi]". */
export function passTable(
  K: readonly number[],
  T: readonly number[],
  p: number[][],
  ci: Interval[][],
): string {
  return table([
    ['K \\ T', ...T.map((t) => `T=${t}`)],
    ...K.map((k, i) => [`K=${k}`, ...T.map((_, j) => `${fmt(p[i][j])} ${interval(ci[i][j])}`)]),
  ]);
}

export function warnOneTask(tasks: number): void {
  if (tasks === 1) {
    warn(
      '1 task: an interval over tasks has no spread (lo = hi); give --tasks ≥ 2 for a confidence interval',
    );
  }
}

type EvalFlags = PassFlags & OpenAIFlags & EvalInFlags & { policy: string; cache?: string; queue?: string };

export function registerEval(program: Command): void {
  queueOption(openaiOptions(passOptions(program.command('eval').description(ABOUT.eval.description))))
    .option('--policy <spec>', 'random | oracle[:eps=,temp=,horizon=] | tabular | checkpoint path')
    .option('--in <file.jsonl>', 'recorded trajectories instead of --policy (a harness run, a rollout)')
    .option('--skip-invalid', `with --in: ${SKIP_HELP}`)
    .option('--json', 'machine-readable output')
    .option('--cache <file.sqlite>', CACHE_HELP)
    .action(async (flags: EvalFlags) => {
      await checkQueueFlag(flags.queue);
      refuseWithQueue(flags.queue, [
        ['--in', flags.in, 'a recorded file is read here, with no episode to play'],
        ['--cache', flags.cache, 'the replay cache is a file of this process; give it to no queued run'],
      ]);
      if (flags.in !== undefined) return evalRecorded(flags, flags.in);
      if (flags.skipInvalid)
        throw new InputError('--skip-invalid', true, 'reads --in files only; give --in FILE.jsonl');
      if (flags.policy === undefined)
        throw InputError.raw('--policy', 'missing; give --policy SPEC or --in FILE.jsonl');
      const o = readPassFlags(flags);
      const price = parsePrice(flags.price);
      const cache = openCache(flags.cache, [flags.policy]);
      const policy = await openPolicy(
        flags.policy,
        o.spec,
        '--policy',
        cache,
        connectOptions(flags, o.config),
      );
      if (checksEpisodes(policy))
        policy.checkEpisodes(
          o.tasks.map((t) => t.seed),
          o.samples,
        );
      const mode = resolveMode(policy, o.mode);
      const progress = new Progress(
        'eval',
        o.tasks.length * o.samples * (mode === 'prefix' ? 1 : o.T.length),
      );
      const queue = await openQueue(flags.queue, 'eval');
      queue.show(progress);
      const report = await evaluate({
        rollout: queue.runner({ policy: policyRef(flags.queue, flags.policy, policy) }),
        envs,
        tasks: o.tasks,
        samples: o.samples,
        K: o.K,
        T: o.T,
        policy,
        mode,
        runSeed: o.runSeed,
        concurrency: o.concurrency,
        resamples: o.resamples,
        onProgress: (done) => progress.update(done),
      }).finally(() => queue.close());
      progress.done();
      warnOneTask(o.tasks.length);
      const totals = requestTotals([policy], price);
      if (flags.json) return json(totals === undefined ? report : { ...report, requests: totals });
      const Tmax = o.T[o.T.length - 1];
      out(
        `${policy.id}${policy.budgetAware ? ' (budget-aware)' : ''} on ${o.config.env} ${JSON.stringify(o.config.params)}: ${o.tasks.length} task${o.tasks.length === 1 ? '' : 's'} × ${o.samples} samples`,
      );
      out(
        report.mode === 'prefix'
          ? `prefix mode: one run per sample at T=${Tmax}, success within T read off the first-success turn`
          : `separate mode: one run per sample at each T, the turns left told to budget-aware policies`,
      );
      out(`\nPass@(K,T) with 95% bootstrap intervals over tasks (${o.resamples} resamples)`);
      out(passTable(report.K, report.T, report.passKT, report.ci95));
      const shown = report.perTask.slice(0, 20);
      out(`\nsuccesses within T, per task (of n = ${o.samples})`);
      out(
        table([
          ['task seed', ...o.T.map((t) => `T=${t}`)],
          ...shown.map((r) => [r.task.seed, ...o.T.map((t) => r.successWithin[String(t)])]),
        ]),
      );
      if (report.perTask.length > shown.length) {
        out(`… ${report.perTask.length - shown.length} more tasks (all of them with --json)`);
      }
      printText(report, Tmax);
      if (report.hacking !== undefined) out(`\n${hackLine(report.hacking)} at T=${Tmax}`);
      if (totals !== undefined) out(`\n${totalsLine(totals)}`);
    });
}

/** A text policy's invalid outputs and its likelihood of its own tokens, over the run at T_max. */
function printText(r: EvalReport, Tmax: number): void {
  if (r.invalidRate === undefined || r.invalid === undefined) return;
  out(
    `\ninvalid outputs at T=${Tmax}: ${r.invalid.count} of ${r.invalid.turns} turns (${fmt(r.invalidRate)}) did not parse into an action`,
  );
  const l = r.likelihood;
  if (l === undefined) return;
  const left = (n: number, what: string) => (n > 0 ? `; ${n} ${what} with an infinite term left out` : '');
  const nll = (x: number | null) => (x === null ? '-' : fmt(x));
  out(
    `own NLL at T=${Tmax} (−log π of the tokens it wrote, as sampled): ${nll(l.perToken.nll)} per token (${l.perToken.tokens} tokens${left(l.perToken.infinite, 'turns')}), ${nll(l.perTrajectory.nll)} per trajectory (${l.perTrajectory.trajectories} trajectories${left(l.perTrajectory.infinite, 'trajectories')})`,
  );
}

interface EvalInFlags {
  in?: string;
  skipInvalid?: boolean;
}

/** Pass@(K,T) and failures of a trajectory file (eval/recorded.ts), read once by the reader `summary
 * --in` uses: every line validated (schema and the env's spaces; `skipped` counts bad lines instead). */
export function passFromFile(
  path: string,
  K: readonly number[],
  T: readonly number[],
  mode: PassMode | undefined,
  resamples: number,
  runSeed: number,
  skipped?: SkippedLines,
): ReturnType<typeof passFromOutcomes> {
  const outcomes = iterateOutcomes(
    path,
    '--in',
    spacesOfRegistered,
    checkSpacesOfRegistered,
    undefined,
    skipped,
  );
  return passFromOutcomes(outcomes, path, K, T, mode, resamples, runSeed);
}

/** eval --in: Pass@(K,T) and failures of recorded trajectories. */
function evalRecorded(flags: PassFlags & EvalInFlags, path: string): void {
  const K = checkIncreasing(intList('--K', flags.K), '--K');
  const T = checkIncreasing(intList('--T', flags.T), '--T');
  const mode = flags.mode === undefined ? undefined : (flags.mode as PassMode);
  if (mode !== undefined && !PASS_MODES.includes(mode))
    throw new InputError('--mode', flags.mode, `expected one of: ${PASS_MODES.join(', ')}`);
  const skipped = flags.skipInvalid ? new SkippedLines() : undefined;
  const r = passFromFile(
    path,
    K,
    T,
    mode,
    int('--resamples', flags.resamples, 1, 1_000_000),
    seed(flags.seed),
    skipped,
  );
  if (skipped && skipped.count > 0) warn(skipped.note(path));
  if (flags.json) {
    json(skipped ? { ...r, skipped } : r);
    return;
  }
  out(`${path}: ${r.trajectories} trajectories, ${r.perTask.length} tasks; ${r.mode} mode`);
  out(`\nPass@(K,T) with 95% bootstrap intervals over tasks`);
  out(passTable(r.K, r.T, r.passKT, r.ci95));
  const kinds = Object.entries(r.failures.byKind).filter(([, x]) => x > 0);
  out(
    `\nfailures: ${kinds.map(([k, x]) => `${k} ${x}`).join(', ') || 'none'} (of ${r.failures.episodes} episodes)`,
  );
}
