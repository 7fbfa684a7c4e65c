// A verdict's figure prints what its test saw (issue 20): `ours` and its interval with as many decimals
// as it takes (at least 3) for every printed number to lie on the same side of the test's threshold as
// the number itself, and for none that is not 0 to print as 0 — in the terminal summary (and `study
// verdicts`) and in the HTML report. summary.json keeps the numbers themselves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Estimate } from '../../src/studies/budget/figures.ts';
import { runBudgetStudy } from '../../src/studies/budget/pipeline.ts';
import { renderBudgetReport } from '../../src/studies/budget/report/page.ts';
import { studySummary } from '../../src/studies/budget/study.ts';
import type { FindingId, StudyFinding } from '../../src/studies/budget/summary.ts';
import { findingLines, terminalSummary } from '../../src/studies/budget/terminal.ts';
import { frozenTrainer } from '../../src/studies/budget/trainer.ts';
import { TINY } from './fixtures.ts';

test('decisiveDigits: the fewest decimals (at least 3) that keep each number on its side of the threshold and off a false 0', async () => {
  const { decisiveDigits } = await import('../../src/studies/budget/format.ts');
  const { OURS_THRESHOLD, THRESHOLDS } = await import('../../src/studies/budget/findings.ts');
  assert.equal(decisiveDigits([0.123, 0.05, 0.2], 0), 3);
  // 3 decimals would print 0.000 [0.000, 0.001]: a lower end that seems to touch 0.
  assert.equal(decisiveDigits([0.0004, 0.0002, 0.0009], 0), 4);
  // 4 would print the upper end as 0.5000, on the threshold ½ it lies below.
  assert.equal(decisiveDigits([0.4996, 0.4991, 0.49996], 0.5), 5);
  assert.equal(decisiveDigits([1.2496, 1.2493, 1.24996], 1.25), 5);
  // An exact 0 prints as 0; -0.0004 must not print as 0.000.
  assert.equal(decisiveDigits([0, -0.0004, 0.0003], 0), 4);
  // A number exactly on the threshold prints on it.
  assert.equal(decisiveDigits([0.5, 0.4, 0.6], 0.5), 3);
  // Missing numbers decide nothing; a tiny one takes what it takes.
  assert.equal(decisiveDigits([null, 0.00002, null], 0), 5);
  assert.equal(decisiveDigits([3e-17, 2e-17, 4e-17], 0), 17);
  assert.equal(decisiveDigits([0.7, 0.6, 0.8], 0, 2), 2);
  // The threshold a figure keeps its side of is the one its verdict's test reads.
  assert.equal(OURS_THRESHOLD['normal-states'], 0.5);
  assert.equal(OURS_THRESHOLD['nll-plausible'], THRESHOLDS.nllRatio);
  assert.equal(OURS_THRESHOLD['rl-beats-base'], 0);
});

const finding = (id: FindingId, ours: Estimate, held: boolean): StudyFinding => ({
  id,
  world: 'slippery',
  claim: 'a claim',
  paper: 'a figure',
  ours,
  held,
  heldFraction: held ? 1 : 0,
  test: 'a test',
  note: '',
});

// Numbers the 3-decimal figure printed misleadingly, and one it printed well.
const CASES: [FindingId, Estimate, boolean, string][] = [
  ['rl-beats-base', { value: 0.0004, ci95: [0.0002, 0.0009] }, true, '0.0004 [0.0002, 0.0009]'],
  ['lead-shrinks', { value: 0.0002, ci95: [-0.0006, 0.0011] }, false, '0.0002 [-0.0006, 0.0011]'],
  ['normal-states', { value: 0.4996, ci95: [0.4991, 0.49996] }, true, '0.49960 [0.49910, 0.49996]'],
  ['nll-plausible', { value: 1.2496, ci95: [1.2493, 1.24996] }, true, '1.24960 [1.24930, 1.24996]'],
  ['error-contrast', { value: 0.123, ci95: [0.05, 0.2] }, true, '0.123 [0.050, 0.200]'],
];

test('the terminal findings (study budget, study verdicts) print each verdict figure with decisive digits', () => {
  const lines = findingLines(CASES.map(([id, ours, held]) => finding(id, ours, held)));
  for (const [id, , , text] of CASES) {
    const line = lines.find((l) => l.includes(` ${id} `))!;
    assert.ok(line.includes(`— ours ${text}; paper`), line);
  }
});

test('the HTML report and the terminal summary print the study’s verdict figures with decisive digits; summary.json is untouched', async () => {
  const run = (await runBudgetStudy(TINY, { trainer: frozenTrainer })).summary;
  const study = studySummary(
    { seeds: [3], worlds: ['slippery'], config: { profile: 'custom' } },
    [run],
    1,
    0,
  );
  for (const [id, ours] of CASES) {
    for (const fs of [study.findings, study.runs[0].findings]) fs.find((x) => x.id === id)!.ours = ours;
  }
  const json = JSON.stringify(study);
  const html = renderBudgetReport(study);
  const text = terminalSummary(study);
  for (const [, , , figure] of CASES) {
    // The study's findings table, the world comparison and the run's own findings table.
    assert.equal(html.split(figure).length - 1, 3, figure);
    assert.ok(text.includes(`ours ${figure};`), figure);
  }
  for (const wrong of ['0.000 [0.000, 0.001]', '0.000 [-0.001, 0.001]', '0.500 [0.499, 0.500]']) {
    assert.ok(!html.includes(wrong) && !text.includes(wrong), wrong);
  }
  assert.equal(JSON.stringify(study), json, 'rendering leaves the summary as it was');
  assert.deepEqual(
    study.findings.find((x) => x.id === 'rl-beats-base')!.ours,
    { value: 0.0004, ci95: [0.0002, 0.0009] },
    'summary.json stores the numbers, not their printed form',
  );
});
