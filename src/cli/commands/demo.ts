// turnwise demo — what `npm start` runs until the budget study exists.
import type { Command } from 'commander';
import { budgetDemo, DEMO_DEFAULTS } from '../../studies/demo.ts';
import { fmt, json, out, table } from '../io.ts';
import { distinctIntList, int, seed } from '../options.ts';
import { ABOUT } from './about.ts';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description(ABOUT.demo.description)
    .option('--episodes <n>', 'episodes per policy and map', String(DEMO_DEFAULTS.episodes))
    .option('--T <list>', 'budgets, all different', DEMO_DEFAULTS.budgets.join(','))
    .option('--seed <n>', 'seed', '0')
    .option('--json', 'machine-readable output')
    .action((flags: { episodes: string; T: string; seed: string; json?: boolean }) => {
      const t0 = performance.now();
      const rows = budgetDemo({
        episodes: int('--episodes', flags.episodes, 1, 10_000_000),
        budgets: distinctIntList('--T', flags.T),
        seed: seed(flags.seed),
      });
      if (flags.json) return json({ rows, seconds: (performance.now() - t0) / 1000 });
      for (const map of [...new Set(rows.map((r) => r.map))]) {
        const mine = rows.filter((r) => r.map === map);
        out(`\nSlippery FrozenLake ${map}: success within T turns — measured (exact)`);
        const header = ['policy', ...mine[0].cells.map((c) => `T=${c.T}`)];
        out(
          table([
            header,
            ...mine.map((r) => [
              `${r.policy}${r.budgetAware ? ' *' : ''}`,
              ...r.cells.map((c) => `${fmt(c.success, 3)} (${fmt(c.exact, 3)})`),
            ]),
          ]),
        );
      }
      const n = int('--episodes', flags.episodes, 1);
      out(`\n${n} episodes per cell; * = budget-aware (sees the turns left, so it runs once per T).`);
      out(
        'Budget-blind policies run once at the largest T and read success within T off the first-success turn.',
      );
      out(`done in ${fmt((performance.now() - t0) / 1000, 1)} s`);
    });
}
