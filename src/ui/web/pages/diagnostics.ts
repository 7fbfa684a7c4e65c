/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The compare page's second half: what `turnwise compare` measures on the policies themselves — step
// quality at the same states, recovery from injected errors, likelihood ratios — for two runs that saved
// their policies (GET /api/compare/diagnostics: `turnwise compare`'s library call, on a worker thread,
// kept by the server). The page draws the recorded comparison first and this when it comes: "measuring…"
// until then, one line saying why when a run has no policy to measure. Every figure carries its place in
// the answer's report (data-figure) and its exact value (data-value), as the tables of `turnwise compare`
// print it (A − B where the command says A − B).
import { type Cell, keyValues, table } from '../../../report/index.ts';
import type { DiagnosticsAnswer } from '../api.ts';
import { attr, esc, fmt } from '../dom.ts';

type Report = NonNullable<DiagnosticsAnswer['report']>;

/** A figure: 4 decimals, as `turnwise compare` prints it; its path in the report and its value on the
 * element. */
const figureHtml = (path: string, x: number | null | undefined, digits = 4) =>
  `<span data-figure="${attr(path)}" data-value="${x ?? ''}">${esc(fmt(x, digits))}</span>`;

const figure = (path: string, x: number | null | undefined, digits = 4): Cell => ({
  html: figureHtml(path, x, digits),
});

const right = (label: string) => ({ label, align: 'right' as const });

function interval(path: string, ci: readonly [number, number] | null): Cell {
  if (ci === null) return { text: 'n/a' };
  return {
    html: `<span data-figure="${attr(path)}" data-value="${ci.join(',')}">[${esc(fmt(ci[0], 4))}, ${esc(fmt(ci[1], 4))}]</span>`,
  };
}

function stepQuality(r: Report, actions: number): string {
  if (r.stepQuality !== null) {
    const row = (kind: 'normal' | 'error'): Cell[] => {
      const q = r.stepQuality![kind];
      const p = `stepQuality.${kind}`;
      return [
        kind,
        figure(`${p}.states`, q.states, 0),
        figure(`${p}.aBetter`, q.aBetter),
        figure(`${p}.ties`, q.ties),
        figure(`${p}.bBetter`, q.bBetter),
        figure(`${p}.regretA`, q.regretA),
        figure(`${p}.regretB`, q.regretB),
        figure(`${p}.score`, q.score),
        figure(`${p}.exact.score`, q.exact?.score),
      ];
    };
    return `<h3>Step quality at the same states</h3>
<p class="muted">Each policy draws ${actions} actions at each state; every pair is scored by the exact Q*<sub>h</sub>(s,a), h = the turns left. Normal states come from both policies’ episodes, error states right after a forced bad action. “A better + ½ tie” is 0.5 when they step equally well; “(exact)” is its expectation from the policies’ distributions.</p>
${table(
  [
    'states',
    right('n'),
    right('A better'),
    right('tie'),
    right('B better'),
    right('regret A'),
    right('regret B'),
    right('A better + ½ tie'),
    right('(exact)'),
  ],
  [row('normal'), row('error')],
)}`;
  }
  if (r.stepProxy !== null) {
    const q = r.stepProxy;
    return `<h3>Step quality by the env’s per-turn proxy</h3>
<p class="muted">No exact oracle: ${actions} actions each at the same states, scored by info.${esc(q.field)}, over the pairs where both steps carry it. On their own episodes: mean proxy A ${esc(fmt(q.own.a, 4))} (${q.own.turnsA} turns), B ${esc(fmt(q.own.b, 4))} (${q.own.turnsB} turns).</p>
${table(
  [
    right('states'),
    right('scored pairs'),
    right('A better'),
    right('tie'),
    right('B better'),
    right('A better + ½ tie'),
    right('mean A'),
    right('mean B'),
  ],
  [
    [
      figure('stepProxy.states', q.states, 0),
      figure('stepProxy.scored', q.scored),
      figure('stepProxy.aBetter', q.aBetter),
      figure('stepProxy.ties', q.ties),
      figure('stepProxy.bBetter', q.bBetter),
      figure('stepProxy.score', q.score),
      figure('stepProxy.meanA', q.meanA),
      figure('stepProxy.meanB', q.meanB),
    ],
  ],
)}`;
  }
  return '<p class="muted">Step quality: the env has no exact oracle and its turns carry no quality proxy.</p>';
}

