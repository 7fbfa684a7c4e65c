// The asynchronous generation–training pipeline (issue 29 item 6; docs/methods-measured.md), synchronous
// vs `--async-pipeline` on the same seeds at the same number of iterations, in two parts:
//   served    GRPO of an MLP on FrozenLake 4x4 (slippery, the fixed map) whose every action is an HTTP
//             round trip: each batch's acting weights (the checkpoint the training loop hands its rollout
//             queue) are served by turnwise serve's OpenAI-compatible server on 127.0.0.1 — on a thread
//             of its own, as a remote endpoint is on a machine of its own — with a latency before every
//             answer, and played through an openai: policy, `concurrency` requests in flight. Wall and
//             CPU seconds per iteration, and the wall seconds the batches took to generate.
//   learning  what one update of staleness costs the learner: the tabular policy on the same map,
//             in process, long enough to learn; the final policy's exact success on the map (its DP
//             value, no sampling noise).
// Paired differences (async − sync) with their mean and 95% t-interval over seeds. One JSON object on
// stdout, progress on stderr.
//   node --import tsx bench/async-pipeline.ts [--seeds 1,2,3] [--iters 12] [--latency 50] [--hidden 256,256]
//     [--concurrency 32] [--learn-iters 150]
import type { Trajectory } from '../src/core/types.ts';
import { envConfig, envs, makeEnv } from '../src/envs/index.ts';
import { openPolicy } from '../src/policies/spec.ts';
import { rollout } from '../src/rollout/batch.ts';
import { WorkerPool } from '../src/rollout/pool.ts';
import type { RolloutQueue } from '../src/rollout/queue.ts';
import { parseTrainConfig, type TrainConfigInput } from '../src/train/config.ts';
import { type TrainOptions, trainPolicyGradient } from '../src/train/loop.ts';
import { benchArgs } from './args.ts';
import type { EndpointJob } from './async-pipeline-server.ts';
import { paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/async-pipeline.ts', {
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    iters: { type: 'string', default: '12' },
    latency: { type: 'string', default: '50' },
    hidden: { type: 'string', default: '256,256' },
    concurrency: { type: 'string', default: '32' },
    groups: { type: 'string', default: '16' },
    budget: { type: 'string', default: '30' },
    'learn-iters': { type: 'string', default: '150' },
  },
});
const seeds = values.seeds.split(',').map(Number);
const iters = Number(values.iters);
const latencyMs = Number(values.latency);
const hidden = values.hidden.split(',').map(Number);
const concurrency = Number(values.concurrency);
const groups = Number(values.groups);
const budget = Number(values.budget);
const learnIters = Number(values['learn-iters']);
const GROUP_SIZE = 8;
const params = { map: '4x4', slippery: true };
const env = makeEnv({ ...envConfig('frozenlake', params), seed: 0 });
type ArmName = 'sync' | 'async';

const endpoint = new WorkerPool<EndpointJob, string>(
  new URL('./async-pipeline-server.ts', import.meta.url),
  {},
  1,
);
/** Wall seconds the batches took to generate, summed (they overlap the updates in the async arm). */
let generating = 0;
const served: RolloutQueue = {
  where: `served on 127.0.0.1 with a latency of ${latencyMs} ms`,
  runner: (remote) => async (opts) => {
    const ref = remote.policy;
    if (!('checkpoint' in ref)) throw new Error('the bench serves checkpoints');
    const started = performance.now();
    const url = await endpoint.run({ kind: 'serve', checkpoint: ref.checkpoint, latencyMs, params });
    try {
      const client = await openPolicy(`openai:${url}#mlp,concurrency=4096,retries=0`, env.spec);
      const ts: Trajectory[] = await rollout({ ...opts, policy: client, concurrency });
      for (const t of ts) t.policy = ref.id;
      return ts;
    } finally {
      await endpoint.run({ kind: 'stop' });
      generating += (performance.now() - started) / 1000;
    }
  },
  close: async () => {},
};

const configOf = (arm: ArmName, c: Partial<TrainConfigInput>) =>
  parseTrainConfig({
    env: { env: 'frozenlake', params },
    groupSize: GROUP_SIZE,
    ...c,
    ...(arm === 'async' ? { asyncPipeline: true } : {}),
  });

interface Timed {
  secondsPerIter: number;
  generationSecondsPerIter: number;
  cpuSecondsPerIter: number;
}
/** A run's wall and CPU seconds per iteration up to its last iteration (the final evaluation aside). */
async function timed(o: TrainOptions, label: string): Promise<Timed> {
  const n = o.config.iters;
  const start = performance.now();
  const cpu = process.cpuUsage();
  let end = start;
  let used = { user: 0, system: 0 };
  generating = 0;
  await trainPolicyGradient({
    ...o,
    onIter: (i) => {
      end = performance.now();
      used = process.cpuUsage(cpu);
      process.stderr.write(`${label} iter ${i + 1}/${n}\r`);
    },
  });
  process.stderr.write('\n');
  return {
    secondsPerIter: (end - start) / 1000 / n,
    generationSecondsPerIter: generating / n,
    cpuSecondsPerIter: (used.user + used.system) / 1e6 / n,
  };
}

