// Two outputs of one command that are one file: refused before anything is written (found by trying
// `rollout --out F --db F`, which left F a SQLite store and the trajectories gone).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { checkDistinctOutputs } from '../../src/store/paths.ts';
import { inProcess } from '../cli/run.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-outputs-'));

test('checkDistinctOutputs: the same path (spelled two ways) or a link to it is refused; distinct paths pass', () => {
  const a = join(dir, 'a.x');
  assert.throws(
    () =>
      checkDistinctOutputs([
        ['--out', a],
        ['--db', join(dir, '.', 'a.x')],
      ]),
    (e: unknown) =>
      e instanceof InputError && /--db: got .*a\.x"; is also the file --out writes/.test(e.message),
  );
  writeFileSync(a, '');
  const link = join(dir, 'link.x');
  symlinkSync(a, link);
  assert.throws(
    () =>
      checkDistinctOutputs([
        ['--out', a],
        ['--db', link],
      ]),
    (e: unknown) => e instanceof InputError && /by a link/.test(e.message),
  );
  checkDistinctOutputs([
    ['--out', a],
    ['--db', join(dir, 'b.x')],
    ['--x', undefined],
  ]);
});

test('rollout --out F --db F: refused (exit 2, one line), and nothing written', async () => {
  const r = await inProcess(
    ['rollout', '--tasks', '2', '--budget', '5', '--policy', 'random', '--out', 'same.x', '--db', 'same.x'],
    dir,
  );
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.equal(
    r.stderr,
    'turnwise: --db: got "same.x"; is also the file --out writes: one would replace the other; give two paths\n',
  );
  assert.equal(existsSync(join(dir, 'same.x')), false);
});
