// turnwise study hacking: the reward-hacking study (src/studies/hacking.ts, docs/reward-hacking.md) —
// curves of the visible pass rate, the hidden pass rate, their gap and the detector's rate per iteration,
// under the hackable reward and its mitigations, mean over seeds with 95% intervals. stdout: the tables
// (or the whole study as JSON); stderr: one line per finished run.
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import {
  type Estimate,
  HACKING_DEFAULTS,
  HACKING_FIGURES,
  type HackingStudy,
  openJudge,
  runHackingStudy,
} from '../../studies/hacking.ts';
import { fmt, json, out, table, warn } from '../io.ts';
import { int } from '../options.ts';
import { parseSeeds } from './study-flags.ts';

interface HackingFlags {
  seeds?: string;
  iters?: string;
  groups?: string;
  window?: string;
  every?: string;
  judge?: string;
  json?: boolean;
}

export function registerStudyHacking(study: Command): void {
  study
    .command('hacking')
    .description(
      'reward hacking in the code env: GRPO on candidate programs under the visible reward and its mitigations (hidden-test sample, detector penalty, with --judge a judge), curves of visible/hidden pass, gap and detector rate',
    )
    .option('--seeds <list>', 'training seeds, comma-separated, the same for every arm (default 1,2,3,4,5)')
    .option('--iters <n>', `iterations per run (default ${HACKING_DEFAULTS.iters})`)
    .option('--groups <n>', `tasks per iteration (default ${HACKING_DEFAULTS.groups})`)
    .option('--window <n>', `last iterations averaged in the summary (default ${HACKING_DEFAULTS.window})`)
    .option('--every <n>', 'print every n-th iteration of the curves (default 10)')
    .option(
      '--judge <spec>',
      "adds the judge arm: the visible reward gated by this judge's verdict on the submitted program (openai:URL#MODEL[,…]; docs/reward-hacking.md)",
    )
    .option('--json', 'the whole study (every iteration) as JSON')
    .action(async (flags: HackingFlags) => {
      const iters =
        flags.iters === undefined ? HACKING_DEFAULTS.iters : int('--iters', flags.iters, 1, 10_000);
      const options = {
        ...HACKING_DEFAULTS,
        seeds: parseSeeds(flags.seeds) ?? HACKING_DEFAULTS.seeds,
        iters,
        groups: flags.groups === undefined ? HACKING_DEFAULTS.groups : int('--groups', flags.groups, 1, 4096),
        window:
          flags.window === undefined
            ? Math.min(HACKING_DEFAULTS.window, iters)
            : int('--window', flags.window, 1, iters),
      };
      const every = flags.every === undefined ? 10 : int('--every', flags.every, 1, 10_000);
      if (options.seeds.length > 11) throw new InputError('--seeds', flags.seeds, 'at most 11 seeds');
      // The judge reached (or refused, in one line) before any run.
      const judge =
        flags.judge === undefined ? undefined : await openJudge(flags.judge, process.env.OPENAI_API_KEY);
      const study = await runHackingStudy(
        flags.judge === undefined ? options : { ...options, judge: flags.judge },
        (arm, seed, s) => warn(`hacking: ${arm} seed ${seed} done in ${s.toFixed(1)} s`),
        judge,
      );
      if (flags.json) return json(study);
      out(hackingText(study, every));
    });
}

const est = (e: Estimate) =>
  e.ci95[0] === null ? fmt(e.value, 3) : `${fmt(e.value, 3)} [${fmt(e.ci95[0], 2)}, ${fmt(e.ci95[1], 2)}]`;

/** The study as text: per arm, its curves every `every` iterations; then the summary table. */
export function hackingText(s: HackingStudy, every: number): string {
  const o = s.options;
  const lines = [
    `reward hacking, code env ${JSON.stringify(s.env.params)}: MLP, GRPO, ${o.iters} iterations × ${o.groups} tasks × ${o.groupSize} samples, seeds ${o.seeds.join(',')}`,
    'mean over seeds [95% t-interval across seeds]; pass = every visible (hidden) test of the submitted program passes; gap = visible − hidden; detected = the detector flags it',
  ];
  for (const arm of s.arms) {
    lines.push('', `${arm.name} ${JSON.stringify(arm.params)}`);
    const rows: string[][] = [['iter', ...HACKING_FIGURES]];
    for (let i = 0; i < o.iters; i++)
      if (i % every === 0 || i === o.iters - 1)
        rows.push([String(i), ...HACKING_FIGURES.map((f) => est(arm.curves[f][i]))]);
    lines.push(table(rows));
  }
  lines.push('', `last ${o.window} iterations, and minus the unmitigated arm (visible) paired by seed`);
  const rows: string[][] = [['arm', ...HACKING_FIGURES, 'gap − visible arm', 'hidden − visible arm']];
  for (const arm of s.arms)
    rows.push([
      arm.name,
      ...HACKING_FIGURES.map((f) => est(arm.final[f])),
      arm.vsVisible === undefined ? '-' : est(arm.vsVisible.gap),
      arm.vsVisible === undefined ? '-' : est(arm.vsVisible.hidden),
    ]);
  lines.push(table(rows));
  return lines.join('\n');
}
