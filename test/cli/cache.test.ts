// The replay cache (--cache FILE.sqlite): a served run recorded, then replayed with the server up (zero
// requests reach it) and with it stopped (the same trajectories byte for byte); a run killed with
// kill -9 and rerun repeats no request that had completed; bad caches are one line, exit 2. A counting
// proxy in front of `turnwise serve` sees every request and the cache key of every chat body.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { requestKey } from '../../src/policies/openai.ts';
import { startServe } from '../fixtures/serve-process.ts';
import { firstSpawned, turnwise } from './run.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));

/** A proxy to `upstream` (…/v1) that counts requests, and chat requests per cache key. */
async function countingProxy(upstream: string) {
  const counts = { requests: 0, keys: new Map<string, number>() };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      counts.requests++;
      const body = Buffer.concat(chunks).toString('utf8');
      if (req.method === 'POST' && req.url?.endsWith('/chat/completions')) {
        const key = requestKey(JSON.parse(body));
        counts.keys.set(key, (counts.keys.get(key) ?? 0) + 1);
      }
      try {
        const r = await fetch(upstream.replace(/\/v1$/, '') + (req.url ?? ''), {
          method: req.method,
          headers: { 'content-type': 'application/json' },
          body: req.method === 'POST' ? body : undefined,
        });
        const text = await r.text();
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
        res.end(text);
      } catch {
        res.writeHead(502).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  const close = () => new Promise((resolve) => server.close(resolve));
  return { url, counts, close };
}

/** The keys of the chat responses a cache file holds (read-only; the writer may still be running). */
function cachedKeys(file: string): string[] {
  if (!existsSync(file)) return [];
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return (db.prepare("SELECT key FROM responses WHERE key LIKE 'chat:%'").all() as { key: string }[]).map(
        (r) => r.key,
      );
    } finally {
      db.close();
    }
  } catch {
    return []; // not created yet
  }
}

const essence = (file: string) =>
  readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => {
      const t = JSON.parse(l);
      return JSON.stringify([
        t.id,
        t.turns.map((u: Record<string, unknown>) => [u.observation, u.action, u.logp, u.info]),
        t.outcome,
      ]);
    });

test('a recorded run replays with zero requests (server up), then byte for byte with the server stopped', async () => {
  const serve = startServe(['--policy', 'oracle:eps=0.2', '--slippery', '--faults', '429=0.1,seed=3']);
  const proxy = await countingProxy(await serve.ready);
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-cache-'));
  const cache = join(dir, 'c.sqlite');
  const run = (out: string) =>
    turnwise([
      'rollout',
      '--slippery',
      '--tasks',
      '3',
      '--samples',
      '2',
      '--budget',
      '20',
      '--seed',
      '4',
      '--policy',
      `openai:${proxy.url}#oracle,backoff=1ms`,
      '--cache',
      cache,
      '--out',
      join(dir, out),
    ]);
  const first = await run('a.jsonl');
  assert.equal(first.code, 0, first.stderr);
  const recorded = proxy.counts.requests;
  assert.ok(recorded > 6, `the first run went to the server (${recorded} requests)`);
  assert.equal(cachedKeys(cache).length, proxy.counts.keys.size, 'one row per distinct completed request');

  const second = await run('b.jsonl');
  assert.equal(second.code, 0, second.stderr);
  assert.equal(proxy.counts.requests, recorded, 'the replay made no HTTP request');

  await proxy.close();
  serve.child.kill('SIGTERM');
  assert.equal(await serve.exited, 0);
  const third = await run('c.jsonl');
  assert.equal(third.code, 0, third.stderr);
  const a = readFileSync(join(dir, 'a.jsonl'));
  assert.ok(a.equals(readFileSync(join(dir, 'b.jsonl'))), 'replay (server up) is byte-identical');
  assert.ok(a.equals(readFileSync(join(dir, 'c.jsonl'))), 'replay (server down) is byte-identical');
});

