// The budget study's own cost per profile — behaviour cloning, evaluation, diagnostics — without RL
// training, which belongs to the injected trainer (issue 6). The trainer here is the null control
// (`frozenTrainer`: no update), whose time is left out of `study`. Prints one JSON object;
// machine-dependent, never asserted in tests.
//   node --import tsx bench/study-budget.ts [--profile quick|default|full] [--seed N] [--world slippery|narrow]
import { profileConfig, worldConfig } from '../src/studies/budget/config.ts';
import { runBudgetStudy } from '../src/studies/budget/pipeline.ts';
import { frozenTrainer } from '../src/studies/budget/trainer.ts';
import { benchArgs } from './args.ts';

const { values } = benchArgs('bench/study-budget.ts', {
  options: {
    profile: { type: 'string', default: 'quick' },
    seed: { type: 'string', default: '0' },
    world: { type: 'string', default: 'slippery' },
  },
});
const seed = Number(values.seed);
const config = worldConfig(profileConfig(values.profile!, seed), values.world as 'slippery' | 'narrow', seed);
const { summary } = await runBudgetStudy(config, { trainer: frozenTrainer });
const t = summary.timings;
const round = (x: number | undefined) => (x === undefined ? null : Math.round(x * 100) / 100);
process.stdout.write(
  `${JSON.stringify({
    profile: config.profile,
    world: config.world,
    seconds: {
      bc: round(t.bc),
      evaluation: round(t.evaluation),
      diagnostics: round(t.diagnostics),
      study: round(t.study),
      plan: config.timePlan.study,
    },
    maxRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
  })}\n`,
);
