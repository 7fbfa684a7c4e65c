// turnwise queue status --queue redis://HOST:PORT: the rollout queue's workers, counts, runs and stalled
// jobs (src/rollout/queue-status.ts), as a table or as JSON.
import type { Command } from 'commander';
import { connectRedis, parseQueueUrl } from '../../rollout/queue-redis.ts';
import { queueStatus } from '../../rollout/queue-status.ts';
import { json, out, table } from '../io.ts';
import { ABOUT } from './about.ts';

export function registerQueue(program: Command): void {
  const queue = program.command('queue').description(ABOUT.queue.description);
  queue
    .command('status')
    .description('workers connected, job counts, runs with jobs waiting or running, stalled jobs')
    .requiredOption('--queue <url>', 'the Redis of the queue (redis://HOST:PORT[/DB])')
    .option('--json', 'machine-readable output')
    .action(async (flags: { queue: string; json?: boolean }) => {
      const url = parseQueueUrl(flags.queue);
      const redis = await connectRedis(url);
      try {
        const s = await queueStatus(redis);
        if (flags.json) return json({ url: url.url, ...s });
        const c = s.counts;
        out(
          `queue ${s.queue} on ${url.url}: ${c.waiting} waiting, ${c.active} running, ${c.delayed} delayed, ${c.completed} completed, ${c.failed} failed`,
        );
        out(`workers: ${s.workers.length}`);
        if (s.workers.length > 0)
          out(
            table([
              ['name', 'host', 'pid', 'concurrency', 'done', 'failed', 'idle s'],
              ...s.workers.map((w) => [
                w.name,
                w.host ?? '-',
                w.pid ?? '-',
                w.concurrency ?? '-',
                w.done,
                w.failed,
                w.idle,
              ]),
            ]),
          );
        out(`runs with jobs: ${s.runs.length}`);
        if (s.runs.length > 0)
          out(table([['run', 'waiting', 'running'], ...s.runs.map((r) => [r.run, r.waiting, r.active])]));
        out(`stalled jobs: ${s.stalled.length === 0 ? 'none' : s.stalled.join(', ')}`);
      } finally {
        redis.disconnect();
      }
    });
}
