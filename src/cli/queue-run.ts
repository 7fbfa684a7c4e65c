// A command's rollout queue once its flags are checked (queue.ts): opened (Redis reached, or refused in
// one line, before any work), the policy reference workers open (a spec as it is, a .safetensors
// checkpoint by its bytes), and the queue's counts beside the command's progress bar (done per worker,
// queued, running, retried, failed; on a terminal only).
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Policy } from '../core/types.ts';
import { POLICY_FILE } from '../policies/checkpoint-file.ts';
import { specFile } from '../policies/spec.ts';
import type { PolicyRef, RolloutQueue } from '../rollout/queue.ts';
import type { QueueCounts, RedisRolloutQueue } from '../rollout/queue-redis.ts';
import { interactive, type Progress } from './io.ts';

/** A command's queue, and where its counts are shown: beside the command's progress bar. */
export interface CliQueue extends RolloutQueue {
  show(progress: Progress): void;
}

/**
 * The queue a command's episodes go to: Redis when --queue is given (connected now: an unreachable
 * server is refused in one line before any work), else in process. On a terminal its counts (done per
 * worker, queued, running, retried, failed) go beside the command's progress bar, and the last of them
 * stay on a line of their own once it is closed. Closed by the caller.
 */
export async function openQueue(raw: string | undefined, label: string): Promise<CliQueue> {
  if (raw === undefined) return { ...(await import('../rollout/queue.ts')).IN_PROCESS, show: () => {} };
  const { q, show, close } = await openRedisQueue(raw, label);
  return { where: q.where, runner: (remote) => q.runner(remote), show, close };
}

/** The Redis queue of `--queue URL` (`queueName`: another BullMQ queue than the episodes'), with its
 * counts shown beside a progress bar on a terminal (`show`) and left on a line of their own at `close`. */
export async function openRedisQueue(
  raw: string,
  label: string,
  queueName?: string,
): Promise<{ q: RedisRolloutQueue; show(progress: Progress): void; close(): Promise<void> }> {
  const { parseQueueUrl, RedisRolloutQueue } = await import('../rollout/queue-redis.ts');
  let counts: Readonly<QueueCounts> | undefined;
  let progress: Progress | undefined;
  const q = await RedisRolloutQueue.open(parseQueueUrl(raw), {
    label,
    queueName,
    onProgress: interactive()
      ? (c) => {
          counts = c;
          progress?.setNote(queueLine(c));
        }
      : undefined,
  });
  return {
    q,
    show: (p) => {
      progress = p;
    },
    close: async () => {
      if (counts !== undefined) process.stderr.write(`\r${queueLine(counts)}\x1b[K\n`);
      await q.close();
    },
  };
}

/** `queue: 120 done (w1 64, w2 56), 272 queued, 8 running, 2 retried, 0 failed`. */
export function queueLine(c: Readonly<QueueCounts>): string {
  const per = Object.entries(c.workers)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([w, n]) => `${w} ${n}`)
    .join(', ');
  const running = Math.max(0, c.active);
  const queued = Math.max(0, c.added - c.done - c.failed - running);
  return `queue: ${c.done} done${per === '' ? '' : ` (${per})`}, ${queued} queued, ${running} running, ${c.retried} retried, ${c.failed} failed`;
}

/**
 * What workers open for a policy given as `spec`: a .safetensors checkpoint (a file, or a run
 * directory's policy.safetensors) travels as its bytes, so workers need no shared disk; any other spec
 * is sent as it is (a gguf: or replay: file must then be at the same path on every worker). Without
 * a queue (`queue` undefined) nothing is read: the in-process queue plays the policy object itself.
 */
export function policyRef(
  queue: string | undefined,
  spec: string,
  policy: Policy<unknown, unknown>,
): PolicyRef {
  const path = specFile(spec);
  if (queue !== undefined && path !== undefined && !spec.startsWith('gguf:') && !spec.startsWith('replay:')) {
    const file = statSync(path).isDirectory() ? join(path, POLICY_FILE) : path;
    if (file.endsWith('.safetensors')) return { id: policy.id, checkpoint: readFileSync(file) };
  }
  return { id: policy.id, spec };
}
