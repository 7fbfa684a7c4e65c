// --cache FILE.sqlite on rollout, eval and compare: the replay cache (store/replay-cache.ts) handed to
// the run's openai: policies (policies/openai.ts records and replays through it).
import type { Command } from 'commander';
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import type { Env, Task } from '../core/types.ts';
import { OpenAIPolicy, type RequestTotals, zeroTotals } from '../policies/openai.ts';
import type { OpenAIConnect } from '../policies/spec.ts';
import { ReplayCache } from '../store/replay-cache.ts';

export const CACHE_HELP =
  'replay cache (SQLite): record every openai: request as it completes; answer from it, with no HTTP, what it holds';

export function cacheOption(cmd: Command): Command {
  return cmd.option('--cache <file.sqlite>', CACHE_HELP);
}

/** The cache of --cache, or undefined; refused (one line) when no policy of the run makes requests. */
export function openCache(file: string | undefined, specs: string[]): ReplayCache | undefined {
  if (file === undefined) return undefined;
  if (!specs.some((s) => s.trim().startsWith('openai:'))) {
    throw new InputError('--cache', file, 'only openai: policies make requests to record; this run has none');
  }
  return new ReplayCache(file);
}

// The other openai: options of rollout, eval and compare: --api-key-env NAME (the key's variable;
// the key itself is never printed, logged or stored) and --price IN,OUT (dollars per million prompt
// and completion tokens), and the request totals their summaries report.

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

/** The summed request totals of the run's openai: policies (with the cost under --price); undefined
 * when the run has none. */
export function requestTotals(
  policies: readonly unknown[],
  price: [number, number] | undefined,
): (RequestTotals & { cost?: number }) | undefined {
  const own = policies.filter((p): p is OpenAIPolicy => p instanceof OpenAIPolicy);
  if (own.length === 0) return undefined;
  const sum: RequestTotals & { cost?: number } = zeroTotals();
  for (const p of new Set(own)) {
    const t = p.totals();
    sum.requests += t.requests;
    sum.retries += t.retries;
    sum.failed += t.failed;
    sum.promptTokens += t.promptTokens;
    sum.completionTokens += t.completionTokens;
    sum.cached += t.cached;
    for (const [k, v] of Object.entries(t.byStatus)) sum.byStatus[k] = (sum.byStatus[k] ?? 0) + v;
  }
  if (price !== undefined) sum.cost = (sum.promptTokens * price[0] + sum.completionTokens * price[1]) / 1e6;
  return sum;
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

/** Checks, before any episode, that the run's openai: policies can score (NLL, LLR): one scoring
 * request each on the first task's first turn. The reasons of those that cannot (their logProb is then
 * removed, so the diagnostics are skipped rather than wrong). */
export async function checkScoring(
  policies: readonly unknown[],
  make: (task: Task) => Env<unknown, unknown>,
  task: Task,
  budget: number,
): Promise<string[]> {
  const own = [...new Set(policies.filter((p): p is OpenAIPolicy => p instanceof OpenAIPolicy))];
  if (own.length === 0) return [];
  const env = make(task);
  try {
    const observation = await env.reset(task.seed);
    const reasons: string[] = [];
    for (const p of own) {
      const reason = await p.checkScoring({
        observation,
        history: [],
        turn: 0,
        turnsLeft: p.budgetAware ? budget : undefined,
        rng: Rng.fromSeed(0),
        env,
      });
      if (reason !== undefined) reasons.push(reason);
    }
    return reasons;
  } finally {
    await env.close?.();
  }
}
