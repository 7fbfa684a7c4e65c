// turnwise report RUN: a run's report as one self-contained HTML file. A study: RUN/report.html
// re-rendered from RUN/summary.json (validated first), e.g. after the report code changed, without
// running the study again. A training run, a harness run or a trajectory file: its page
// (studies/run-report.ts). `--trajectory ID`: one trajectory of a training or harness run or a trajectory
// file, turn by turn, as a single file to attach to a bug report.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { checkOutput } from '../../store/paths.ts';
import { renderBudgetReport } from '../../studies/budget/report/page.ts';
import { parseSummary } from '../../studies/budget/summary.ts';
import { creditOfFile } from '../../studies/credit-file.ts';
import { reportableRun, runReportPage, trajectoryReportPage } from '../../studies/run-report.ts';
import { json, out } from '../io.ts';
import { spacesOfRegistered } from '../options.ts';
import { ABOUT } from './about.ts';

interface ReportFlags {
  trajectory?: string;
  out?: string;
  json?: boolean;
}

/** Where a page goes by default: in the run's directory, or beside the trajectory file. */
function defaultOut(run: string, isFile: boolean, trajectory: string | undefined): string {
  const name = trajectory === undefined ? 'report' : `trajectory-${trajectory.replace(/[^\w.-]/g, '_')}`;
  return isFile ? `${run.replace(/\.jsonl$/, '')}.${name}.html` : join(run, `${name}.html`);
}

export function registerReport(program: Command): void {
  program
    .command('report')
    .description(ABOUT.report.description)
    .argument(
      '<run>',
      'a run directory (a study, a training or a harness run), a study’s summary.json, or a trajectory file',
    )
    .option(
      '--trajectory <id>',
      'one trajectory’s turn-by-turn page, by its id (training runs: with --store-trajectories)',
    )
    .option(
      '--out <file.html>',
      'the file written (default: report.html, or trajectory-ID.html, in the run directory; beside a trajectory file)',
    )
    .option('--json', 'print {"report": path} instead of a sentence')
    .action((run: string, flags: ReportFlags) => {
      if (!existsSync(run)) throw new InputError('RUN', run, 'no such run directory');
      if (flags.trajectory === '') throw new InputError('--trajectory', '', 'expected a trajectory id');
      if (flags.out !== undefined) checkOutput(flags.out, '--out', 'file', [['RUN', run]]);
      const isFile = statSync(run).isFile();
      const found = reportableRun(run);
      const write = (html: string, path: string) => {
        writeFileSync(path, html);
        if (flags.json) return json({ report: path });
        out(`wrote ${path}`);
      };
      if (found !== undefined) {
        const page =
          flags.trajectory === undefined
            ? runReportPage(found, spacesOfRegistered)
            : trajectoryReportPage(found, flags.trajectory, {
                spacesOf: spacesOfRegistered,
                credit: creditOfFile,
              });
        return write(page, flags.out ?? defaultOut(run, isFile, flags.trajectory));
      }
      const dir = isFile ? dirname(run) : run;
      const file = isFile ? run : join(run, 'summary.json');
      if (isFile && basename(run) !== 'summary.json') {
        throw new InputError(
          'RUN',
          run,
          'expected a run directory, a study’s summary.json or a trajectory file (.jsonl, one trajectory a line)',
        );
      }
      if (!existsSync(file))
        throw InputError.raw(
          file,
          'missing; RUN must be a study’s directory (with a summary.json), a training or harness run directory (with a run.sqlite) or a trajectory file',
        );
      if (flags.trajectory !== undefined)
        throw new InputError(
          '--trajectory',
          flags.trajectory,
          'a study keeps no trajectories; give a training or harness run, or a trajectory file',
        );
      const summary = parseSummary(readFileSync(file, 'utf8'), file);
      write(renderBudgetReport(summary), flags.out ?? join(dir, 'report.html'));
    });
}
