// `--queue redis://HOST:PORT` of rollout, eval, compare and train: the flag and its checks before any
// work. What a queued run needs once the flags are checked (the queue opened, the policy's reference,
// the progress line) is in queue-run.ts, loaded only by a run that gets that far.
import type { Command } from 'commander';
import { InputError } from '../core/errors.ts';

export const QUEUE_HELP =
  'play the episodes on `turnwise worker` processes through this Redis (redis://HOST:PORT); the same bytes as a local run';

export function queueOption(cmd: Command): Command {
  return cmd.option('--queue <url>', QUEUE_HELP);
}

/** The flag checked (one line, exit 2) before anything is loaded or opened. */
export async function checkQueueFlag(raw: string | undefined): Promise<void> {
  if (raw === undefined) return;
  const { parseQueueUrl } = await import('../rollout/queue-redis.ts');
  parseQueueUrl(raw);
}

/** Options that cannot go with --queue, refused in one line. */
export function refuseWithQueue(queue: string | undefined, flags: [string, unknown, string][]): void {
  if (queue === undefined) return;
  for (const [flag, value, why] of flags)
    if (value !== undefined && value !== false)
      throw new InputError(flag, value, `cannot go with --queue: ${why}`);
}
