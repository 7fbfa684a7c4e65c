// turnwise study budget --policy-kind transformer: the budget study with language agents in the paper's
// four worlds (studies/language/). Resumable: the same command after a kill reruns nothing that
// finished. stdout: the terminal summary (or summary.json with --json); stderr: world, seed, stage, ETA.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../core/errors.ts';
import { envs } from '../../envs/index.ts';
import { checkOutput } from '../../store/paths.ts';
import { defaultParallel } from '../../studies/budget/study.ts';
import {
  LANGUAGE_PROFILE,
  LANGUAGE_PROFILES,
  LANGUAGE_WORLD_IDS,
  type LanguageProfileName,
  type LanguageWorldId,
} from '../../studies/language/design.ts';
import { renderLanguageReport } from '../../studies/language/report.ts';
import { checkPlan, type LanguageEvent } from '../../studies/language/run.ts';
import {
  type LanguageStudySummary,
  languageLines,
  planRecord,
  recomputeLanguageFindings,
  runLanguageStudy,
} from '../../studies/language/study.ts';
import { json, out } from '../io.ts';
import { parseParallel, parseSeeds, type StudyFlags } from './study-flags.ts';

/** Where the language study goes without --out. */
export const languageDir = (profile: string) => join('runs', `budget-language-${profile}`);

function parseLanguageWorlds(raw: string | undefined): LanguageWorldId[] | undefined {
  if (raw === undefined) return undefined;
  const ws = raw.split(',').map((x) => x.trim());
  if (
    ws.some((w) => !(LANGUAGE_WORLD_IDS as readonly string[]).includes(w)) ||
    new Set(ws).size !== ws.length
  )
    throw new InputError(
      '--worlds',
      raw,
      `expected distinct language worlds of: ${LANGUAGE_WORLD_IDS.join(', ')} (with --policy-kind transformer)`,
    );
  return ws as LanguageWorldId[];
}

/** The flags the table/MLP study has and this one does not take, refused rather than ignored. */
const NOT_HERE: [string, string][] = [['set', '--set']];

export async function studyLanguage(flags: StudyFlags): Promise<void> {
  if (!(LANGUAGE_PROFILES as readonly string[]).includes(flags.profile))
    throw new InputError(
      '--profile',
      flags.profile,
      `expected one of ${LANGUAGE_PROFILES.join(', ')} with --policy-kind transformer`,
    );
  for (const [key, flag] of NOT_HERE) {
    const v = flags[key];
    if (v !== undefined && !(Array.isArray(v) && v.length === 0))
      throw new InputError(
        flag,
        Array.isArray(v) ? v.join(' ') : String(v),
        'not taken with --policy-kind transformer (its sizes are the profile’s)',
      );
  }
  const profile = LANGUAGE_PROFILE[flags.profile as LanguageProfileName];
  const seeds =
    parseSeeds(flags.seeds as string | undefined) ??
    (flags.seed !== undefined ? parseSeeds(String(flags.seed)) : undefined) ??
    profile.seeds;
  const worlds = parseLanguageWorlds(flags.worlds as string | undefined) ?? profile.worlds;
  const parallel = parseParallel(flags.parallel as string | undefined) ?? defaultParallel();
  const dir = flags.out ?? languageDir(profile.name);
  checkOutput(dir, '--out', 'dir');
  // --force starts the study over: what it wrote there goes (nothing else in the directory).
  if (flags.force)
    for (const name of ['summary.json', 'report.html', 'plan.json', ...LANGUAGE_WORLD_IDS])
      rmSync(join(dir, name), { recursive: true, force: true });
  if (existsSync(join(dir, 'summary.json')))
    throw new InputError(
      '--out',
      dir,
      'already holds a finished language study (summary.json); give another directory, or --force to start it over',
    );
  const plan = { profile, worlds, seeds };
  checkPlan(dir, planRecord(plan));
  const t0 = performance.now();
  const started = new Map<string, number>();
  const at = () => `[${((performance.now() - t0) / 1000).toFixed(1)} s]`;
  const onEvent = (e: LanguageEvent) => {
    const who = `${e.world}${e.seed === null ? '' : ` seed ${e.seed}`} ${e.stage}`;
    const key = `${e.world}/${e.seed}/${e.stage}`;
    if (e.kind === 'start') started.set(key, performance.now());
    if (e.kind === 'progress' && e.done !== undefined && e.total !== undefined && e.total > 0) {
      // An ETA for the stage from its rate so far, at every quarter (and each BC epoch / RL iteration when few).
      const since = started.get(key) ?? t0;
      const elapsed = (performance.now() - since) / 1000;
      const eta = (elapsed / e.done) * (e.total - e.done);
      const quarter = Math.max(1, Math.floor(e.total / 4));
      if (e.done % quarter === 0 || e.done === e.total)
        process.stderr.write(
          `turnwise: ${at()} ${who}${e.detail ? ` (${e.detail})` : ''}: ${e.done}/${e.total}, ETA ${eta.toFixed(0)} s\n`,
        );
      return;
    }
    const word = { start: 'started', skip: 'done before (resumed)', done: 'done', progress: '' }[e.kind];
    const text = [word, e.detail].filter((x) => x !== undefined && x !== '').join(' — ');
    process.stderr.write(`turnwise: ${at()} ${who}: ${text}\n`);
  };
  const summary = await runLanguageStudy(plan, { envs, out: dir, onEvent, parallel });
  writeFileSync(join(dir, 'summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
  const report = join(dir, 'report.html');
  writeFileSync(report, renderLanguageReport(summary));
  if (flags.json) {
    json(summary);
    process.stderr.write(`turnwise: report: ${report}\n`);
    return;
  }
  out([...languageLines(summary), `report: ${report}`].join('\n'));
}

/** `study verdicts --in` of a language study: the findings recomputed from its stored measurements. */
export function isLanguageSummary(text: string): boolean {
  try {
    return (JSON.parse(text) as { study?: string }).study === 'budget-language';
  } catch {
    return false;
  }
}

export function languageVerdicts(file: string, asJson: boolean | undefined): void {
  const s = JSON.parse(readFileSync(file, 'utf8')) as LanguageStudySummary;
  if (!Array.isArray(s.runs) || !Array.isArray(s.worlds))
    throw new InputError('--in', file, 'a language study summary needs its runs and worlds');
  const findings = recomputeLanguageFindings(s);
  if (asJson) json(findings);
  else out(languageLines({ ...s, findings }).join('\n'));
}
