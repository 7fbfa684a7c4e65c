// turnwise judge audit --in FILE.jsonl --rubric R.json [--threshold X] [--cache FILE.sqlite] [--json]:
// a rubric's judges measured against the env's own verifier on a trajectory file (rewards/audit.ts):
// agreement, Cohen's κ and the confusion matrix of each judge criterion's verdict (its score ≥ the
// threshold) and of the rubric's combined score; length bias within each verifier class; position bias
// of a pairwise judge. The judges are reached (or refused) before any call, as in `eval --reward`.
import type { Command } from 'commander';
import { type AuditReport, audit } from '../../rewards/audit.ts';
import { groupsOf, judgeCallCount } from '../../rewards/score.ts';
import { readTrajectories, SkippedLines } from '../../store/jsonl.ts';
import { fmt, json, out, Progress, table, warn } from '../io.ts';
import { CACHE_HELP, totalsLine } from '../openai-flags.ts';
import { checkSpacesOfRegistered, num } from '../options.ts';
import { checkRubricFor, largestGroup, openRubric, scoreBatch } from '../rubric.ts';
import { ABOUT } from './about.ts';
import { SKIP_HELP } from './summary.ts';

interface AuditFlags {
  apiKeyEnv?: string;
  in: string;
  rubric: string;
  threshold: string;
  cache?: string;
  skipInvalid?: boolean;
  json?: boolean;
}

export function registerJudge(program: Command): void {
  const judge = program.command('judge').description(ABOUT.judge.description);
  judge
    .command('audit')
    .description(
      "a rubric's judges against the env's verifier on a trajectory file: agreement, Cohen's κ, confusion, length bias, position bias",
    )
    .requiredOption('--in <file.jsonl>', 'trajectories with the verdict of their env (outcome.success)')
    .requiredOption('--rubric <file.json>', 'the rubric whose judge criteria are audited')
    .option('--threshold <x>', "a judge's verdict is pass when its score (in [0, 1]) is ≥ x", '0.5')
    .option('--cache <file.sqlite>', `the judges' ${CACHE_HELP}`)
    .option('--skip-invalid', SKIP_HELP)
    .option('--json', 'machine-readable output')
    .option(
      '--api-key-env <name>',
      'read the API key of the judges from this variable (default OPENAI_API_KEY)',
    )
    .action(async (flags: AuditFlags) => {
      const threshold = num('--threshold', flags.threshold, (x) => x > 0 && x <= 1, 'a number in (0, 1]');
      const skipped = flags.skipInvalid ? new SkippedLines() : undefined;
      const batch = readTrajectories(flags.in, '--in', checkSpacesOfRegistered, skipped);
      if (skipped && skipped.count > 0) warn(skipped.note(flags.in));
      const opened = await openRubric(flags.rubric, {
        field: '--rubric',
        keyEnv: flags.apiKeyEnv,
        cacheFile: flags.cache,
        check: (rubric) =>
          checkRubricFor(rubric, [...new Set(batch.map((t) => t.task.env))], largestGroup(batch), '--in'),
      });
      const progress = new Progress('judge', judgeCallCount(opened.rubric, groupsOf(batch)));
      const { run, totals } = await scoreBatch(opened, batch, {
        onProgress: (done) => progress.update(done),
      }).finally(() => progress.done());
      const report = audit(opened.rubric, batch, run, threshold);
      if (flags.json) return json({ ...report, ...(totals === undefined ? {} : { judgeRequests: totals }) });
      out(auditText(report, flags.in));
      if (totals !== undefined) out(`\njudge ${totalsLine(totals)}`);
    });
}

const signed = (x: number | null) => (x === null ? '-' : `${x >= 0 ? '+' : ''}${fmt(x)}`);

/** The audit as text: verdicts, length bias, position bias. */
export function auditText(r: AuditReport, file: string): string {
  const lines = [
    `judge audit of ${r.rubric} on ${file}: ${r.trajectories} trajectories, env success ${fmt(r.envSuccess)}; a verdict is pass when the score is ≥ ${r.threshold}`,
    'confusion: tp = success judged pass, fn = success judged fail, fp = failure judged pass, tn = failure judged fail',
    table([
      ['criterion', 'mode', 'n', 'judge errors', 'agreement', 'kappa', 'tp', 'fn', 'fp', 'tn'],
      ...r.audits.map((a) => [
        a.criterion,
        a.mode ?? '-',
        a.n,
        a.judgeErrors,
        fmt(a.agreement),
        signed(a.kappa),
        a.confusion.tp,
        a.confusion.fn,
        a.confusion.fp,
        a.confusion.tn,
      ]),
    ]),
    '',
    'length bias: the score against the turns within each verifier class (least-squares slope per turn, Spearman ρ)',
    table([
      ['criterion', 'class', 'n', 'slope', 'spearman'],
      ...r.audits.flatMap((a) =>
        (['success', 'failure'] as const).map((k) => [
          a.criterion,
          k,
          a.lengthBias[k].n,
          signed(a.lengthBias[k].slope),
          signed(a.lengthBias[k].spearman),
        ]),
      ),
    ]),
  ];
  for (const a of r.audits) {
    const p = a.pairwise;
    if (p === undefined) continue;
    lines.push(
      '',
      `position bias of ${a.criterion}: ${signed(p.positionBias)} (${p.firstWins} of ${p.answers} answers preferred the first shown; ${p.flipped} of ${p.pairs} pairs flipped with the order); on the ${p.mixedPairs} pairs where one trajectory succeeded, the judge preferred it ${fmt(p.mixedAccuracy)} of the time`,
    );
  }
  return lines.join('\n');
}
