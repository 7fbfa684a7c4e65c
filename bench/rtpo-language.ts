// Reverse-turn policy optimisation with the language agent on a tool env (issue 29 item 5; bench/rtpo.ts
// measures the MLP on FrozenLake): the transformer cloned on `sql --level 1` (bench/language-agent.sh sql
// DIR writes one to DIR/bc) trained from that clone for the same iterations and seeds by token-level GRPO
// (outcome credit), turn-level GRPO (credit turn-level) and algo rtpo (the drift-corrected backward pass,
// the update staged latest turns first, ratios on the recorded behaviour log-probs). Each trained policy
// and the clone itself are rolled out on the same held-out tasks with the same run seed: success, invalid
// rate, and the paired difference (arm − GRPO, rtpo − turn-level) with its mean and 95% t-interval over
// seeds. Also rtpo's metrics (the context mismatch of re-tokenised prompts, the drift it corrected).
// One JSON object on stdout; progress on stderr.
//   node --import tsx bench/rtpo-language.ts --base DIR/bc [--temperature T] [--seeds 1,2,3] [--iters 4]
//     [--groups 4] [--group-size 8] [--tasks 40] [--samples 2]
// --temperature samples the clone (and every arm trained from it) at T instead of its saved temperature
// (`transformer:from=DIR,temperature=T`): a clone that rarely succeeds at 1 gives its groups no signal.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { cpuUsage } from 'node:process';
import type { Policy, Trajectory } from '../src/core/types.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../src/envs/index.ts';
import { rollout } from '../src/rollout/batch.ts';
import { parseTrainConfig } from '../src/train/config.ts';
import { trainPolicyGradient } from '../src/train/loop.ts';
import { FILES } from '../src/train/run-dir.ts';
import { benchArgs } from './args.ts';
import { openBase } from './jobs.ts';
import { paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/rtpo-language.ts', {
  options: {
    base: { type: 'string' },
    temperature: { type: 'string' },
    seeds: { type: 'string', default: '1,2,3' },
    iters: { type: 'string', default: '4' },
    groups: { type: 'string', default: '4' },
    'group-size': { type: 'string', default: '8' },
    tasks: { type: 'string', default: '40' },
    samples: { type: 'string', default: '2' },
  },
});
const fail = (msg: string): never => {
  process.stderr.write(`bench/rtpo-language.ts: ${msg}\n`);
  process.exit(2);
};
const base =
  values.base ??
  fail('--base: missing; expected a transformer clone on sql (bench/language-agent.sh sql DIR → DIR/bc)');
const checkpoint = existsSync(join(base, FILES.policy)) ? join(base, FILES.policy) : base;
if (!existsSync(checkpoint)) fail(`--base: got "${base}"; expected a run directory or checkpoint file`);
const seeds = values.seeds.split(',').map(Number);
const iters = Number(values.iters);
const groups = Number(values.groups);
const groupSize = Number(values['group-size']);
const nTasks = Number(values.tasks);
const samples = Number(values.samples);
const env = { env: 'sql', params: { level: 1 } };
const BUDGET = 10;
const TEST_SEED = 1_000_000;

const ARMS = {
  grpo: { algo: 'grpo', credit: { method: 'grpo' } },
  turnLevel: { algo: 'grpo', credit: { method: 'turn-level' } },
  rtpo: { algo: 'rtpo' },
} as const;
type Arm = keyof typeof ARMS;
const armNames = Object.keys(ARMS) as Arm[];

const tasks = makeTasks(envConfig(env.env, env.params), nTasks, TEST_SEED);
const spec = { kind: 'checkpoint', path: checkpoint } as const;

interface Score {
  success: number;
  invalid: number;
}
function score(ts: readonly Trajectory[]): Score {
  let turns = 0;
  let invalid = 0;
  for (const t of ts)
    for (const turn of t.turns) {
      turns++;
      if (turn.info.valid === false) invalid++;
    }
  return {
    success: ts.filter((t) => t.outcome.success).length / ts.length,
    invalid: invalid / Math.max(1, turns),
  };
}
async function heldOut(policy: Policy<unknown, unknown>): Promise<Score> {
  return score(await rollout({ tasks, samples, policy, makeEnv, budget: BUDGET, runSeed: 777 }));
}

