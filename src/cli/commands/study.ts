// turnwise study budget: the flagship study — what did multi-turn RL really improve? Behaviour-clones
// a base, asks the trainer for RL and BudgetMix, measures everything on held-out maps and writes
// RUN/summary.json, RUN/report.html and the three policies; stdout gets the terminal summary (or the
// summary as JSON), stderr the progress. `turnwise study verdicts --in RUN/summary.json` recomputes the
// findings from the quantities a summary stores (so a verdict can be audited, or edited and re-decided).
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { checkOutput } from '../../store/paths.ts';
import {
  PROFILE_NAMES,
  parseStudyConfig,
  profileInput,
  type StudyConfig,
  StudyConfigSchema,
} from '../../studies/budget/config.ts';
import { budgetFindings } from '../../studies/budget/findings.ts';
import { runBudgetStudy, type StudyStage } from '../../studies/budget/pipeline.ts';
import { renderBudgetReport } from '../../studies/budget/report.ts';
import { parseSummary } from '../../studies/budget/summary.ts';
import { findingLines, terminalSummary } from '../../studies/budget/terminal.ts';
import { defaultTrainer, type RlTrainer } from '../../studies/budget/trainer.ts';
import { json, out, Progress } from '../io.ts';
import { addParamOptions, applyParamFlags, applySets, paramFlags, setOption } from '../params.ts';

export interface StudyFlags {
  profile: string;
  out?: string;
  seed?: string;
  set?: string[];
  json?: boolean;
  force?: boolean;
  [flag: string]: unknown;
}

/** The flags declared in StudyConfigSchema. */
const FLAGS = paramFlags(StudyConfigSchema);

/** The profile, then the flags, then `--set`, validated (cross-field checks included). */
export function studyConfig(flags: StudyFlags): StudyConfig {
  const raw = profileInput(flags.profile);
  applyParamFlags(FLAGS, flags, raw);
  applySets(StudyConfigSchema, raw, flags.set ?? []);
  return parseStudyConfig(raw, 'config');
}

const STAGE_LABEL: Record<StudyStage, string> = {
  base: 'base (BC)',
  rl: 'RL',
  budgetmix: 'BudgetMix',
  gigpo: 'GiGPO',
  evaluation: 'evaluation',
  diagnostics: 'diagnostics',
};

export function registerStudy(program: Command): void {
  const study = program.command('study').description('whole experiments composed from the library');
  const budget = study
    .command('budget')
    .description(
      'the budget study: what did multi-turn RL really improve? Pass@(K,T), step quality, recovery, likelihood, training curves — one HTML report',
    )
    .option(
      '--profile <name>',
      `${PROFILE_NAMES.join(' | ')} (quick ≤ 60 s; default is what npm start runs)`,
      'default',
    )
    .option(
      '--out <dir>',
      'run directory (default: runs/budget-<profile>-<seed>, replaced on each run); an --out that holds a study is refused without --force',
    )
    .option('--force', 'replace the study in an existing --out directory')
    .option('--json', 'print the summary (summary.json) instead of the terminal summary')
    .addOption(setOption('study config', 'rl.iters=100'));
  addParamOptions(budget, FLAGS)
    .addHelpText(
      'after',
      `
--set reaches any field of the study config (src/studies/budget/config.ts), e.g. --set rl.iters=100
--set eval.T=[10,20,50,100]. Precedence: the profile < flags < --set.`,
    )
    .action((flags: StudyFlags) => studyBudget(flags, defaultTrainer));
  study
    .command('verdicts')
    .description(
      "recompute a budget study's findings from the quantities its summary.json stores (the stored findings are not read)",
    )
    .requiredOption('--in <file>', 'a run’s summary.json')
    .option('--json', 'print the findings list (the summary’s `findings`) as JSON')
    .action((flags: { in: string; json?: boolean }) => studyVerdicts(flags));
}

/** `study verdicts`: the findings, recomputed from the stored quantities of a summary.json. */
export function studyVerdicts(flags: { in: string; json?: boolean }): void {
  const file = flags.in;
  if (!existsSync(file) || !statSync(file).isFile()) throw new InputError('--in', file, 'no such file');
  const findings = budgetFindings(parseSummary(readFileSync(file, 'utf8'), file));
  if (flags.json) json(findings);
  else out(findingLines(findings, `Findings recomputed from ${file}`).join('\n'));
}

/** The command itself, with the trainer as a parameter (the CLI passes defaultTrainer; a script or a
 * test can run the same command with a stand-in). */
export async function studyBudget(flags: StudyFlags, trainer: RlTrainer): Promise<void> {
  const config = studyConfig(flags);
  const dir = flags.out ?? join('runs', `budget-${config.profile}-${config.seed}`);
  checkOutput(dir, '--out', 'dir');
  // Like train: a directory the user named is not silently overwritten (the default one is the
  // study's own scratch place, replaced by every `npm start`).
  if (flags.out !== undefined && !flags.force && existsSync(join(dir, 'summary.json'))) {
    throw new InputError(
      '--out',
      dir,
      'already holds a finished run (summary.json); give another directory, or --force to replace it',
    );
  }
  const t0 = performance.now();
  // One progress bar per stage and total (TTY only), one plain line per stage (always).
  let bar: Progress | undefined;
  let barKey = '';
  const result = await runBudgetStudy(config, {
    trainer,
    onStage: (_stage, detail) => {
      bar?.done();
      bar = undefined;
      barKey = '';
      process.stderr.write(`turnwise: [${((performance.now() - t0) / 1000).toFixed(1)} s] ${detail}\n`);
    },
    onProgress: ({ stage, done, total }) => {
      if (`${stage}/${total}` !== barKey) {
        bar?.done();
        bar = new Progress(STAGE_LABEL[stage], total);
        barKey = `${stage}/${total}`;
      }
      bar!.update(done);
    },
  });
  bar?.done();
  const { summary, policies } = result;
  mkdirSync(join(dir, 'policies'), { recursive: true });
  for (const [name, policy] of Object.entries(policies)) {
    policy.save(join(dir, 'policies', `${name}.safetensors`), undefined, { study: 'budget', role: name });
  }
  writeFileSync(join(dir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  const report = join(dir, 'report.html');
  writeFileSync(report, renderBudgetReport(summary));
  if (flags.json) {
    json(summary);
    process.stderr.write(`turnwise: report: ${report}\n`);
    return;
  }
  out(terminalSummary(summary, report));
}
