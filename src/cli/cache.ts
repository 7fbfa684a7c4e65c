// --cache FILE.sqlite on rollout, eval and compare: the replay cache (store/replay-cache.ts) handed to
// the run's openai: policies (policies/openai.ts records and replays through it).
import type { Command } from 'commander';
import { InputError } from '../core/errors.ts';
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
