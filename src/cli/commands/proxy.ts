// turnwise proxy: the recording proxy (serve/proxy.ts) in front of an upstream, until SIGINT or SIGTERM.
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { startProxy } from '../../serve/proxy.ts';
import { benchProxy } from '../../serve/proxy-bench.ts';
import { checkOutput } from '../../store/paths.ts';
import { fmt, json, out } from '../io.ts';
import { int } from '../options.ts';
import { ABOUT } from './about.ts';
import { internalErrors, keyFrom, maxBody } from './serve.ts';

interface ProxyFlags {
  upstream: string;
  port: string;
  host: string;
  budget?: string;
  store: string;
  logprobs: boolean;
  apiKeyEnv?: string;
  upstreamKeyEnv?: string;
  maxBodyMb: string;
  json?: boolean;
}

/** An http(s) API base such as http://127.0.0.1:8000/v1. */
export function upstreamUrl(flag: string, raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new InputError(flag, raw, 'expected an http(s) URL such as http://127.0.0.1:8000/v1');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new InputError(flag, raw, 'expected an http(s) URL such as http://127.0.0.1:8000/v1');
  return raw.replace(/\/+$/, '');
}

export function registerProxy(program: Command): void {
  program
    .command('proxy')
    .description(ABOUT.proxy.description)
    .addHelpText(
      'after',
      `
Per session: base URL http://HOST:PORT/s/{id}/v1 (everything under it is forwarded, streams included);
PUT /s/{id} {"budget", "task", "policy"}; POST /s/{id}/reward {"value", "reason"}; POST /s/{id}/end;
GET /s/{id} (calls, turns, mergeMismatches); GET /s/{id}/events; GET /s/{id}/trajectory.
With --budget T the (T+1)-th model call of a session is refused (error type turn_budget_exhausted).
Sessions begin with PUT /s/{id} or their first model call; other routes of an unknown session are 404.
With --api-key-env every route requires "Authorization: Bearer KEY" (else 401), and that header is not
forwarded: the upstream gets --upstream-key-env's key, if any. A request body over --max-body-mb is a 413.`,
    )
    .requiredOption('--upstream <url>', 'the upstream API base, e.g. http://127.0.0.1:8000/v1')
    .requiredOption('--store <file.sqlite>', 'SQLite file the sessions and their calls are recorded in')
    .option('--port <n>', 'port (0 = a free port)', '8100')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--budget <T>', 'turn budget of every session (model calls)')
    .option('--no-logprobs', 'do not ask the upstream for token log-probs the client did not ask for')
    .option('--api-key-env <name>', 'require the key in this environment variable on every route (else 401)')
    .option('--upstream-key-env <name>', 'send the key in this environment variable to the upstream')
    .option('--max-body-mb <n>', 'the largest request body read, in MiB (else HTTP 413)', '32')
    .option('--json', 'print {"url": …} on stdout once listening')
    .action(async (flags: ProxyFlags) => {
      const upstream = upstreamUrl('--upstream', flags.upstream);
      const port = int('--port', flags.port, 0, 65535);
      const budget = flags.budget === undefined ? undefined : int('--budget', flags.budget, 1, 1_000_000);
      const apiKey = flags.apiKeyEnv === undefined ? undefined : keyFrom(flags.apiKeyEnv);
      const upstreamApiKey =
        flags.upstreamKeyEnv === undefined ? undefined : keyFrom(flags.upstreamKeyEnv, '--upstream-key-env');
      const maxBodyBytes = maxBody(flags.maxBodyMb);
      checkOutput(flags.store, '--store', 'file');
      const proxy = await startProxy({
        upstream,
        store: flags.store,
        budget,
        askLogprobs: flags.logprobs,
        apiKey,
        upstreamApiKey,
        maxBodyBytes,
        onInternalError: internalErrors('proxy'),
        port,
        host: flags.host,
      }).catch((e: NodeJS.ErrnoException) => {
        throw new InputError(
          '--port',
          flags.port,
          `cannot listen on ${flags.host}:${port} (${e.code ?? e.message})`,
        );
      });
      process.stderr.write(`listening on ${proxy.url}\n`);
      if (flags.json) json({ url: proxy.url, port: proxy.port, session: proxy.sessionUrl('{session}') });
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          proxy.close().then(resolve, resolve);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
    });
}

/** `turnwise bench proxy`: registered here, beside the proxy, under the `bench` command (which
 * commands/index.ts registers first), so that bench.ts stays one file per figure family. */
export function registerBenchProxy(program: Command): void {
  const bench = program.commands.find((c) => c.name() === 'bench');
  if (bench === undefined) throw new Error('the bench command is registered before the proxy');
  bench
    .command('proxy')
    .description(
      "the recording proxy's added latency per call (p50, p99) against calling the upstream directly",
    )
    .option('--calls <n>', 'timed pairs of calls (direct, proxied)', '2000')
    .option('--warmup <n>', 'untimed pairs first', '300')
    .option('--session-length <n>', 'calls per proxy session', '50')
    .option('--stream', 'streaming (SSE) calls')
    .option('--json', 'machine-readable output')
    .action(
      async (flags: {
        calls: string;
        warmup: string;
        sessionLength: string;
        stream?: boolean;
        json?: boolean;
      }) => {
        const r = await benchProxy({
          calls: int('--calls', flags.calls, 1, 1_000_000),
          warmup: int('--warmup', flags.warmup, 0, 1_000_000),
          sessionLength: int('--session-length', flags.sessionLength, 1, 1_000_000),
          stream: flags.stream === true,
        });
        if (flags.json) return json(r);
        out(
          `added latency per call: p50 ${fmt(r.added.p50, 3)} ms, p99 ${fmt(r.added.p99, 3)} ms (goal p50 ≤ ${r.goalP50Ms} ms); direct p50 ${fmt(r.direct.p50, 3)} ms, proxied p50 ${fmt(r.proxied.p50, 3)} ms; ${r.calls} calls${r.stream ? ', streaming' : ''}`,
        );
      },
    );
}
