// turnwise train — GRPO/PPO/ES training runs with checkpoints, resume and metrics.
// `--config run.json` gives a whole config (src/train/config.ts); the flags declared there, then
// `--set path=value`, set single fields on top of it.
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { makeTasks } from '../../core/tasks.ts';
import { frozenLakeWorld } from '../../envs/frozenlake/index.ts';
import { envConfig, envs } from '../../envs/index.ts';
import { mlpSpec } from '../../policies/spec.ts';
import { readText } from '../../store/jsonl.ts';
import { checkOutput } from '../../store/paths.ts';
import { measureShaping } from '../../theory/shaping.ts';
import { parseTrainConfig, type TrainConfig, TrainConfigSchema } from '../../train/config.ts';
import { trainEs } from '../../train/es-train.ts';
import type { FinalEval } from '../../train/final.ts';
import { trainPolicyGradient } from '../../train/loop.ts';
import { parseRehearsalFlag, showRehearsal } from '../../train/rehearsal.ts';
import { RunDir } from '../../train/run-dir.ts';
import { parseShapingFlag, type ShapingConfig, showShaping } from '../../train/shaping.ts';
import { fmt, interactive, json, out, Progress, table, warn } from '../io.ts';
import { CACHE_HELP, totalsLine } from '../openai-flags.ts';
import {
  type EnvFlags,
  envConfigFromFlags,
  envFlagsGiven,
  envOptions,
  int,
  intList,
  seedRange,
} from '../options.ts';
import { addParamOptions, applyParamFlags, applySets, paramFlags, setOption } from '../params.ts';
import { checkQueueFlag } from '../queue.ts';
import { openQueue } from '../queue-run.ts';
import {
  checkRubricFor,
  judgeTotals,
  type OpenedRubric,
  openRubric,
  rubricPath,
  toolsSideEffects,
} from '../rubric.ts';
import { ABOUT } from './about.ts';

type TrainFlags = EnvFlags &
  Record<string, unknown> & {
    config?: string;
    resume?: string;
    restart?: boolean;
    env?: string;
    set?: string[];
    out?: string;
    queue?: string;
    json?: boolean;
    vsUnshaped?: boolean;
    judgeCache?: string;
    reward?: string;
  };

/** `tabular`, `mlp[:hidden=64x64,activation=relu,budgetAware=1]` (policies/spec.ts reads it), or a
 * checkpoint path. */
function policyConfig(raw: string): Record<string, unknown> {
  if (raw === 'tabular') return { kind: 'tabular' };
  if (raw === 'mlp' || raw.startsWith('mlp:')) {
    const { seed, ...options } = mlpSpec(raw, '--policy');
    if (seed !== undefined)
      throw new InputError(
        '--policy',
        raw,
        'a trained network is initialised from the run seed: drop seed=, give --seed',
      );
    return { kind: 'mlp', ...options };
  }
  if (existsSync(raw)) return { kind: 'checkpoint', path: raw };
  throw new InputError('--policy', raw, 'expected tabular, mlp[:hidden=64x64,…] or a checkpoint path');
}

const seeds = (flag: string) => (raw: string) => {
  const r = seedRange(flag, raw);
  return [r.start, r.end];
};
const showSeeds = ([a, b]: [number, number]) => `${a}:${b}`;

/** The flags of TrainConfigSchema, with the parsers of those that are sugar over a structure. */
export const TRAIN_FLAGS = paramFlags(TrainConfigSchema, {
  '--policy': { parse: policyConfig, show: (p: { kind: string }) => p.kind },
  '--budget': { parse: (raw) => ({ kind: 'fixed', budget: int('--budget', raw, 1, 1_000_000) }) },
  '--budget-mix': { parse: (raw) => ({ kind: 'mix', budgets: intList('--budget-mix', raw) }) },
  '--train-seeds': { parse: seeds('--train-seeds'), show: showSeeds },
  '--test-seeds': { parse: seeds('--test-seeds'), show: showSeeds },
  '--shaping': { parse: (raw) => parseShapingFlag(raw) },
  '--rehearsal': { parse: (raw) => parseRehearsalFlag(raw) },
  '--reward': { parse: (raw) => `rubric:${rubricPath(raw)}` },
});

/** The config file (if any), then the flags, then `--set`, validated. */
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
  // The env: the file's, with the env flags' params over its own (precedence file < flags); --env naming
  // another env starts from that env's defaults instead.
  const fileEnv = raw.env as { env?: unknown; params?: unknown } | undefined;
  if (fileEnv === undefined) raw.env = envConfigFromFlags(f.env ?? 'frozenlake', f);
  else if (f.env !== undefined || (envFlagsGiven(f) && typeof fileEnv.env === 'string')) {
    const same =
      typeof fileEnv === 'object' && fileEnv !== null && (f.env === undefined || f.env === fileEnv.env);
    const params =
      same && typeof fileEnv.params === 'object' && fileEnv.params !== null ? fileEnv.params : {};
    raw.env = envConfigFromFlags(f.env ?? String(fileEnv.env), f, params as Record<string, unknown>);
  }
  applyParamFlags(TRAIN_FLAGS, f, raw);
  applySets(TrainConfigSchema, raw, f.set ?? []);
  checkHeldOut(raw);
  return parseTrainConfig(raw, f.config ?? 'config');
}

