// report.html of the language study: a pure function of its summary, self-contained (the report's own
// page, tables and badges; nothing fetched). The findings across seeds beside the paper's figures and
// the pre-registered predictions, then per world its design, Pass@(K,T) and the per-seed diagnostics.
// Every number shown is in summary.json.
import { keyValues, page, paragraph, section, table, verdict } from '../../report/index.ts';
import type { Est } from './measure.ts';
import type { LanguageStudySummary } from './study.ts';

const PAPER = 'Zhu et al. 2026, “What Does Multi-Turn Reinforcement Learning Really Improve in LLM Agents?”';

const withCi = (e: Est) =>
  e.value === null
    ? 'n/a'
    : `${e.value.toFixed(3)} [${e.ci95[0]?.toFixed(3) ?? 'n/a'}, ${e.ci95[1]?.toFixed(3) ?? 'n/a'}]`;
const word = (h: boolean | null) => (h === null ? 'undecided' : h ? 'held' : 'not held');

export function renderLanguageReport(s: LanguageStudySummary): string {
  const findings = section('Findings across seeds', [
    paragraph(
      `Each claim of ${PAPER}, tested on small transformers that read the env's text and write their actions and tool calls. A finding holds in a world when it held in more than half of the seeds that decided it; a seed leaves it undecided when its premise is not in the data (the reason is given). Beside ours: the paper's figure for that world where it reports one, else its general statement, and the prediction registered before the first full run.`,
    ),
    table(
      [
        'world',
        'finding',
        'paper',
        { label: 'ours (mean over seeds)', align: 'right' },
        'verdict',
        'per seed',
        'predicted',
      ],
      s.findings.map((f) => {
        const w = s.worlds.find((x) => x.id === f.world);
        return [
          f.world,
          f.id,
          f.paper,
          f.ours,
          { text: word(f.held), badge: verdict(f.held), title: f.reasons.join('; ') || undefined },
          f.perSeed.map((h) => (h === null ? '?' : h ? '+' : '−')).join(' '),
          w?.preRegistration.predictions[f.id] ?? '',
        ];
      }),
    ),
  ]);
  const worlds = s.worlds.map((w) => {
    const runs = s.runs.filter((r) => r.world === w.id);
    const perSeed = runs.map((r) => {
      const m = r.measurements;
      const rows = (['base', 'rl', 'budgetmix', 'baseTau'] as const).map((role) => [
        { base: 'base', rl: 'RL', budgetmix: 'BudgetMix', baseTau: `base at τ=${r.tau}` }[role],
        ...m.pass.of[role][0],
      ]);
      rows.push(['RL − base', ...m.pass.diff.rlBase[0].map((c) => withCi(c))]);
      return section(
        `Seed ${r.seed}`,
        [
          table(['Pass@(1,T)', ...m.pass.T.map((t) => `T=${t}`)], rows, {
            caption: `Pass@(1,T) on ${w.sizes.test} held-out tasks × ${w.sizes.samples} samples (RL − base: paired 95% interval over tasks)`,
          }),
          keyValues([
            [
              'invalid outputs (base, RL)',
              `${m.pass.invalid.base.toFixed(3)}, ${m.pass.invalid.rl.toFixed(3)}`,
            ],
            [
              `step quality (${m.stepQuality.signal}): RL’s win at normal states`,
              `${withCi(m.stepQuality.normal)} (${m.stepQuality.normal.states} states, ties ${m.stepQuality.normal.ties?.toFixed(3) ?? 'n/a'})`,
            ],
            [
              'at error states / pre-error states',
              `${withCi(m.stepQuality.error)} / ${withCi(m.stepQuality.preError)} (${m.stepQuality.errors.made} error states of ${m.stepQuality.errors.attempts} attempts)`,
            ],
            [
              'recovery: difference in differences',
              m.recovery === null ? 'no error states' : withCi(m.recovery.did),
            ],
            ['NLL ratio (base’s NLL of RL’s actions ÷ of its own)', withCi(m.likelihood.nllRatio)],
            [
              'NLL per token under the base: RL’s / its own',
              `${m.likelihood.perToken?.nllRlUnderBase?.toFixed(3) ?? 'n/a'} / ${m.likelihood.perToken?.nllBaseUnderBase?.toFixed(3) ?? 'n/a'}`,
            ],
            [
              'LLR of the base’s successes, per trajectory',
              `${withCi(m.likelihood.llrSuccessBase)} (${m.likelihood.successes.base} successes)`,
            ],
            ['LLR of RL’s successes, per trajectory', m.likelihood.llrSuccessRl?.toFixed(2) ?? 'n/a'],
            [
              'training curves: reward, step signal (last − first window)',
              `${withCi(m.curves.reward)}, ${withCi(m.curves.step)} (${m.curves.signal ?? 'no signal'})`,
            ],
          ]),
        ],
        { level: 3, id: `${w.id}-seed-${r.seed}` },
      );
    });
    return section(
      `World ${w.id}`,
      [
        paragraph(w.title),
        keyValues([
          ['expert (base cloned on it)', w.expert],
          ['training budget T, evaluation budgets', `${w.budget}; ${w.T.join(', ')}`],
          ['BudgetMix budgets', w.mix.join(', ')],
          ['step quality signal', w.step],
          ['errors forced', w.errors],
          ['pre-registered on', w.preRegistration.written],
        ]),
        paragraph(`Design (pre-registered): ${w.preRegistration.design}`),
        ...perSeed,
      ],
      { id: `world-${w.id}` },
    );
  });
  return page({
    title: 'The budget study with language agents',
    subtitle: `profile ${s.profile} · worlds ${s.worlds.map((w) => w.id).join(', ')} · seeds ${s.seeds.join(', ')} · ${s.seconds.toFixed(0)} s`,
    body: [
      findings,
      ...worlds,
      paragraph(
        'Every number here is in summary.json; `turnwise study verdicts --in summary.json` recomputes each verdict.',
      ),
    ],
  });
}
