// turnwise summary --in f.jsonl — the summary of a trajectory file (validated line by line).
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { Trajectory } from '../../core/types.ts';
import { SummaryAccumulator } from '../../rollout/summary.ts';
import { SkippedLines } from '../../store/jsonl.ts';
import { iterateOutcomes } from '../../store/outcomes.ts';
import { fmt, json, out, table, warn } from '../io.ts';
import { checkSpacesOfRegistered, spacesOfRegistered } from '../options.ts';
import { ABOUT } from './about.ts';

export function registerSummary(program: Command): void {
  program
    .command('summary')
    .description(ABOUT.summary.description)
    .requiredOption('--in <file.jsonl>', 'trajectories, one JSON object per line')
    .option('--price <in,out>', 'dollars per million prompt and completion tokens, for the cost total')
    .option('--skip-invalid', SKIP_HELP)
    .option('--json', 'machine-readable output')
    .action((flags: { in: string; json?: boolean; price?: string; skipInvalid?: boolean }) => {
      const price = flags.price === undefined ? undefined : parsePrice(flags.price);
      const skipped = flags.skipInvalid ? new SkippedLines() : undefined;
      const tokens = { calls: 0, prompt: 0, completion: 0, cached: 0 };
      // One pass, one line in memory at a time: a per-policy accumulator and the overall one.
      const all = new SummaryAccumulator();
      const byPolicy = new Map<string, SummaryAccumulator>();
      const countTokens = (turns: Trajectory['turns']) => {
        for (const u of turns) {
          const usage = u.trace?.usage;
          if (usage === undefined) continue;
          tokens.calls++;
          tokens.prompt += usage.prompt;
          tokens.completion += usage.completion;
          tokens.cached += usage.cached ?? 0;
        }
      };
      for (const t of iterateOutcomes(
        flags.in,
        '--in',
        spacesOfRegistered,
        checkSpacesOfRegistered,
        countTokens,
        skipped,
      )) {
        all.add(t);
        let acc = byPolicy.get(t.policy);
        if (acc === undefined) {
          acc = new SummaryAccumulator();
          byPolicy.set(t.policy, acc);
        }
        acc.add(t);
      }
      const policies = Object.fromEntries([...byPolicy].map(([p, acc]) => [p, acc.result()]));
      // Token totals from the turns' traces (LLM policies, recorded harnesses); cost with --price.
      const cost =
        price === undefined ? null : (tokens.prompt * price[0] + tokens.completion * price[1]) / 1e6;
      if (skipped && skipped.count > 0) warn(skipped.note(flags.in));
      if (flags.json)
        return json({ ...all.result(), policies, tokens, cost, ...(skipped ? { skipped } : {}) });
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
      if (tokens.calls > 0) {
        out(
          `tokens: ${tokens.prompt} prompt (${tokens.cached} cached), ${tokens.completion} completion over ${tokens.calls} calls${cost === null ? '' : `; cost $${cost.toFixed(4)}`}`,
        );
      }
    });
}

export const SKIP_HELP =
  'skip (and count) lines that are malformed or outside their env spaces instead of refusing the file; the count and the first one go to stderr (and `skipped` in --json)';

/** `IN,OUT`: dollars per million prompt and completion tokens. */
function parsePrice(raw: string): [number, number] {
  const parts = raw.split(',').map((x) => Number(x.trim()));
  if (parts.length !== 2 || parts.some((x) => !Number.isFinite(x) || x < 0)) {
    throw new InputError('--price', raw, 'expected IN,OUT dollars per million tokens, e.g. 0.15,0.6');
  }
  return [parts[0], parts[1]];
}
