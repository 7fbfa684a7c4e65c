// Entry point of every pool worker: loads the job module named in workerData and serves its handler.
// A TypeScript module (the sources, run through tsx) needs tsx registered here: workers do not inherit
// the loader the CLI or the test runner registered. A module of the CLI's precompiled copy (dist/, .js)
// needs nothing.
import { parentPort, workerData } from 'node:worker_threads';

if (!workerData.module.endsWith('.js')) {
  const { register } = await import('tsx/esm/api');
  register();
}
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
