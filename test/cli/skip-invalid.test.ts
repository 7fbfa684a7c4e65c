// summary --in and credit --in with --skip-invalid through the real CLI: bad lines skipped and counted
// (stderr, `skipped` in --json); without the flag, refused as before (exit 2, one line).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { turnwise } from './run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-skip-cli-'));
const clean = join(dir, 'clean.jsonl');
const bad = join(dir, 'bad.jsonl');

test('setup: a clean rollout file and the same with two bad lines', async () => {
  const r = await turnwise([
    ...['rollout', '--map', '4x4', '--slippery', '--policy', 'oracle', '--tasks', '2'],
    ...['--samples', '3', '--out', clean, '--json'],
  ]);
  assert.equal(r.code, 0, r.stderr);
  const good = readFileSync(clean, 'utf8').split('\n').filter(Boolean);
  const outside = good[1].replace(/"observation":\d+/, '"observation":1000');
  writeFileSync(bad, `${[good[0], outside, ...good.slice(1, 4), '[1,2', ...good.slice(4)].join('\n')}\n`);
});

test("summary --in: refused at line 2 without the flag; with it, the clean file's summary and the count", async () => {
  const refused = await turnwise(['summary', '--in', bad, '--json']);
  assert.equal(refused.code, 2);
  assert.equal(refused.stdout, '');
  assert.match(refused.stderr, /^turnwise: .*bad\.jsonl:2\.turns\.0\.observation: got 1000; [^\n]*\n$/);
  const [skip, ref] = await Promise.all([
    turnwise(['summary', '--in', bad, '--skip-invalid', '--json']),
    turnwise(['summary', '--in', clean, '--json']),
  ]);
  assert.equal(skip.code, 0, skip.stderr);
  const { skipped, ...rest } = JSON.parse(skip.stdout);
  assert.deepEqual(rest, JSON.parse(ref.stdout));
  assert.equal(rest.episodes, 6);
  assert.equal(skipped.count, 2);
  assert.equal(skipped.first.line, 2);
  assert.match(skipped.first.reason, /bad\.jsonl:2\.turns\.0\.observation: got 1000/);
  assert.match(
    skip.stderr,
    /^turnwise: skipped 2 invalid lines of .*bad\.jsonl; the first, line 2: [^\n]*\n$/,
  );
});

test("credit --in: refused without the flag; with it, the clean file's advantages and the count", async () => {
  const refused = await turnwise(['credit', '--in', bad, '--method', 'grpo']);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /^turnwise: .*bad\.jsonl:2\.turns\.0\.observation: got 1000; [^\n]*\n$/);
  const [skip, ref] = await Promise.all([
    turnwise(['credit', '--in', bad, '--method', 'grpo', '--skip-invalid', '--json']),
    turnwise(['credit', '--in', clean, '--method', 'grpo', '--json']),
  ]);
  assert.equal(skip.code, 0, skip.stderr);
  const { skipped, ...rest } = JSON.parse(skip.stdout);
  assert.deepEqual(rest, JSON.parse(ref.stdout));
  assert.equal(rest.advantages.length, 6);
  assert.deepEqual({ count: skipped.count, line: skipped.first.line }, { count: 2, line: 2 });
  assert.match(skipped.first.reason, /bad\.jsonl:2\.turns\.0\.observation/);
  const text = await turnwise(['credit', '--in', bad, '--method', 'grpo', '--skip-invalid']);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^grpo: 6 trajectories in 2 groups/);
  assert.match(text.stderr, /^turnwise: skipped 2 invalid lines of .*bad\.jsonl; the first, line 2: /);
});