const t0 = performance.now();
const cpu0 = cpuUsage();
const envSpec = makeEnv(tasks[0]).spec;
const temperature = values.temperature === undefined ? undefined : Number(values.temperature);
if (temperature !== undefined && !(temperature >= 0 && temperature <= 2))
  fail(`--temperature: got "${values.temperature}"; expected a number from 0 to 2`);
/** The clone as every arm starts from it (a fresh copy each time: training never moves it). */
const openClone = () =>
  openBase(
    temperature === undefined ? checkpoint : `transformer:from=${base},temperature=${temperature}`,
    envSpec,
    fail,
  );
const clone = await heldOut(await openClone());
process.stderr.write(`clone: held-out success ${r4(clone.success)}, invalid ${r4(clone.invalid)}\n`);
const results: Record<Arm, (Score & { train: number; seconds: number; rtpo?: Record<string, number> })[]> = {
  grpo: [],
  turnLevel: [],
  rtpo: [],
};
for (const seed of seeds) {
  for (const arm of armNames) {
    const config = parseTrainConfig({
      env,
      policy: spec,
      iters,
      groups,
      groupSize,
      budget: { kind: 'fixed', budget: BUDGET },
      trainSeeds: [0, 600],
      eval: { episodes: 1 },
      seed,
      ...ARMS[arm],
    });
    const r = await trainPolicyGradient({ config, envs, init: await openClone() });
    const avg = (k: string) =>
      r.metrics.reduce((a, m) => a + (m.values[k] ?? 0), 0) / Math.max(1, r.metrics.length);
    results[arm].push({
      ...(await heldOut(r.policy)),
      train: avg('rollout/success'),
      seconds: r.seconds,
      ...(arm === 'rtpo'
        ? {
            rtpo: {
              contextMismatch: avg('rtpo/context_mismatch'),
              ratioMean: r4(avg('rtpo/ratio_mean')),
              truncated: r4(avg('rtpo/truncated')),
            },
          }
        : {}),
    });
    const last = results[arm].at(-1)!;
    process.stderr.write(
      `seed ${seed} ${arm}: held-out success ${r4(last.success)}, invalid ${r4(last.invalid)} (${r.seconds.toFixed(0)} s)\n`,
    );
  }
}
const diff = (a: Arm, b: Arm) => paired(seeds.map((_, i) => results[a][i].success - results[b][i].success));
const mean = (arm: Arm, k: 'success' | 'invalid' | 'train' | 'seconds') =>
  r4(results[arm].reduce((a, x) => a + x[k], 0) / results[arm].length);
const cpu = cpuUsage(cpu0);
console.log(
  JSON.stringify({
    setting: {
      env: 'sql level 1 (tool calls)',
      policy: `transformer cloned on sql (${base})`,
      temperature: temperature ?? "the clone's own",
      iters,
      groups,
      groupSize,
      budget: BUDGET,
      seeds,
      heldOut: { tasks: nTasks, samples, firstSeed: TEST_SEED },
    },
    clone: { success: r4(clone.success), invalid: r4(clone.invalid) },
    arms: Object.fromEntries(
      armNames.map((a) => [
        a,
        {
          success: mean(a, 'success'),
          invalid: mean(a, 'invalid'),
          trainSuccess: mean(a, 'train'),
          seconds: mean(a, 'seconds'),
        },
      ]),
    ),
    perSeed: seeds.map((s, i) => ({
      seed: s,
      ...Object.fromEntries(armNames.map((a) => [a, r4(results[a][i].success)])),
    })),
    rtpoMetrics: results.rtpo.map((x) => x.rtpo),
    difference: {
      rtpoMinusGrpo: diff('rtpo', 'grpo'),
      turnLevelMinusGrpo: diff('turnLevel', 'grpo'),
      rtpoMinusTurnLevel: diff('rtpo', 'turnLevel'),
    },
    seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
    cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(1)),
  }),
);