/**
 * Test seeds given for a fixed FrozenLake map hold nothing out: every seed is the same map (only the
 * slippery dice differ), and the final evaluation there runs fresh episodes of it anyway.
 */
function checkHeldOut(raw: Record<string, unknown>): void {
  const env = raw.env as { env?: unknown; params?: { random?: unknown; map?: unknown } } | undefined;
  if (raw.testSeeds === undefined || env?.env !== 'frozenlake' || env.params?.random === true) return;
  throw new InputError(
    'testSeeds',
    raw.testSeeds,
    `env.params.map ${String(env.params?.map ?? '4x4')} is a fixed map: every seed is the same map, so no test seed is held out; drop testSeeds, or train on random maps (--random)`,
  );
}

/** The run's seconds; for a resumed run, the whole run's and the part after the resume. */
function timing(r: { seconds: number; resumed?: { iterations: number; seconds: number } }): string {
  if (r.resumed === undefined) return `${fmt(r.seconds, 1)} s`;
  const after = r.seconds - r.resumed.seconds;
  return `${fmt(r.seconds, 1)} s in all, of which ${fmt(after, 1)} s after resuming from the checkpoint of iteration ${r.resumed.iterations}`;
}

const PRECEDENCE = `
Every flag above sets one field of the training config (src/train/config.ts); --set reaches any field,
e.g. --set ppo.dualClip=0 --set credit.omega=0.5 --set policy.hidden=[32,32] (with --policy mlp).
Precedence: the --config file < flags < --set.`;