function recovery(r: Report): string {
  const rec = r.recovery;
  if (rec === null)
    return '<p class="muted">Recovery: the env has no exact oracle to pick bad actions with (not measured).</p>';
  const row = (side: 'a' | 'b'): Cell[] => [
    side.toUpperCase(),
    figure(`recovery.${side}.success`, rec[side].success),
    interval(`recovery.${side}.ci95`, rec[side].ci95),
    figure(`recovery.${side}.exact`, rec[side].exact),
  ];
  return `<h3>Recovery from error states</h3>
<p class="muted">Continuation success after a forced bad action: ${rec.states} error states × ${rec.continuations} continuations per policy, paired over the same states (${rec.attempts} forcing attempts: ${rec.terminal} ended the episode at once, ${rec.noBadAction} had no bad action).</p>
${table(
  ['policy', right('success'), right('95% interval'), right('exact')],
  [
    row('a'),
    row('b'),
    ['A − B', figure('recovery.diff', rec.diff), interval('recovery.diffCi95', rec.diffCi95), ''],
  ],
)}`;
}

function likelihood(r: Report): string {
  const l = r.likelihood;
  if (l === null)
    return '<p class="muted">Likelihood: a policy cannot score actions (no logProb or probs).</p>';
  const cell = (key: keyof typeof l.infinite, of: number): Cell => {
    const inf = l.infinite[key];
    return {
      html: `${figureHtml(`likelihood.${key}`, l[key])}${inf > 0 ? ` <span class="muted">(+${inf} of ${of} infinite)</span>` : ''}`,
    };
  };
  return `<h3>Likelihood</h3>
<p class="muted">Mean NLL per action under each policy; LLR = Σ<sub>t</sub> log π<sub>A</sub> − log π<sub>B</sub>, averaged over successful episodes. ${esc(l.note)}.</p>
${table(
  ['actions', right('under A'), right('under B'), right('LLR (successful)')],
  [
    [
      `A’s (${l.actions.a})`,
      cell('nllAunderA', l.actions.a),
      cell('nllAunderB', l.actions.a),
      cell('llrSuccessA', l.successful.a),
    ],
    [
      `B’s (${l.actions.b})`,
      cell('nllBunderA', l.actions.b),
      cell('nllBunderB', l.actions.b),
      cell('llrSuccessB', l.successful.b),
    ],
  ],
)}`;
}

/** The sizes and where the figures come from, in words. */
function provenance(d: DiagnosticsAnswer): string {
  const p = d.params!;
  const env = `${p.env.env} ${JSON.stringify(p.env.params)}`;
  const command = `turnwise compare --a A --b B --tasks ${p.tasks} --samples ${p.samples} --K ${p.K.join(',')} --T ${p.T.join(',')} --states ${p.states} --actions ${p.actions} --continuations ${p.continuations} --seed ${p.seed}`;
  return keyValues([
    ['policies', `A ${d.a}, B ${d.b}: the policies the runs saved (a training run’s latest checkpoint)`],
    [
      'episodes',
      `fresh, on ${env}: ${p.tasks} tasks (seeds ${p.seed}–${p.seed + p.tasks - 1}) × ${p.samples} samples at T = ${p.T.join(', ')}`,
    ],
    [
      'states',
      `${p.states} normal and ${p.states} error states, ${p.actions} actions each, ${p.continuations} continuations`,
    ],
    ['same as', `${command} (with the runs’ env), by its own code`],
    ['took', `${fmt(d.seconds, 1)} s (kept by the server until it stops)`],
  ]);
}

/** The section's markup for an answer. */
export function diagnosticsView(d: DiagnosticsAnswer): string {
  if (!d.available || d.report === null)
    return `<p class="muted" id="diagnostics-note">Step quality, recovery and likelihood: not measured — ${esc(d.reason ?? 'no reason given')}.</p>`;
  const r = d.report;
  const pass = r.passKT;
  const last = pass.a.T.length - 1;
  return `${provenance(d)}
${stepQuality(r, d.params!.actions)}
${recovery(r)}
${likelihood(r)}
<p class="muted">Pass@(1,${pass.a.T[last]}) on these episodes: A ${figureHtml(`passKT.a.passKT.0.${last}`, pass.a.passKT[0][last])}, B ${figureHtml(`passKT.b.passKT.0.${last}`, pass.b.passKT[0][last])}.</p>`;
}

/** What the section shows while the server measures. */
export function measuringView(): string {
  return '<p class="muted" id="diagnostics-note">Measuring the saved policies (step quality, recovery, likelihood)…</p>';
}
