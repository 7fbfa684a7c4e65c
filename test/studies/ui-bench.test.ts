// `turnwise bench ui` at a tiny size: the JSON it prints has the shape docs/benchmarks.md documents,
// the run it generated (kept with --dir) is what it says (turns, trajectories, the same run in the file
// and the store), and its check of every timed answer against the whole file is live — a server whose
// credit is off by one ulp makes it fail. Timings are printed, never asserted.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { spacesOfRegistered } from '../../src/cli/options.ts';
import { RunStore } from '../../src/store/sqlite.ts';
import { creditOfFile } from '../../src/studies/credit-file.ts';
import { UI_BENCH, uiBench } from '../../src/studies/ui-bench.ts';
import type { CreditOf } from '../../src/ui/credit.ts';
import { turnwise } from '../cli/run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-bench-ui-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const isMs = (x: unknown) => typeof x === 'number' && Number.isFinite(x) && x >= 0;

test('bench ui --json: the documented shape, the run it says, every answer checked', async () => {
  const kept = join(dir, 'kept');
  const r = await turnwise([
    'bench',
    'ui',
    '--turns',
    '3000',
    '--opens',
    '6',
    '--seed',
    '2',
    '--dir',
    kept,
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  const b = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(b), ['run', 'file', 'store', 'reference', 'checked', 'goalMs']);
  const lines = readFileSync(join(kept, 'run.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const turns = lines.reduce((s, t) => s + t.turns.length, 0);
  assert.ok(b.run.turns >= 3000);
  assert.deepEqual(
    [b.run.trajectories, b.run.turns, b.run.policy, b.run.budget, b.run.samples, b.run.seed],
    [lines.length, turns, 'oracle:eps=0.2', 100, 8, 2],
  );
  assert.deepEqual(b.run.env, { env: 'frozenlake', params: { map: '8x8', slippery: true } });
  assert.ok(lines.every((t) => t.task.params.map === '8x8' && t.policy === 'oracle:eps=0.2'));
  // The store holds the same run, row for row.
  const store = new RunStore(join(kept, 'store.sqlite'), 'run', true);
  try {
    assert.deepEqual(
      store.trajectories('bench').map((t) => t.id),
      lines.map((t) => t.id),
    );
  } finally {
    store.close();
  }
  for (const k of ['file', 'store'] as const) {
    const f = b[k];
    assert.ok(isMs(f.firstPage.coldMs));
    assert.equal(f.firstPage.warm.n, UI_BENCH.rounds);
    assert.equal(f.open.credit, 'grpo,exact');
    assert.ok(isMs(f.open.firstMs));
    assert.equal(f.open.rest.n, 5);
    for (const s of [f.firstPage.warm, f.open.rest])
      assert.ok(isMs(s.medianMs) && s.medianMs <= s.p90Ms && s.p90Ms <= s.maxMs, JSON.stringify(s));
    assert.ok(f.indexBytes > 0);
  }
  assert.equal(b.file.bytesPerTurn, b.file.indexBytes / turns);
  assert.ok(b.file.heapBytes > 0);
  assert.equal(b.reference.roundTrip.n, UI_BENCH.rounds);
  assert.ok(isMs(b.reference.wholeFileReadMs));
  assert.deepEqual(Object.keys(b.reference.wholeFileCreditMs), ['grpo', 'exact']);
  // Two runs (file, store): a first page each, 6 trajectories each, 2 credit columns each.
  assert.deepEqual(b.checked, {
    pageRows: 2 * Math.min(UI_BENCH.limit, lines.length),
    trajectories: 12,
    creditColumns: 24,
  });
  assert.equal(b.goalMs, 300);
});

test('bench ui fails on a wrong answer: a server whose grpo column is off by one ulp', async () => {
  const off: CreditOf = (source, spec) => {
    const c = creditOfFile(source, spec);
    return {
      *rows() {
        for (const row of c.rows())
          yield spec.label === 'grpo' ? row.map((a) => a + Number.EPSILON * Math.max(1, Math.abs(a))) : row;
      },
    };
  };
  // The server credits with `off`; the check credits the whole file with `off` too, so both agree...
  const same = await uiBench({
    turns: 500,
    opens: 2,
    seed: 0,
    dir: join(dir, 'a'),
    credit: off,
    spacesOf: spacesOfRegistered,
  });
  assert.equal(same.checked.creditColumns, 8);
  // ...and a server that differs from the whole-file credit is caught.
  let calls = 0;
  const firstRequestOff: CreditOf = (source, spec) =>
    calls++ === 0 ? off(source, spec) : creditOfFile(source, spec);
  await assert.rejects(
    uiBench({
      turns: 500,
      opens: 2,
      seed: 0,
      dir: join(dir, 'b'),
      credit: firstRequestOff,
      spacesOf: spacesOfRegistered,
    }),
    /^Error: bench ui: a wrong answer: run\.jsonl credit grpo of trajectory \d+$/,
  );
});