export function registerTrain(program: Command): void {
  const cmd = envOptions(program.command('train').description(ABOUT.train.description))
    .option('--config <file.json>', 'a training config (src/train/config.ts); flags override its fields')
    .option('--resume <run-dir>', 'continue a run from its last checkpoint (no other training flags)')
    .option(
      '--restart',
      'start over: with --out, replace the run there; with --resume, rerun it from iteration 0 with its config',
    )
    .option('--env <id>', 'environment id (default frozenlake)')
    .addOption(setOption('training config', 'ppo.clipHigh=0.3'))
    .option('--out <dir>', 'run directory (default runs/train-<time>)')
    .option(
      '--queue <url>',
      "play each iteration's rollouts on `turnwise worker` processes through this Redis (redis://HOST:PORT), with the iteration's weights; the same run as in process",
    )
    .option(
      '--vs-unshaped',
      'with --shaping: also train the unshaped run of the same config and seed (in memory) and report the gap in true success',
    )
    .option('--judge-cache <file.sqlite>', `with --reward: the judges' ${CACHE_HELP}`)
    .option('--json', 'machine-readable output');
  addParamOptions(cmd, TRAIN_FLAGS)
    .addHelpText('after', PRECEDENCE)
    .action(async (f: TrainFlags) => {
      await checkQueueFlag(f.queue);
      let config: TrainConfig;
      let outDir: string;
      if (f.resume !== undefined) {
        // Every other option configures a run; a resumed run has its own config.
        const extra = cmd.options.find(
          (o) =>
            !['resume', 'restart', 'json', 'queue', 'vsUnshaped', 'judgeCache'].includes(o.attributeName()) &&
            f[o.attributeName()] !== undefined,
        );
        if (extra !== undefined)
          throw new InputError(
            '--resume',
            f.resume,
            `continues a run with its own config; drop ${extra.long}`,
          );
        outDir = f.resume;
        config = RunDir.readConfig(outDir);
      } else {
        config = configFromFlags(f);
        outDir = f.out ?? `runs/train-${new Date().toISOString().replace(/[:.]/g, '-')}`;
        checkOutput(outDir, '--out', 'dir');
      }
      if (f.vsUnshaped && config.shaping === undefined)
        throw new InputError(
          '--vs-unshaped',
          true,
          'compares a shaped run with the unshaped one: give --shaping',
        );
      if (f.queue !== undefined && config.shaping !== undefined)
        throw new InputError(
          '--queue',
          f.queue,
          "cannot go with --shaping: the workers' envs do not record the cell after each step that shaping reads",
        );
      if (f.queue !== undefined && config.algo === 'es')
        throw new InputError(
          '--queue',
          f.queue,
          'cannot go with algo es (its fitness evaluations run in worker threads of this process)',
        );
      if (f.judgeCache !== undefined && config.reward === undefined)
        throw new InputError(
          '--judge-cache',
          f.judgeCache,
          "records --reward's judge calls; give --reward rubric:FILE",
        );
      // The rubric read and its judges reached (or refused, in one line) before any work.
      const reward =
        config.reward === undefined
          ? undefined
          : await openTrainRubric(config, f.reward === undefined ? 'reward' : '--reward', f.judgeCache);
      // Redis reached (or refused, in one line) before anything of a run is touched.
      const queue = await openQueue(f.queue, 'train');
      const progress = new Progress('train', config.iters);
      queue.show(progress);
      const onIter = (iter: number, iters: number, m: Record<string, number>) => {
        const line = `success ${fmt(m['rollout/success'], 3)} step quality ${fmt(m['rollout/step_quality'], 3)}`;
        if (interactive()) progress.update(iter + 1, line);
        else if ((iter + 1) % config.logEvery === 0 || iter + 1 === iters)
          warn(`iter ${iter + 1}/${iters} ${line}`);
      };
      const options = {
        config,
        envs,
        out: outDir,
        resume: f.resume !== undefined && !f.restart,
        onIter,
        ...(reward === undefined ? {} : { reward: { ...reward, sideEffects: toolsSideEffects } }),
      };
      let result: Awaited<ReturnType<typeof trainPolicyGradient>>;
      try {
        // Deliberately: the old run's files go (under its lock: a live run is refused), a new run starts.
        if (f.restart) RunDir.restart(outDir);
        result = await (config.algo === 'es'
          ? trainEs(options)
          : trainPolicyGradient(f.queue === undefined ? options : { ...options, queue }));
      } finally {
        await queue.close();
        reward?.cache?.close();
      }
      progress.done();
      const rewardSummary = reward && rubricReport(reward, result.metrics);
      const shaping = config.shaping && (await shapingReport(config, result.final, f.vsUnshaped === true));
      const last = result.metrics.at(-1);
      const report = {
        final: result.final,
        seconds: result.seconds,
        ...(result.resumed === undefined ? {} : { resumed: result.resumed }),
        iters: config.iters,
        ...(result.evaluations === undefined ? {} : { evaluations: result.evaluations }),
        out: outDir,
        last: last?.values ?? null,
        ...(shaping ? { shaping } : {}),
        ...(rewardSummary ? { reward: rewardSummary } : {}),
      };
      if (f.json) return json(report);
      const fin = result.final;
      const evals = result.evaluations === undefined ? '' : ` (${result.evaluations} fitness evaluations)`;
      out(
        `trained ${config.policy.kind} with ${config.algo} for ${config.iters} iterations${evals} in ${timing(result)} → ${outDir}`,
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
      if (shaping) for (const line of shapingLines(shaping)) out(line);
      if (config.rehearsal && result.metrics.length > 0) {
        const [a, b] = [result.metrics[0].values, result.metrics.at(-1)!.values];
        if (config.env.env !== 'frozenlake')
          out(
            `rehearsal ratio=${config.rehearsal.ratio}: ${b['rehearsal/imagined_episodes']} imagined episodes an iteration; the tools' answers on file ${a['rehearsal/known_calls']} → ${b['rehearsal/known_calls']} calls (answers that contradicted one on file: ${result.metrics.reduce((n, m) => n + m.values['rehearsal/conflicts'], 0)}); imagined episodes halted at an unknown call ${fmt(a['rehearsal/halted'])} → ${fmt(b['rehearsal/halted'])}, succeeded ${fmt(a['rehearsal/imagined_success'])} → ${fmt(b['rehearsal/imagined_success'])} (iterations ${result.metrics[0].iter + 1} → ${result.metrics.at(-1)!.iter + 1})`,
          );
        else
          out(
            `rehearsal ${showRehearsal(config.rehearsal)}: ${b['rehearsal/imagined_episodes']} imagined episodes an iteration; the model's TV to the true P over the (cell, action) visited ${fmt(a['train/model_tv'])} → ${fmt(b['train/model_tv'])}, over all ${fmt(a['rehearsal/model_tv_all'])} → ${fmt(b['rehearsal/model_tv_all'])} (iterations ${result.metrics[0].iter + 1} → ${result.metrics.at(-1)!.iter + 1})`,
          );
      }
      if (rewardSummary) for (const line of rubricLines(rewardSummary)) out(line);
      out(`policy: ${outDir}/policy.safetensors (use --policy ${outDir})`);
    });
}

interface ShapingReport extends ShapingConfig {
  /** The true success of the trained policy at the end: exact where the env has an oracle, else sampled. */
  success: number | null;
  /** Fixed maps: the true success of the policy optimal for the shaped reward (calc shaping's DP) and
   * the optimum, at the evaluation budget; null for random maps (one DP per map) or where the DP is refused. */
  shapedOptimal: number | null;
  optimum: number | null;
  /** --vs-unshaped: the same config and seed without shaping, and success − its success. */
  unshaped?: { success: number | null };
  gap?: number | null;
}

const trueSuccess = (f: FinalEval | null) => (f === null ? null : (f.exact ?? f.success));

/** What a shaped run adds to the report: its true success, the shaped optimum and, asked, the gap. */
async function shapingReport(
  config: TrainConfig,
  final: FinalEval | null,
  vsUnshaped: boolean,
): Promise<ShapingReport> {
  const shaping = config.shaping!;
  let shapedOptimal: number | null = null;
  let optimum: number | null = null;
  const params = config.env.params as { random?: boolean };
  if (final !== null && params.random !== true) {
    const world = frozenLakeWorld(makeTasks(envConfig(config.env.env, config.env.params), 1, 0)[0]);
    const [row] = measureShaping(world, final.budget, [shaping]).rows;
    optimum = row.optimum;
    shapedOptimal = row.skipped === undefined ? row.success : null;
  }
  const report: ShapingReport = { ...shaping, success: trueSuccess(final), shapedOptimal, optimum };
  if (vsUnshaped) {
    warn('training the unshaped run of the same config and seed (--vs-unshaped)');
    const base = await trainPolicyGradient({ config: { ...config, shaping: undefined }, envs });
    const success = trueSuccess(base.final);
    report.unshaped = { success };
    report.gap = report.success === null || success === null ? null : report.success - success;
  }
  return report;
}

function shapingLines(r: ShapingReport): string[] {
  const name = showShaping(r);
  const lines = [
    `shaping ${name}: true success at the end ${fmt(r.success)}; the shaped-optimal policy's ${r.shapedOptimal === null ? '- (no exact DP here)' : fmt(r.shapedOptimal)}, the optimum ${fmt(r.optimum)} (turnwise calc shaping)`,
  ];
  if (r.unshaped !== undefined)
    lines.push(
      `unshaped run, same seed: true success ${fmt(r.unshaped.success)}; gap (${name} − unshaped) ${r.gap === null || r.gap === undefined ? '-' : `${r.gap >= 0 ? '+' : ''}${fmt(r.gap)}`}`,
    );
  return lines;
}

/** --reward's rubric, checked against the run's env and groups, its judges reached (with --judge-cache,
 * recording there). */
async function openTrainRubric(
  config: TrainConfig,
  field: string,
  judgeCache: string | undefined,
): Promise<OpenedRubric> {
  return await openRubric(rubricPath(config.reward as string, field), {
    field,
    ...(judgeCache === undefined ? {} : { cacheFile: judgeCache, cacheField: '--judge-cache' }),
    check: (rubric) => checkRubricFor(rubric, [config.env.env], config.groupSize, 'groupSize'),
  });
}

/** What a rubric-rewarded run adds to the report, over the iterations of this call. */
interface RubricReport {
  rubric: string;
  iterations: number;
  /** The mean score at the first and the last iteration of this call. */
  first: number | null;
  last: number | null;
  trajectories: number;
  missing: number;
  judgeErrors: number;
  used: number;
  droppedGroups: number;
  judgeCalls: number;
  totals?: ReturnType<typeof judgeTotals>;
}

function rubricReport(
  opened: OpenedRubric,
  metrics: readonly { values: Record<string, number> }[],
): RubricReport {
  const sum = (k: string) => metrics.reduce((s, m) => s + (m.values[k] ?? 0), 0);
  const meanAt = (m: { values: Record<string, number> } | undefined) => {
    const v = m?.values['reward/mean'];
    return v === undefined || Number.isNaN(v) ? null : v;
  };
  const totals = judgeTotals(opened);
  return {
    rubric: opened.rubric.file,
    iterations: metrics.length,
    first: meanAt(metrics[0]),
    last: meanAt(metrics.at(-1)),
    trajectories: sum('reward/scored') + sum('reward/missing'),
    missing: sum('reward/missing'),
    judgeErrors: sum('reward/judge_errors'),
    used: sum('reward/used'),
    droppedGroups: sum('reward/dropped_groups'),
    judgeCalls: sum('reward/judge_calls'),
    ...(totals === undefined ? {} : { totals }),
  };
}

function rubricLines(r: RubricReport): string[] {
  const lines = [
    `reward rubric ${r.rubric}: mean score ${fmt(r.first)} at the first iteration, ${fmt(r.last)} at the last (${r.iterations} iterations); ${r.trajectories} trajectories scored, ${r.missing} without a score (${r.judgeErrors} by a judge error), ${r.used} used by the updates, ${r.droppedGroups} groups left without two scores; ${r.judgeCalls} judge calls (every judgement in run.sqlite)`,
  ];
  if (r.totals !== undefined) lines.push(`judge ${totalsLine(r.totals)}`);
  return lines;
}
