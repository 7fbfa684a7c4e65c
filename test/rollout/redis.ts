// A real Redis for the queue's tests: Debian's redis-server on PATH, started on a free loopback port
// with nothing saved to disk, ready once it says so and answers PING, stopped by the test. Without
// redis-server the tests skip with one line, unless CI is set: there they are required (.ci/run
// installs redis-server), and a missing one fails them.
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { delimiter, join } from 'node:path';

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const file = join(dir, name);
    try {
      if (statSync(file).isFile()) {
        accessSync(file, constants.X_OK);
        return file;
      }
    } catch {}
  }
  return undefined;
}

export const REDIS_SERVER = onPath('redis-server');
export const MISSING =
  "redis-server not found on PATH: the rollout queue's tests need Debian's redis-server (apt-get install redis-server; .ci/run installs it)";
const CI = !['', '0', 'false'].includes(process.env.CI ?? '');
/** The `skip` of a describe() needing Redis: a one-line notice without redis-server, unless CI. */
export const SKIP: string | false =
  REDIS_SERVER === undefined && !CI ? `${MISSING}; set CI=1 to require them` : false;

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

export interface RedisServer {
  port: number;
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** PING over a plain socket: resolves on +PONG. */
function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port }, () => s.write('PING\r\n'));
    s.on('data', (d) => {
      resolve(String(d).startsWith('+PONG'));
      s.destroy();
    });
    s.on('error', () => resolve(false));
  });
}

/** A fresh redis-server on a free port (throws MISSING when there is none: under CI that fails the test). */
export async function startRedis(): Promise<RedisServer> {
  if (REDIS_SERVER === undefined) throw new Error(MISSING);
  const port = await freePort();
  const child = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      log += d;
      if (log.includes('Ready to accept connections')) resolve();
    });
    child.on('exit', (code) =>
      reject(new Error(`redis-server exited (${code}) before it was ready:\n${log}`)),
    );
  });
  if (!(await ping(port))) throw new Error(`redis-server on port ${port} does not answer PING`);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    child,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