const t0 = performance.now();
const servedConfig = (arm: ArmName, seed: number, n: number) =>
  configOf(arm, {
    policy: { kind: 'mlp', hidden },
    iters: n,
    groups,
    budget: { kind: 'fixed', budget },
    eval: { episodes: 1 },
    seed,
  });
// Warm-up (JIT, the endpoint's modules), discarded: the first measured arm must not pay it.
for (const arm of ['sync', 'async'] as const)
  await trainPolicyGradient({ config: servedConfig(arm, 0, 2), envs, queue: served });
const timing: Record<ArmName, Timed[]> = { sync: [], async: [] };
const exact: Record<ArmName, number[]> = { sync: [], async: [] };
for (const [n, seed] of seeds.entries()) {
  // Alternate which arm runs first, so that a drift in the machine's load falls on both.
  for (const arm of n % 2 === 0 ? (['sync', 'async'] as const) : (['async', 'sync'] as const)) {
    const config = servedConfig(arm, seed, iters);
    timing[arm].push(await timed({ config, envs, queue: served }, `served seed ${seed} ${arm}`));
  }
  for (const arm of ['sync', 'async'] as const) {
    const config = configOf(arm, { policy: { kind: 'tabular' }, iters: learnIters, seed });
    const r = await trainPolicyGradient({ config, envs });
    exact[arm].push(r.final!.exact!);
    process.stderr.write(`learning seed ${seed} ${arm}: exact ${r.final!.exact}\n`);
  }
}
await endpoint.close();

const meanOf = (xs: readonly number[]) => r4(xs.reduce((a, b) => a + b, 0) / xs.length);
const timingOf = (arm: ArmName) => ({
  secondsPerIter: meanOf(timing[arm].map((t) => t.secondsPerIter)),
  generationSecondsPerIter: meanOf(timing[arm].map((t) => t.generationSecondsPerIter)),
  beyondGenerationPerIter: meanOf(timing[arm].map(beyond)),
  cpuSecondsPerIter: meanOf(timing[arm].map((t) => t.cpuSecondsPerIter)),
});
/** Wall seconds of an iteration beyond its batch's generation: the update and the rest that the
 * trainer does not overlap with generation (the machine's load inflates both arms' generation alike). */
const beyond = (t: Timed) => t.secondsPerIter - t.generationSecondsPerIter;
const timingDiff = (k: keyof Timed) => paired(seeds.map((_, i) => timing.async[i][k] - timing.sync[i][k]));
console.log(
  JSON.stringify({
    setting: {
      env: 'frozenlake 4x4 slippery (the fixed map)',
      served: {
        policy: `mlp ${hidden.join('x')}, served over HTTP on 127.0.0.1 (openai: → turnwise serve on its own thread)`,
        latencyMs,
        concurrency,
        iters,
        groups,
        groupSize: GROUP_SIZE,
        budget,
      },
      learning: { policy: 'tabular, in process', iters: learnIters, groups: 16, groupSize: GROUP_SIZE },
      seeds,
    },
    served: {
      sync: timingOf('sync'),
      async: timingOf('async'),
      perSeed: seeds.map((s, i) => ({
        seed: s,
        sync: {
          seconds: r4(timing.sync[i].secondsPerIter),
          generation: r4(timing.sync[i].generationSecondsPerIter),
        },
        async: {
          seconds: r4(timing.async[i].secondsPerIter),
          generation: r4(timing.async[i].generationSecondsPerIter),
        },
      })),
      difference: {
        secondsPerIter: timingDiff('secondsPerIter'),
        beyondGenerationPerIter: paired(
          seeds.map((_, i) => beyond(timing.async[i]) - beyond(timing.sync[i])),
        ),
        cpuSecondsPerIter: timingDiff('cpuSecondsPerIter'),
      },
      speedup: r4(timingOf('sync').secondsPerIter / timingOf('async').secondsPerIter),
    },
    learning: {
      sync: { exact: meanOf(exact.sync) },
      async: { exact: meanOf(exact.async) },
      perSeed: seeds.map((s, i) => ({ seed: s, sync: r4(exact.sync[i]), async: r4(exact.async[i]) })),
      difference: { exact: paired(seeds.map((_, i) => exact.async[i] - exact.sync[i])) },
    },
    seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
  }),
);
