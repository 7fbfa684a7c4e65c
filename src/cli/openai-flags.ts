// The openai: flags of rollout, eval and compare, declared and parsed without loading the client: --cache
// FILE.sqlite (the replay cache, store/replay-cache.ts), --api-key-env NAME (the key's variable; the key
// itself is never printed, logged or stored), --price IN,OUT (dollars per million prompt and completion
// tokens), and the line that reports a run's request totals. What opens the cache and sums the totals of
// the run's policies is in cache.ts, loaded only by a run that gets that far.
import type { Command } from 'commander';
import { InputError } from '../core/errors.ts';
import type { RequestTotals } from '../policies/openai.ts';
import type { OpenAIConnect } from '../policies/spec.ts';

export const CACHE_HELP =
  'replay cache (SQLite): record every openai: request as it completes; answer from it, with no HTTP, what it holds';

export function cacheOption(cmd: Command): Command {
  return cmd.option('--cache <file.sqlite>', CACHE_HELP);
}

export interface OpenAIFlags {
  apiKeyEnv?: string;
  price?: string;
}

export function openaiOptions(cmd: Command): Command {
  return cmd
    .option(
      '--api-key-env <name>',
      'read the API key of openai: policies from this variable (default OPENAI_API_KEY)',
    )
    .option(
      '--price <in,out>',
      'dollars per million prompt and completion tokens: the summary adds the cost',
    );
}

/** What openPolicy needs of the flags: the key's variable (checked: set, non-empty) and the env. */
export function connectOptions(
  flags: OpenAIFlags,
  config: { env: string; params: Record<string, unknown> },
): OpenAIConnect {
  if (flags.apiKeyEnv !== undefined) {
    const name = flags.apiKeyEnv;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new InputError('--api-key-env', name, 'expected the name of an environment variable');
    if ((process.env[name] ?? '') === '')
      throw new InputError('--api-key-env', name, 'this environment variable is not set');
  }
  return { keyEnv: flags.apiKeyEnv, env: { id: config.env, params: config.params } };
}

/** --price IN,OUT → [in, out] dollars per million tokens. */
export function parsePrice(raw: string | undefined): [number, number] | undefined {
  if (raw === undefined) return undefined;
  const parts = raw.split(',').map((x) => x.trim());
  const xs = parts.map(Number);
  if (parts.length !== 2 || parts.some((p) => p === '') || !xs.every((x) => Number.isFinite(x) && x >= 0))
    throw new InputError(
      '--price',
      raw,
      'expected IN,OUT: dollars per million prompt and completion tokens, e.g. 0.15,0.6',
    );
  return [xs[0], xs[1]];
}

/** One line for the text summary. */
export function totalsLine(t: RequestTotals & { cost?: number }): string {
  const status = Object.entries(t.byStatus)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}×${v}`)
    .join(' ');
  const cost = t.cost === undefined ? '' : `, cost $${t.cost.toFixed(4)}`;
  return `requests: ${t.requests} (${t.retries} retries, ${t.failed} failed${status === '' ? '' : `; ${status}`}), ${t.cached} from the cache; tokens ${t.promptTokens} in, ${t.completionTokens} out${cost}`;
}
