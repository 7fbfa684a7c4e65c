import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import type { Trajectory } from '../../src/core/types.ts';
import { envConfig, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { JsonlWriter, readTrajectories } from '../../src/store/jsonl.ts';
import { RunStore } from '../../src/store/sqlite.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-store-'));
const tasks = makeTasks(envConfig('frozenlake', { map: '4x4', slippery: true }), 30, 0);
const batch = rollout({
  makeEnv,
  tasks,
  samples: 3,
  budget: 20,
  runSeed: 0,
  policy: makePolicy('oracle:eps=0.5', makeEnv(tasks[0]).spec),
}) as Trajectory[];

test('JSONL round trip is exact, including -inf log-probs', () => {
  const path = join(dir, 'a.jsonl');
  const w = new JsonlWriter(path);
  for (const t of batch) w.write(t);
  const odd = structuredClone(batch[0]);
  odd.turns[0].logp = Number.NEGATIVE_INFINITY;
  w.write(odd);
  w.close();
  const back = readTrajectories(path);
  assert.equal(back.length, batch.length + 1);
  assert.equal(JSON.stringify(back.slice(0, -1)), JSON.stringify(batch));
  assert.equal(back.at(-1)!.turns[0].logp, Number.NEGATIVE_INFINITY);
});

test('malformed files are refused naming file, line and field', () => {
  const path = join(dir, 'bad.jsonl');
  const good = JSON.stringify(batch[0]);
  writeFileSync(path, `${good}\n\n${good.replace('"budget":20', '"budget":-1')}\n`);
  assert.throws(
    () => readTrajectories(path),
    (e: unknown) => e instanceof InputError && /bad\.jsonl:3\.budget/.test(e.message),
  );
  writeFileSync(path, `${good}\n{not json\n`);
  assert.throws(() => readTrajectories(path), /bad\.jsonl:2: not valid JSON/);
  writeFileSync(path, '\n');
  assert.throws(() => readTrajectories(path), /holds no trajectories/);
  assert.throws(() => readTrajectories(join(dir, 'missing.jsonl')), /cannot read it \(ENOENT\)/);
  const lying = structuredClone(batch[0]);
  lying.outcome.turns += 1;
  writeFileSync(path, `${JSON.stringify(lying)}\n`);
  assert.throws(() => readTrajectories(path), /outcome\.turns/);
});

test('SQLite run store: WAL, round trip, no duplicates, truncation for resume', () => {
  const path = join(dir, 'runs.sqlite');
  const store = new RunStore(path);
  assert.equal(store.db.pragma('journal_mode', { simple: true }), 'wal');
  store.createRun('r1', 'rollout', { seed: 0 });
  assert.throws(() => store.createRun('r1', 'rollout', {}), /UNIQUE/);
  store.addTrajectories('r1', 0, batch.slice(0, 50), 1);
  store.addTrajectories('r1', 50, batch.slice(50), 2);
  assert.throws(() => store.addTrajectories('r1', 10, batch.slice(0, 1), 2), /UNIQUE/);
  assert.equal(store.trajectoryCount('r1'), batch.length);
  assert.equal(JSON.stringify(store.trajectories('r1')), JSON.stringify(batch));
  store.addMetrics('r1', 1, { 'rollout/success': 0.5, 'train/loss': Number.NaN });
  store.addMetrics('r1', 2, { 'rollout/success': 0.75 });
  assert.throws(() => store.addMetrics('r1', 2, { 'rollout/success': 0.7 }), /UNIQUE/);
  store.truncateAfter('r1', 1);
  assert.equal(store.trajectoryCount('r1'), 50);
  assert.deepEqual(store.metrics('r1'), [
    { iter: 1, key: 'rollout/success', value: 0.5 },
    { iter: 1, key: 'train/loss', value: null },
  ]);
  // Damage the file would carry unnoticed (SQLite has no content checksum): a key or a value changed.
  store.db
    .prepare("UPDATE metrics SET key = 'rollout/succesS' WHERE iter = 1 AND key = 'rollout/success'")
    .run();
  assert.throws(
    () => store.metrics('r1'),
    /: the metrics of iteration 1 do not match their checksum: the run store is damaged$/,
  );
  store.db
    .prepare(
      "UPDATE metrics SET key = 'rollout/success', value = 0.25 WHERE iter = 1 AND key = 'rollout/succesS'",
    )
    .run();
  assert.throws(() => store.metrics('r1'), /iteration 1 do not match their checksum/);
  store.db.prepare("UPDATE metrics SET value = 0.5 WHERE iter = 1 AND key = 'rollout/success'").run();
  assert.equal(store.metrics('r1').length, 2);
  // A store written before digests (none recorded) is read as it is.
  store.db.prepare('DELETE FROM metric_digests').run();
  store.db.prepare("UPDATE metrics SET value = 0.25 WHERE iter = 1 AND key = 'rollout/success'").run();
  assert.equal(store.metrics('r1')[0].value, 0.25);
  store.setStatus('r1', 'done');
  store.close();
  const again = new RunStore(path);
  assert.equal(again.run('r1')!.status, 'done');
  assert.deepEqual(again.run('r1')!.config, { seed: 0 });
  again.close();
  writeFileSync(join(dir, 'not.sqlite'), 'this is not a database at all, not even close'.repeat(20));
  assert.throws(() => new RunStore(join(dir, 'not.sqlite')), /--db: got .*cannot open as a SQLite run store/);
});
