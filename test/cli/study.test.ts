// `turnwise study budget` and `turnwise report RUN`: refusals are one line with exit code 2 (through
// the real CLI); the quick profile end to end (in-process, with the null-control trainer: the CLI's
// GRPO run is tested in test/studies/budget.test.ts) writes its files; `report` re-renders the very page the study wrote.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { studyBudget } from '../../src/cli/commands/study.ts';
import { envConfig, envSpec, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { renderBudgetReport } from '../../src/studies/budget/report/page.ts';
import { parseSummary } from '../../src/studies/budget/summary.ts';
import { frozenTrainer } from '../../src/studies/budget/trainer.ts';
import { inProcess, turnwise } from './run.ts';

const oneLine = (stderr: string) => stderr.trim().split('\n').length === 1;

test('study budget: bad flags are refused in one line with exit code 2', async () => {
  // In the shared worker: the test below sees a real process refuse (runs/ a file) in exactly one line.
  const [profile, seed] = await Promise.all([
    inProcess(['study', 'budget', '--profile', 'huge']),
    inProcess(['study', 'budget', '--profile', 'quick', '--seed', 'x']),
  ]);
  assert.equal(profile.code, 2);
  assert.equal(profile.stderr, 'turnwise: --profile: got "huge"; expected one of: quick, default, full\n');
  assert.equal(seed.code, 2);
  assert.ok(oneLine(seed.stderr) && /--seed/.test(seed.stderr), seed.stderr);
  assert.equal(profile.stdout + seed.stdout, '');
});

test('study budget --help says where the run goes without --out, and the command writes exactly there', async () => {
  const help = await turnwise(['study', 'budget', '--help']);
  assert.equal(help.code, 0, help.stderr);
  const text = help.stdout.replace(/\s+/g, ' ');
  assert.ok(
    text.includes(
      '--out <dir> run directory (default: runs/budget-<profile> in the current directory, whose summary.json, report.html and policies each run overwrites); an --out that already holds a summary.json is refused without --force',
    ),
    text,
  );
  // Without --out the command takes runs/budget-<profile> of the current directory: where `runs` is a
  // file, it names that very folder in its one-line refusal, before any work.
  const cwd = mkdtempSync(join(tmpdir(), 'turnwise-study-cwd-'));
  writeFileSync(join(cwd, 'runs'), '');
  const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const bin = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
    execFile(
      process.execPath,
      [bin, 'study', 'budget', '--profile', 'quick'],
      { cwd },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== 'number') reject(error);
        else resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
      },
    );
  });
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    `turnwise: --out: got "runs/budget-quick"; ${join(realpathSync(cwd), 'runs')} is a file, not a directory\n`,
  );
  assert.equal(r.stdout, '');
});

test('study budget --profile quick with a stand-in trainer writes summary, report and loadable policies; report RUN re-renders; bad files are one-line errors', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-study-'));
  const run = join(dir, 'run');
  // The command in-process with the null-control trainer (fast; the real trainer is tested elsewhere).
  let stdout = '';
  const write = { out: process.stdout.write, err: process.stderr.write };
  let stderr = '';
  process.stdout.write = ((chunk: string) => {
    stdout += chunk;
    return true;
  }) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string) => {
    stderr += chunk;
    return true;
  }) as typeof process.stderr.write;
  try {
    await studyBudget({ profile: 'quick', out: run, seed: '1' }, frozenTrainer);
  } finally {
    process.stdout.write = write.out;
    process.stderr.write = write.err;
  }
  assert.match(stdout, /^Budget study — profile quick: .*; worlds slippery, narrow; seeds 1\n/);
  assert.ok(stdout.endsWith(`report: ${join(run, 'report.html')}\n`), stdout.slice(-200));
  // Progress names the world and the seed of each run.
  for (const w of ['slippery', 'narrow'])
    assert.match(
      stderr,
      new RegExp(`${w} seed 1: behaviour cloning of oracle:temp=0\\.02,horizon=20 on 1000 training maps`),
    );
  const summary = parseSummary(readFileSync(join(run, 'summary.json'), 'utf8'), 'summary.json');
  assert.equal(summary.profile, 'quick');
  assert.deepEqual(summary.seeds, [1]);
  assert.deepEqual(
    summary.runs.map((r) => [r.world, r.config.seed, r.config.profile]),
    [
      ['slippery', 1, 'quick'],
      ['narrow', 1, 'quick'],
    ],
  );
  const page = readFileSync(join(run, 'report.html'), 'utf8');
  assert.equal(page, renderBudgetReport(summary));
  const spec = envSpec(
    makeTasks(envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true }), 1, 0)[0],
  );
  for (const [world, s] of [
    ['slippery', spec],
    ['narrow', { ...spec, observations: 9 * 16, features: 3 * 16 + 9 }],
  ] as const) {
    for (const name of ['base', 'rl', 'budgetmix']) {
      const policy = makePolicy(join(run, 'policies', `${world}-1`, `${name}.safetensors`), s);
      assert.equal(policy.budgetAware, false, name);
    }
  }

  // report RUN: the same page again, from summary.json alone.
  writeFileSync(join(run, 'report.html'), '');
  const ok = await turnwise(['report', run]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, `wrote ${join(run, 'report.html')}\n`);
  assert.equal(readFileSync(join(run, 'report.html'), 'utf8'), page);

  const bad = (name: string, content?: string) => {
    const d = join(dir, name);
    mkdirSync(d);
    if (content !== undefined) writeFileSync(join(d, 'summary.json'), content);
    return d;
  };
  const broken = structuredClone(summary) as unknown as { runs: { passKT: { rl: { K: unknown } } }[] };
  broken.runs[0].passKT.rl.K = 'many';
  const cases = await Promise.all([
    inProcess(['report', join(dir, 'nowhere')]),
    inProcess(['report', bad('empty')]),
    inProcess(['report', bad('notjson', '{"study": "budget", ')]),
    inProcess(['report', bad('other', '{"study": "credit"}')]),
    inProcess(['report', bad('broken', JSON.stringify(broken))]),
  ]);
  const expected = [
    /no such run directory/,
    /summary\.json: missing/,
    /summary\.json: not valid JSON/,
    /summary\.json study: got "credit"; expected "budget"/,
    /summary\.json\.runs\.0\.passKT\.rl\.K: got "many"/,
  ];
  cases.forEach((r, i) => {
    assert.equal(r.code, 2, r.stderr);
    assert.ok(oneLine(r.stderr), r.stderr);
    assert.match(r.stderr, expected[i]);
    assert.equal(r.stdout, '');
  });
});
