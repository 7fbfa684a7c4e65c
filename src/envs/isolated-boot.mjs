// Entry point of an isolated runner (isolated-pool.ts), a worker thread or a child process: registers tsx
// (neither inherits the loader the CLI registers), loads the runner module and serves its handler, one
// job at a time. A child process exits when its parent goes away (the IPC channel closes).
import { parentPort, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const send = parentPort === null ? (m) => process.send(m) : (m) => parentPort.postMessage(m);
const port = parentPort ?? process;
if (parentPort === null) process.on('disconnect', () => process.exit(0));
const mod = await import(parentPort === null ? process.argv[2] : workerData.module);
const handle = await mod.createHandler();
port.on('message', async ({ id, job }) => {
  try {
    send({ id, result: await handle(job) });
  } catch (e) {
    send({ id, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
});
send({ ready: true });