test('kill -9 mid-run, rerun with the cache: no completed request is repeated, the result is the same', async () => {
  const serve = startServe(['--policy', 'oracle:eps=0.2', '--slippery', '--latency', '10ms']);
  const proxy = await countingProxy(await serve.ready);
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-cache-'));
  const cache = join(dir, 'c.sqlite');
  const common = [
    'rollout',
    '--slippery',
    '--tasks',
    '12',
    '--samples',
    '2',
    '--budget',
    '20',
    '--seed',
    '9',
  ];
  const args = [...common, '--policy', `openai:${proxy.url}#oracle,concurrency=4`, '--cache', cache];
  const child = spawn(process.execPath, [BIN, ...args, '--out', join(dir, 'killed.jsonl')], {
    env: { ...process.env, NO_COLOR: '1' },
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_c, s) => resolve(s)));
  const N = 20;
  // Poll the file's row count (a condition, not a delay), then kill -9.
  await new Promise<void>((resolve, reject) => {
    const poll = setInterval(() => {
      if (cachedKeys(cache).length >= N) {
        clearInterval(poll);
        child.kill('SIGKILL');
        resolve();
      }
    }, 5);
    child.on('close', () => {
      clearInterval(poll);
      reject(new Error('the run finished before it was killed'));
    });
  });
  assert.equal(await exited, 'SIGKILL');
  const before = new Set(cachedKeys(cache));
  assert.ok(before.size >= N);
  proxy.counts.keys.clear();

  const rerun = await turnwise([...args, '--out', join(dir, 'rerun.jsonl')]);
  assert.equal(rerun.code, 0, rerun.stderr);
  const repeated = [...proxy.counts.keys.keys()].filter((k) => before.has(k));
  assert.deepEqual(repeated, [], 'no request whose response was cached went to the server again');
  assert.ok(proxy.counts.keys.size > 0, 'the rest of the run did go to the server');

  const local = await turnwise([...common, '--policy', 'oracle:eps=0.2', '--out', join(dir, 'local.jsonl')]);
  assert.equal(local.code, 0, local.stderr);
  assert.deepEqual(essence(join(dir, 'rerun.jsonl')), essence(join(dir, 'local.jsonl')));
  await proxy.close();
  serve.child.kill('SIGTERM');
  assert.equal(await serve.exited, 0);
});

test('bad caches: another model, an unreadable path, not a database, no openai: policy → one line, exit 2', async () => {
  const serve = startServe(['--policy', 'oracle']);
  const url = await serve.ready;
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-cache-'));
  const cache = join(dir, 'c.sqlite');
  const ok = await turnwise([
    'rollout',
    '--episodes',
    '2',
    '--policy',
    `openai:${url}#oracle`,
    '--cache',
    cache,
  ]);
  assert.equal(ok.code, 0, ok.stderr);
  writeFileSync(join(dir, 'text.sqlite'), 'not a database\n');
  const cases: [string[], RegExp][] = [
    [
      ['rollout', '--episodes', '2', '--policy', `openai:${url}#gpt-4`, '--cache', cache],
      /--cache: got ".*c\.sqlite"; a replay cache of oracle, not of gpt-4/,
    ],
    [
      [
        'eval',
        '--tasks',
        '2',
        '--policy',
        `openai:${url}#oracle`,
        '--cache',
        join(dir, 'no', 'such', 'c.sqlite'),
      ],
      /--cache: got .*; cannot open as a replay cache/,
    ],
    [
      ['rollout', '--episodes', '2', '--policy', `openai:${url}#oracle`, '--cache', join(dir, 'text.sqlite')],
      /--cache: .*file is not a database/,
    ],
    [
      ['rollout', '--episodes', '2', '--policy', 'oracle', '--cache', cache],
      /--cache: .*only openai: policies make requests/,
    ],
  ];
  for (const [i, [args, re]] of cases.entries()) {
    const r = await firstSpawned(i, args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, re);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  }
  serve.child.kill('SIGTERM');
  assert.equal(await serve.exited, 0);
});
