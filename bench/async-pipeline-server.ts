// The endpoint of bench/async-pipeline.ts, on a thread of its own (rollout/pool.ts), as a remote
// endpoint is on a machine of its own: a 'serve' job carries a batch's acting weights as checkpoint
// bytes, which it serves with turnwise serve's OpenAI-compatible server on 127.0.0.1 (a free port) with
// the latency before every answer, answering the URL; a 'stop' job closes that server.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envConfig, makeEnv } from '../src/envs/index.ts';
import { loadNeuralPolicy } from '../src/policies/neural.ts';
import { startServer } from '../src/serve/openai.ts';

export type EndpointJob =
  | { kind: 'serve'; checkpoint: Uint8Array; latencyMs: number; params: Record<string, unknown> }
  | { kind: 'stop' };

export function createHandler(): (job: EndpointJob) => Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'turnwise-async-endpoint-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  return async (job) => {
    if (job.kind === 'stop') {
      await server?.close();
      server = undefined;
      return '';
    }
    const env = makeEnv({ ...envConfig('frozenlake', job.params), seed: 0 });
    const file = join(dir, 'policy.safetensors');
    writeFileSync(file, job.checkpoint);
    const policy = loadNeuralPolicy(file, env.spec)!.clone('mlp');
    server = await startServer({ policy, env, latencyMs: job.latencyMs, envParams: job.params });
    return server.url;
  };
}
