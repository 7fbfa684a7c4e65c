// turnwise summary --in f.jsonl — the summary of a trajectory file (validated line by line).
import type { Command } from 'commander';
import { summarize } from '../../rollout/summary.ts';
import { readTrajectories } from '../../store/jsonl.ts';
import { fmt, json, out, table } from '../io.ts';

export function registerSummary(program: Command): void {
  program
    .command('summary')
    .description('success rate, turns and failure kinds of a trajectory JSONL file')
    .requiredOption('--in <file.jsonl>', 'trajectories, one JSON object per line')
    .option('--json', 'machine-readable output')
    .action((flags: { in: string; json?: boolean }) => {
      const trajectories = readTrajectories(flags.in);
      const byPolicy = new Map<string, typeof trajectories>();
      for (const t of trajectories) byPolicy.set(t.policy, [...(byPolicy.get(t.policy) ?? []), t]);
      const policies = Object.fromEntries([...byPolicy].map(([p, ts]) => [p, summarize(ts)]));
      const all = summarize(trajectories);
      if (flags.json) return json({ ...all, policies });
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
