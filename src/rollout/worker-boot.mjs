// Entry point of every pool worker: registers tsx (workers do not inherit the programmatic loader the
// CLI registers), loads the job module named in workerData and serves its handler.
import { parentPort, workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
const mod = await import(workerData.module);
const handle = await mod.createHandler(workerData.init);
parentPort.on('message', async ({ id, job }) => {
  try {
    parentPort.postMessage({ id, result: await handle(job) });
  } catch (e) {
    parentPort.postMessage({ id, error: e instanceof Error ? `${e.message}\n${e.stack}` : String(e) });
  }
});
parentPort.postMessage({ ready: true });
