// Real trajectory files for the export tests: FrozenLake rolled out by the openai policy against
// `turnwise serve` through a proxy that keeps every request (what the model was sent), and sql episodes
// of examples/sql-agent.ts recorded by `turnwise harness run`; and DuckDB, a reader of their Parquet.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { after } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { turnwise } from '../cli/run.ts';
import { startServe } from '../fixtures/serve-process.ts';

export const readJsonl = <T>(path: string): T[] =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as T);

export type Msg = Record<string, unknown> & { role: string };
export interface ChatRequest {
  messages: Msg[];
  tools?: unknown;
}

/** JSON with object keys sorted: equal for equal values whatever the key order. */
export const canonical = (x: unknown): string =>
  JSON.stringify(x, (_, v) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );

/** A pass-through to `upstream` (…/v1) that keeps every chat request body the upstream answered: what
 * the policy sent and the model saw. (An attempt that failed on the way — a pooled connection the
 * upstream had just closed, under load — is retried by the policy and kept once, when it is answered.) */
export async function recordingProxy(upstream: string) {
  const requests: ChatRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const r = await fetch(upstream.replace(/\/v1$/, '') + (req.url ?? ''), {
          method: req.method,
          headers: { 'content-type': 'application/json' },
          body: req.method === 'POST' ? body : undefined,
        });
        if (r.ok && req.method === 'POST' && req.url?.endsWith('/chat/completions'))
          requests.push(JSON.parse(body));
        res.writeHead(r.status, { 'content-type': r.headers.get('content-type') ?? 'application/json' });
        res.end(await r.text());
      } catch {
        res.writeHead(502).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return { url, requests, close: () => new Promise((r) => server.close(r)) };
}

/**
 * `turnwise rollout` of FrozenLake by the openai policy against `turnwise serve --policy SERVED`, each
 * `rollouts` entry (its file, the rollout's flags, `mode=` of the policy) through the recording proxy;
 * the requests each sent, in the order answered.
 */
export async function servedFrozenLake(
  serveArgs: string[],
  rollouts: { file: string; args: string[]; mode?: 'tools' | 'text' }[],
): Promise<ChatRequest[][]> {
  const serve = startServe(serveArgs);
  const proxy = await recordingProxy(await serve.ready);
  const sent: ChatRequest[][] = [];
  try {
    for (const r of rollouts) {
      const from = proxy.requests.length;
      const policy = `openai:${proxy.url}#oracle${r.mode === undefined ? '' : `,mode=${r.mode}`}`;
      const ran = await turnwise(['rollout', ...r.args, '--policy', policy, '--out', r.file]);
      assert.equal(ran.code, 0, ran.stderr);
      sent.push(proxy.requests.slice(from));
    }
  } finally {
    await proxy.close();
    await serve.stop();
  }
  return sent;
}

/** `turnwise harness run` of examples/sql-agent.ts on 2 sql tasks × 3 samples against a served
 * oracle:eps=0.2, into `dir`; its trajectory file. */
export async function harnessSql(dir: string): Promise<string> {
  const serve = startServe(['--policy', 'oracle:eps=0.2', '--env', 'sql', '--tasks', '2', '--budget', '8']);
  try {
    const args = ['harness', 'run', '--cmd', 'npx tsx examples/sql-agent.ts', '--env', 'sql', '--tasks', '2'];
    args.push('--samples', '3', '--budget', '8', '--upstream', await serve.ready, '--out', dir);
    args.push('--timeout', '120');
    const child = spawn(process.execPath, [resolve('bin/turnwise.js'), ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    assert.equal(await new Promise((r) => child.on('exit', r)), 0, stderr);
    return join(dir, 'trajectories.jsonl');
  } finally {
    await serve.stop();
  }
}

/** Values as JSON has them: int64 (bigint) as numbers, nested. */
export const plain = (x: unknown): unknown =>
  typeof x === 'bigint'
    ? Number(x)
    : Array.isArray(x)
      ? x.map(plain)
      : x !== null && typeof x === 'object'
        ? Object.fromEntries(Object.entries(x).map(([k, v]) => [k, plain(v)]))
        : x;

/** An in-memory DuckDB, closed after the file's tests: a Parquet file's column types as DESCRIBE
 * states them (name → type, in column order), and the rows of a query (int64 as numbers). */
export async function duckdb() {
  const instance = await DuckDBInstance.create(':memory:');
  const c = await instance.connect();
  after(() => {
    c.closeSync();
    instance.closeSync();
  });
  return {
    describe: async (file: string): Promise<Record<string, string>> => {
      const r = await c.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`);
      return Object.fromEntries(r.getRowObjectsJS().map((x) => [x.column_name, x.column_type]));
    },
    rows: async (query: string): Promise<Record<string, unknown>[]> =>
      plain((await c.runAndReadAll(query)).getRowObjectsJS()) as Record<string, unknown>[],
  };
}
