// `turnwise study budget` and `turnwise report RUN` through the real CLI: refusals are one line with
// exit code 2; `report` re-renders a run's page from its summary.json, the same page the study wrote.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runBudgetStudy } from '../../src/studies/budget/pipeline.ts';
import { renderBudgetReport } from '../../src/studies/budget/report.ts';
import { frozenTrainer } from '../../src/studies/budget/trainer.ts';
import { TINY } from '../studies/fixtures.ts';
import { turnwise } from './run.ts';

const oneLine = (stderr: string) => stderr.trim().split('\n').length === 1;

test('study budget: bad flags are refused in one line with exit code 2', async () => {
  const [profile, seed] = await Promise.all([
    turnwise(['study', 'budget', '--profile', 'huge']),
    turnwise(['study', 'budget', '--profile', 'quick', '--seed', 'x']),
  ]);
  assert.equal(profile.code, 2);
  assert.equal(profile.stderr, 'turnwise: --profile: got "huge"; expected one of: quick, default, full\n');
  assert.equal(seed.code, 2);
  assert.ok(oneLine(seed.stderr) && /--seed/.test(seed.stderr), seed.stderr);
  assert.equal(profile.stdout + seed.stdout, '');
});

test('report RUN: re-renders report.html from summary.json; missing or malformed files are one-line errors', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-study-'));
  const { summary } = await runBudgetStudy(TINY, { trainer: frozenTrainer });
  const run = join(dir, 'run');
  mkdirSync(run);
  writeFileSync(join(run, 'summary.json'), JSON.stringify(summary, null, 2));
  const ok = await turnwise(['report', run]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, `wrote ${join(run, 'report.html')}\n`);
  assert.equal(readFileSync(join(run, 'report.html'), 'utf8'), renderBudgetReport(summary));

  const bad = (name: string, content?: string) => {
    const d = join(dir, name);
    mkdirSync(d);
    if (content !== undefined) writeFileSync(join(d, 'summary.json'), content);
    return d;
  };
  const broken = structuredClone(summary) as unknown as { passKT: { rl: { K: unknown } } };
  broken.passKT.rl.K = 'many';
  const cases = await Promise.all([
    turnwise(['report', join(dir, 'nowhere')]),
    turnwise(['report', bad('empty')]),
    turnwise(['report', bad('notjson', '{"study": "budget", ')]),
    turnwise(['report', bad('other', '{"study": "credit"}')]),
    turnwise(['report', bad('broken', JSON.stringify(broken))]),
  ]);
  const expected = [
    /no such run directory/,
    /summary\.json: missing/,
    /summary\.json: not valid JSON/,
    /summary\.json study: got "credit"; expected "budget"/,
    /summary\.json\.passKT\.rl\.K: got "many"/,
  ];
  cases.forEach((r, i) => {
    assert.equal(r.code, 2, r.stderr);
    assert.ok(oneLine(r.stderr), r.stderr);
    assert.match(r.stderr, expected[i]);
    assert.equal(r.stdout, '');
  });
});
