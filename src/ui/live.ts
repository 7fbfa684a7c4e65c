// Live updates as server-sent events (text/event-stream): a run's state, or the list of runs, sent
// when it changes. The server reads the run the way every request does (runs.ts: the store opened
// read-only, the writer's lock) on an interval, and sends an event only when what it read differs from
// what it last sent; a page that receives one fetches what it shows again (the metrics, the list).
// Polling rather than fs.watch: a SQLite store in WAL mode changes its -wal file, a writer that dies
// changes nothing on disk (its lock's process is gone), and both are read the same way here.
import type { Context } from 'hono';
import { type SSEStreamingApi, streamSSE } from 'hono/streaming';

/** `wait(ms)`: resolves after `ms`, or at once when the stream is aborted (a closed page, a server
 * shutting down), so that no timer outlives its connection. */
function pauses(stream: SSEStreamingApi): (ms: number) => Promise<void> {
  let wake = () => {};
  stream.onAbort(() => wake());
  return (ms) =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
}

/**
 * Streams `read()` as events named `event` (data: its JSON) each time it changes, every `pollMs`; the
 * first event is sent at once. `done(state)` ends the stream after sending that state (a finished run
 * changes no more); `read` returning undefined (the run is gone) ends it too, with an event `gone`.
 */
export function changes<T>(
  c: Context,
  event: string,
  pollMs: number,
  read: () => T | undefined,
  done: (state: T) => boolean = () => false,
): Response {
  return streamSSE(c, async (stream) => {
    const pause = pauses(stream);
    let last: string | undefined;
    let id = 0;
    while (!stream.aborted && !stream.closed) {
      let state: T | undefined;
      try {
        state = read();
      } catch {
        // Unreadable for a moment (a writer replacing a file): read again at the next tick.
        await pause(pollMs);
        continue;
      }
      if (state === undefined) {
        await stream.writeSSE({ event: 'gone', data: '{}' });
        return;
      }
      const data = JSON.stringify(state);
      if (data !== last) {
        await stream.writeSSE({ event, data, id: String(id++) });
        last = data;
      }
      if (done(state)) return;
      await pause(pollMs);
    }
  });
}
