// turnwise queue status --queue redis://HOST:PORT: the rollout queue's workers, counts, runs and stalled
// jobs (src/rollout/queue-status.ts), as a table or as JSON.
import type { Command } from 'commander';
import { connectRedis, parseQueueUrl } from '../../rollout/queue-redis.ts';
import { type QueueJobs, queueStatus } from '../../rollout/queue-status.ts';
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
        const head = (q: QueueJobs) => {
          const c = q.counts;
          out(
            `queue ${q.queue} on ${url.url}: ${c.waiting} waiting, ${c.active} running, ${c.delayed} delayed, ${c.completed} completed, ${c.failed} failed`,
          );
        };
        const jobs = (q: QueueJobs) => {
          out(`runs with jobs: ${q.runs.length}`);
          if (q.runs.length > 0)
            out(table([['run', 'waiting', 'running'], ...q.runs.map((r) => [r.run, r.waiting, r.active])]));
          out(`stalled jobs: ${q.stalled.length === 0 ? 'none' : q.stalled.join(', ')}`);
        };
        head(s);
        out(`workers: ${s.workers.length}`);
        if (s.workers.length > 0)
          out(
            table([
              ['name', 'host', 'pid', 'concurrency', 'agents', 'done', 'failed', 'idle s'],
              ...s.workers.map((w) => [
                w.name,
                w.host ?? '-',
                w.pid ?? '-',
                w.concurrency ?? '-',
                w.agents ? 'yes' : 'no',
                w.done,
                w.failed,
                w.idle,
              ]),
            ]),
          );
        jobs(s);
        // The agents' queue only when it is in use (a worker takes it, or it holds jobs).
        const a = s.agentQueue;
        if (s.workers.some((w) => w.agents) || Object.values(a.counts).some((n) => n > 0)) {
          head(a);
          jobs(a);
        }
      } finally {
        redis.disconnect();
      }
    });
}
