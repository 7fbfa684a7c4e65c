// turnwise report RUN: re-render RUN/report.html from RUN/summary.json (validated first), e.g. after
// the report code changed, without running the study again.
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { renderBudgetReport } from '../../studies/budget/report/page.ts';
import { parseSummary } from '../../studies/budget/summary.ts';
import { json, out } from '../io.ts';
import { ABOUT } from './about.ts';

export function registerReport(program: Command): void {
  program
    .command('report')
    .description(ABOUT.report.description)
    .argument('<run>', 'run directory (or its summary.json)')
    .option('--json', 'print {"report": path} instead of a sentence')
    .action((run: string, flags: { json?: boolean }) => {
      if (!existsSync(run)) throw new InputError('RUN', run, 'no such run directory');
      const isFile = statSync(run).isFile();
      const dir = isFile ? dirname(run) : run;
      const file = isFile ? run : join(run, 'summary.json');
      if (isFile && basename(run) !== 'summary.json') {
        throw new InputError('RUN', run, 'expected a run directory or its summary.json');
      }
      if (!existsSync(file))
        throw InputError.raw(file, 'missing; RUN must be a run directory with a summary.json');
      const summary = parseSummary(readFileSync(file, 'utf8'), file);
      const report = join(dir, 'report.html');
      writeFileSync(report, renderBudgetReport(summary));
      if (flags.json) return json({ report });
      out(`wrote ${report}`);
    });
}
