// turnwise eval: Pass@(K,T) of one policy with bootstrap intervals over tasks (docs/methods.md §5).
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { Trajectory } from '../../core/types.ts';
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
import { toolEffectLine } from '../../eval/tool-effects.ts';
import { checksEpisodes } from '../../policies/replay.ts';
import { openPolicy } from '../../policies/spec.ts';
import { groupsOf, judgeCallCount } from '../../rewards/score.ts';
import { readTrajectories, SkippedLines } from '../../store/jsonl.ts';
import { iterateOutcomes } from '../../store/outcomes.ts';
import { checkOutput } from '../../store/paths.ts';
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
import {
  checkRubricFor,
  largestGroup,
  type OpenedRubric,
  openRubric,
  rubricPath,
  rubricText,
  scoreBatch,
} from '../rubric.ts';
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

type EvalFlags = PassFlags &
  OpenAIFlags &
  EvalInFlags &
  RewardFlags & { policy: string; cache?: string; queue?: string };

export function registerEval(program: Command): void {
  queueOption(openaiOptions(passOptions(program.command('eval').description(ABOUT.eval.description))))
    .option('--policy <spec>', 'random | oracle[:eps=,temp=,horizon=] | tabular | checkpoint path')
    .option('--in <file.jsonl>', 'recorded trajectories instead of --policy (a harness run, a rollout)')
    .option('--skip-invalid', `with --in: ${SKIP_HELP}`)
    .option('--json', 'machine-readable output')
    .option('--cache <file.sqlite>', CACHE_HELP)
    .option(
      '--reward <spec>',
      'rubric:FILE.json: score the trajectories (of the run at the largest T) with a rubric (docs/rewards.md); the summary adds its mean and judge errors',
    )
    .option(
      '--scores <file.jsonl>',
      "with --reward: write the scored trajectories (the rubric's score as their reward, the env's outcome beside, every judge call)",
    )
    .option('--judge-cache <file.sqlite>', `with --reward: the judges' ${CACHE_HELP}`)
    .action(async (flags: EvalFlags) => {
      await checkQueueFlag(flags.queue);
      refuseWithQueue(flags.queue, [
        ['--in', flags.in, 'a recorded file is read here, with no episode to play'],
        ['--cache', flags.cache, 'the replay cache is a file of this process; give it to no queued run'],
      ]);
      checkRewardFlags(flags);
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
      const reward = await openReward(flags, [o.config.env], o.samples, '--samples');
      const progress = new Progress(
        'eval',
        o.tasks.length * o.samples * (mode === 'prefix' ? 1 : o.T.length),
      );
      const queue = await openQueue(flags.queue, 'eval');
      queue.show(progress);
      // With --reward, the run at T_max is kept for the rubric (prefix mode has only that run).
      const runner = queue.runner({ policy: policyRef(flags.queue, flags.policy, policy) });
      const Tmax = o.T[o.T.length - 1];
      const kept: Trajectory[] = [];
      const report = await evaluate({
        rollout:
          reward === undefined
            ? runner
            : async (opts) => {
                const trajectories = await runner(opts);
                if (opts.budget === Tmax) kept.push(...trajectories);
                return trajectories;
              },
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
      const scored = reward === undefined ? undefined : await scoreReward(reward, kept, flags.scores);
      const totals = requestTotals([policy], price);
      if (flags.json)
        return json({
          ...report,
          ...(totals === undefined ? {} : { requests: totals }),
          ...(scored === undefined ? {} : rewardJson(scored)),
        });
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
      if (report.toolEffects !== undefined) out(`\n${toolEffectLine(report.toolEffects)} at T=${Tmax}`);
      if (totals !== undefined) out(`\n${totalsLine(totals)}`);
      if (scored !== undefined) out(`\n${rubricText(scored.summary, scored.totals)}`);
    });
}

interface RewardFlags {
  reward?: string;
  scores?: string;
  judgeCache?: string;
}

/** --scores and --judge-cache need --reward; --scores is an output none of the inputs may be. */
function checkRewardFlags(flags: RewardFlags & { in?: string; cache?: string }): void {
  if (flags.reward === undefined) {
    if (flags.scores !== undefined)
      throw new InputError(
        '--scores',
        flags.scores,
        'writes the scored trajectories of --reward; give --reward rubric:FILE',
      );
    if (flags.judgeCache !== undefined)
      throw new InputError(
        '--judge-cache',
        flags.judgeCache,
        "records --reward's judge calls; give --reward rubric:FILE",
      );
    return;
  }
  const path = rubricPath(flags.reward);
  if (flags.scores !== undefined)
    checkOutput(flags.scores, '--scores', 'file', [
      ['--reward', path],
      ['--judge-cache', flags.judgeCache],
      ['--in', flags.in],
      ['--cache', flags.cache],
    ]);
}

/** --reward's rubric, its judges connected (or refused) before any episode. */
async function openReward(
  flags: RewardFlags & OpenAIFlags,
  envIds: readonly string[],
  samples: number,
  samplesField: string,
): Promise<OpenedRubric | undefined> {
  if (flags.reward === undefined) return undefined;
  return await openRubric(rubricPath(flags.reward), {
    field: '--reward',
    keyEnv: flags.apiKeyEnv,
    cacheFile: flags.judgeCache,
    cacheField: '--judge-cache',
    check: (rubric) => checkRubricFor(rubric, envIds, samples, samplesField),
  });
}

/** The rubric's scores of the kept trajectories, the judges' calls shown as progress on a terminal. */
async function scoreReward(
  reward: OpenedRubric,
  batch: readonly Trajectory[],
  scoresFile: string | undefined,
) {
  const progress = new Progress('judge', judgeCallCount(reward.rubric, groupsOf(batch)));
  try {
    return await scoreBatch(reward, batch, { scoresFile, onProgress: (done) => progress.update(done) });
  } finally {
    progress.done();
  }
}

const rewardJson = (s: Awaited<ReturnType<typeof scoreBatch>>) => ({
  reward: s.summary,
  ...(s.totals === undefined ? {} : { judgeRequests: s.totals }),
});

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

/** eval --in: Pass@(K,T) and failures of recorded trajectories (and with --reward, their rubric's scores). */
async function evalRecorded(
  flags: PassFlags & EvalInFlags & RewardFlags & OpenAIFlags,
  path: string,
): Promise<void> {
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
  let scored: Awaited<ReturnType<typeof scoreBatch>> | undefined;
  if (flags.reward !== undefined) {
    const batch = readTrajectories(
      path,
      '--in',
      checkSpacesOfRegistered,
      flags.skipInvalid ? new SkippedLines() : undefined,
    );
    const reward = await openReward(
      flags,
      [...new Set(batch.map((t) => t.task.env))],
      largestGroup(batch),
      '--in',
    );
    scored = await scoreReward(reward as OpenedRubric, batch, flags.scores);
  }
  if (flags.json) {
    json({ ...r, ...(skipped ? { skipped } : {}), ...(scored === undefined ? {} : rewardJson(scored)) });
    return;
  }
  out(`${path}: ${r.trajectories} trajectories, ${r.perTask.length} tasks; ${r.mode} mode`);
  out(`\nPass@(K,T) with 95% bootstrap intervals over tasks`);
  out(passTable(r.K, r.T, r.passKT, r.ci95));
  const kinds = Object.entries(r.failures.byKind).filter(([, x]) => x > 0);
  out(
    `\nfailures: ${kinds.map(([k, x]) => `${k} ${x}`).join(', ') || 'none'} (of ${r.failures.episodes} episodes)`,
  );
  if (scored !== undefined) out(`\n${rubricText(scored.summary, scored.totals)}`);
}
