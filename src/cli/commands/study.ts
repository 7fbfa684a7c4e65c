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
import type { StudyStage } from '../../studies/budget/pipeline.ts';
import { renderBudgetReport } from '../../studies/budget/report/page.ts';
import type { TrainerName } from '../../studies/budget/run.ts';
import { runStudy, studyFindings, studyPlan } from '../../studies/budget/study.ts';
import { parseSummary } from '../../studies/budget/summary.ts';
import { findingLines, terminalSummary } from '../../studies/budget/terminal.ts';
import type { RlTrainer } from '../../studies/budget/trainer.ts';
import { WORLD_IDS, type WorldId } from '../../studies/budget/world.ts';
import { LANGUAGE_WORLD_IDS } from '../../studies/language/design.ts';
import { json, out } from '../io.ts';
import { addParamOptions, applyParamFlags, applySets, paramFlags, setOption } from '../params.ts';
import { ABOUT } from './about.ts';
import { parseParallel, parseSeeds, type StudyFlags } from './study-flags.ts';
import { registerStudyHacking } from './study-hacking.ts';
import { isLanguageSummary, languageVerdicts, studyLanguage } from './study-language.ts';
import { registerShapingStudy } from './study-shaping.ts';

/** The flags declared in StudyConfigSchema. */
const FLAGS = paramFlags(StudyConfigSchema);

/** The profile, then the flags, then `--set`, validated (cross-field checks included). */
export function studyConfig(flags: StudyFlags): StudyConfig {
  const raw = profileInput(flags.profile);
  applyParamFlags(FLAGS, flags, raw);
  applySets(StudyConfigSchema, raw, flags.set ?? []);
  return parseStudyConfig(raw, 'config');
}

/** Where a study goes without --out: runs/budget-<profile>, relative to the current directory. */
export function defaultStudyDir(profile: string): string {
  return join('runs', `budget-${profile}`);
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
  const study = program.command('study').description(ABOUT.study.description);
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
      `run directory (default: ${defaultStudyDir('<profile>')} in the current directory, whose summary.json, report.html and policies each run overwrites); an --out that already holds a summary.json is refused without --force`,
    )
    .option('--force', 'replace the study in an existing --out directory')
    .option('--json', 'print the summary (summary.json) instead of the terminal summary')
    .option(
      '--seeds <list>',
      'seeds to run, comma-separated (default: the profile’s: quick 0; default 0,1,2; full 0–4)',
    )
    .option(
      '--worlds <list>',
      `worlds to run, comma-separated (${WORLD_IDS.join(', ')}; default: both; with --policy-kind transformer: ${LANGUAGE_WORLD_IDS.join(', ')})`,
    )
    .option(
      '--policy-kind <kind>',
      'mlp: the FrozenLake study with table/MLP policies; transformer: the language study in the paper’s four worlds (profiles quick | default | paper; resumable: the same command continues a cut run)',
      'mlp',
    )
    .option(
      '--parallel <n>',
      'runs at once, on worker threads (default: the machine’s cores, at most one per 4 GiB of memory)',
    )
    .addOption(setOption('study config', 'rl.iters=100'));
  addParamOptions(budget, FLAGS)
    .addHelpText(
      'after',
      `
--set reaches any field of the study config (src/studies/budget/config.ts), e.g. --set rl.iters=100
--set eval.T=[10,20,50,100]. Precedence: the profile < flags < --set.`,
    )
    .action((flags: StudyFlags) => {
      if (flags.policyKind === 'transformer') return studyLanguage(flags);
      if (flags.policyKind !== 'mlp')
        throw new InputError('--policy-kind', flags.policyKind, 'expected mlp or transformer');
      return studyBudget(flags, 'grpo');
    });
  study
    .command('verdicts')
    .description(
      "recompute a budget study's findings from the quantities its summary.json stores (the stored findings are not read)",
    )
    .requiredOption('--in <file>', 'a run’s summary.json')
    .option('--json', 'print the findings list (the summary’s `findings`) as JSON')
    .action((flags: { in: string; json?: boolean }) => studyVerdicts(flags));
  registerStudyHacking(study);
  registerShapingStudy(study);
}

/** `study verdicts`: the findings, recomputed from the stored quantities of a summary.json. */
export function studyVerdicts(flags: { in: string; json?: boolean }): void {
  const file = flags.in;
  if (!existsSync(file) || !statSync(file).isFile()) throw new InputError('--in', file, 'no such file');
  const text = readFileSync(file, 'utf8');
  if (isLanguageSummary(text)) {
    languageVerdicts(file, flags.json);
    return;
  }
  const findings = studyFindings(parseSummary(text, file));
  if (flags.json) json(findings);
  else {
    const worlds = [...new Set(findings.map((x) => x.world))];
    const text = worlds.flatMap((w) =>
      findingLines(
        findings.filter((x) => x.world === w),
        `Findings recomputed from ${file}`,
      ),
    );
    out(text.join('\n'));
  }
}

/** `--worlds slippery,narrow`: distinct world ids. */
export function parseWorlds(raw: string | undefined): WorldId[] | undefined {
  if (raw === undefined) return undefined;
  const ws = raw.split(',').map((x) => x.trim());
  if (ws.some((w) => !(WORLD_IDS as readonly string[]).includes(w)) || new Set(ws).size !== ws.length)
    throw new InputError('--worlds', raw, `expected distinct worlds of: ${WORLD_IDS.join(', ')}`);
  return ws as WorldId[];
}

/** The command itself, with the trainer as a parameter (the CLI passes the real GRPO trainer by name,
 * so that runs go to worker threads; a test can pass a stand-in function, run in this thread). */
export async function studyBudget(flags: StudyFlags, trainer: TrainerName | RlTrainer): Promise<void> {
  const config = studyConfig(flags);
  // --seed n is one seed; --seeds a list; neither: the profile's seeds.
  const seeds =
    parseSeeds(flags.seeds as string | undefined) ?? (flags.seed !== undefined ? [config.seed] : undefined);
  const plan = studyPlan(config, seeds, parseWorlds(flags.worlds as string | undefined));
  const parallel = parseParallel(flags.parallel as string | undefined);
  const dir = flags.out ?? defaultStudyDir(config.profile);
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
  const at = () => `[${((performance.now() - t0) / 1000).toFixed(1)} s]`;
  const TRAINING = new Set(['rl', 'budgetmix', 'gigpo']);
  const result = await runStudy(plan, {
    trainer,
    parallel,
    onEvent: (e) => {
      const who = `${e.world} seed ${e.seed}`;
      if (e.detail !== undefined) process.stderr.write(`turnwise: ${at()} ${who}: ${e.detail}\n`);
      else if (e.progress && TRAINING.has(e.stage)) {
        // Training: a line at every quarter (the runs interleave, so no progress bars).
        const pct = Math.floor((100 * e.progress.done) / e.progress.total);
        if (pct > 0 && pct % 25 === 0)
          process.stderr.write(`turnwise: ${at()} ${who}: ${STAGE_LABEL[e.stage]} ${pct}%\n`);
      }
    },
  });
  const { summary, policies } = result;
  for (const run of policies) {
    const pdir = join(dir, 'policies', `${run.world}-${run.seed}`);
    mkdirSync(pdir, { recursive: true });
    for (const [role, bytes] of Object.entries(run.files))
      writeFileSync(join(pdir, `${role}.safetensors`), bytes);
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
