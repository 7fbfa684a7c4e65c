// The run-directory lock: exclusive among racing processes, taken over from a dead process, refused
// (naming the holder) while its process lives, released only by its owner.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { InputError } from '../../src/core/errors.ts';
import { DirLock, LOCK_FILE } from '../../src/store/lock.ts';

const HOLDER = fileURLToPath(new URL('./fixtures/lock-holder.ts', import.meta.url));

test('one process at a time: a second acquire is refused naming the holder; release frees it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-lock-'));
  const a = DirLock.acquire(dir, '--out');
  assert.throws(
    () => DirLock.acquire(dir, '--out'),
    (e: unknown) =>
      e instanceof InputError && new RegExp(`in use by process ${process.pid} on `).test(e.message),
  );
  a.release();
  a.release(); // idempotent
  assert.equal(existsSync(join(dir, LOCK_FILE)), false);
  DirLock.acquire(dir, '--out').release();
});

test('a stale lock (its process is dead) or an unreadable one is taken over', () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-lock-'));
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  const pid = Number(dead.stdout.toString());
  writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid, host: hostname(), started: 'then' }));
  const b = DirLock.acquire(dir, '--resume');
  assert.equal(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')).pid, process.pid);
  b.release();
  writeFileSync(join(dir, LOCK_FILE), '');
  DirLock.acquire(dir, '--resume').release();
  // A lock held by a live process on another host is never taken over.
  writeFileSync(join(dir, LOCK_FILE), JSON.stringify({ pid: 1, host: 'elsewhere', started: 'now' }));
  assert.throws(() => DirLock.acquire(dir, '--resume'), /in use by process 1 on elsewhere/);
});

test('racing processes: exactly one of eight gets the lock', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-lock-'));
  const children = Array.from({ length: 8 }, () =>
    spawn(process.execPath, ['--import', 'tsx', HOLDER, dir], { stdio: ['pipe', 'pipe', 'inherit'] }),
  );
  const exited = children.map((c) => new Promise((resolve) => c.on('exit', resolve)));
  const said = await Promise.all(
    children.map(
      (c) =>
        new Promise<string>((resolve) => {
          let out = '';
          c.stdout.on('data', (d) => {
            out += d;
            if (out.includes('\n')) resolve(out.trim());
          });
        }),
    ),
  );
  for (const c of children) c.stdin.end();
  await Promise.all(exited);
  assert.equal(said.filter((s) => s === 'got').length, 1, said.join('\n'));
  assert.ok(said.filter((s) => s.startsWith('refused')).every((s) => /in use by process \d+/.test(s)));
  assert.equal(existsSync(join(dir, LOCK_FILE)), false);
});
