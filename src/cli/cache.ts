// --cache FILE.sqlite on rollout, eval and compare: the replay cache (store/replay-cache.ts) handed to
// the run's openai: policies (policies/openai.ts records and replays through it), and the request totals
// their summaries report. The flags themselves are declared in openai-flags.ts.
import { InputError } from '../core/errors.ts';
import { Rng } from '../core/rng.ts';
import type { Env, Task } from '../core/types.ts';
import { OpenAIPolicy, type RequestTotals, zeroTotals } from '../policies/openai.ts';
import { ReplayCache } from '../store/replay-cache.ts';

/** The cache of --cache, or undefined; refused (one line) when no policy of the run makes requests. */
export function openCache(file: string | undefined, specs: string[]): ReplayCache | undefined {
  if (file === undefined) return undefined;
  if (!specs.some((s) => s.trim().startsWith('openai:'))) {
    throw new InputError('--cache', file, 'only openai: policies make requests to record; this run has none');
  }
  return new ReplayCache(file);
}

/** The summed request totals of the run's openai: policies (with the cost under --price); undefined
 * when the run has none. */
export function requestTotals(
  policies: readonly unknown[],
  price: [number, number] | undefined,
): (RequestTotals & { cost?: number }) | undefined {
  const own = policies.filter((p): p is OpenAIPolicy => p instanceof OpenAIPolicy);
  if (own.length === 0) return undefined;
  const sum: RequestTotals & { cost?: number } = sumTotals([...new Set(own)].map((p) => p.totals()));
  if (price !== undefined) sum.cost = (sum.promptTokens * price[0] + sum.completionTokens * price[1]) / 1e6;
  return sum;
}

/** Request totals added up (the policies of a run, the judges of a rubric). */
export function sumTotals(all: readonly RequestTotals[]): RequestTotals {
  const sum = zeroTotals();
  for (const t of all) {
    sum.requests += t.requests;
    sum.retries += t.retries;
    sum.failed += t.failed;
    sum.promptTokens += t.promptTokens;
    sum.completionTokens += t.completionTokens;
    sum.cached += t.cached;
    for (const [k, v] of Object.entries(t.byStatus)) sum.byStatus[k] = (sum.byStatus[k] ?? 0) + v;
  }
  return sum;
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
