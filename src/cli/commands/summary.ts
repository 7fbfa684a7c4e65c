// turnwise summary --in f.jsonl — the summary of a trajectory file (validated line by line).
import type { Command } from 'commander';
import { SummaryAccumulator } from '../../rollout/summary.ts';
import { iterateOutcomes } from '../../store/outcomes.ts';
import { fmt, json, out, table } from '../io.ts';
import { checkSpacesOfRegistered, spacesOfRegistered } from '../options.ts';

export function registerSummary(program: Command): void {
  program
    .command('summary')
    .description('success rate, turns and failure kinds of a trajectory JSONL file')
    .requiredOption('--in <file.jsonl>', 'trajectories, one JSON object per line')
    .option('--json', 'machine-readable output')
    .action((flags: { in: string; json?: boolean }) => {
      // One pass, one line in memory at a time (every line validated, its turns not built): a
      // per-policy accumulator and the overall one.
      const all = new SummaryAccumulator();
      const byPolicy = new Map<string, SummaryAccumulator>();
      for (const t of iterateOutcomes(flags.in, '--in', spacesOfRegistered, checkSpacesOfRegistered)) {
        all.add(t);
        let acc = byPolicy.get(t.policy);
        if (acc === undefined) {
          acc = new SummaryAccumulator();
          byPolicy.set(t.policy, acc);
        }
        acc.add(t);
      }
      const policies = Object.fromEntries([...byPolicy].map(([p, acc]) => [p, acc.result()]));
      if (flags.json) return json({ ...all.result(), policies });
      out(
        table([
          ['policy', 'episodes', 'success', 'mean turns', 'failures'],
          ...Object.entries(policies).map(([p, s]) => [
            p,
            s.episodes,
            fmt(s.success),
            fmt(s.meanTurns, 2),
            Object.entries(s.failures)
              .filter(([, n]) => n)
              .map(([k, n]) => `${k} ${n}`)
              .join(', '),
          ]),
        ]),
      );
    });
}
