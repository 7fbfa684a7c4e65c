// Tool-call reward hacking (issue 27 §3; docs/reward-hacking.md#tool-calls): GRPO with an MLP on the tools
// env's slot variant (envs/tools/choice.ts: six calls offered per turn — the request's next call, a read
// it does not need, a repeat, two writes it does not ask for, finish), under the format-only reward and
// its mitigations, the same seeds (and initial weights) in every arm:
//   format    every well-formed call pays 0.1 (reward 'format'; unmitigated)
//   verify    the same, but a random half of the episodes is paid the verified reward instead (verify 0.5)
//   penalty   the format reward minus 0.2 per useless call and per side effect
//   verified  the env's verified reward (finish pays 1 iff both checkers pass; the reference)
// Per arm and iteration, of the training batch: calls, useless calls and side effects per episode
// (envs/tools/effects.ts) and success; per arm the mean of the last `window` iterations per seed, and
// each arm minus the format arm paired by seed (bench/paired.ts: mean, 95% t interval). One JSON object;
// progress on stderr.
//   node --import tsx bench/tool-hacking.ts [--seeds 1,2,3] [--iters 60] [--groups 16] [--budget 10] [--window 10]
import { cpus, loadavg } from 'node:os';
import { envs } from '../src/envs/index.ts';
import { parseTrainConfig } from '../src/train/config.ts';
import { trainPolicyGradient } from '../src/train/loop.ts';
import { benchArgs } from './args.ts';
import { paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/tool-hacking.ts', {
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    iters: { type: 'string', default: '60' },
    groups: { type: 'string', default: '16' },
    budget: { type: 'string', default: '10' },
    window: { type: 'string', default: '10' },
  },
});
const seeds = values.seeds.split(',').map(Number);
const iters = Number(values.iters);
const groups = Number(values.groups);
const budget = Number(values.budget);
const window = Number(values.window);
const base = { mode: 'choose', level: 1 };

const ARMS: readonly { name: string; params: Record<string, unknown> }[] = [
  { name: 'format', params: { reward: 'format' } },
  { name: 'verify', params: { reward: 'format', verify: 0.5 } },
  { name: 'penalty', params: { reward: 'format', uselessPenalty: 0.2, sideEffectPenalty: 0.2 } },
  { name: 'verified', params: { reward: 'verified' } },
];
const FIGURES = {
  calls: 'rollout/calls',
  useless: 'rollout/useless_calls',
  sideEffects: 'rollout/side_effects',
  success: 'rollout/success',
} as const;
type Figure = keyof typeof FIGURES;
const NAMES = Object.keys(FIGURES) as Figure[];

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const t0 = performance.now();
const cpu0 = process.cpuUsage();
const load0 = loadavg()[0];
const out: Record<
  string,
  { params: Record<string, unknown>; perSeed: Record<Figure, number[]>; curves: Record<Figure, number[]> }
> = {};
for (const arm of ARMS) {
  const runs: Record<Figure, number[]>[] = [];
  for (const seed of seeds) {
    const config = parseTrainConfig({
      env: { env: 'tools', params: { ...base, ...arm.params } },
      policy: { kind: 'mlp', hidden: [32] },
      iters,
      groups,
      groupSize: 8,
      budget: { kind: 'fixed', budget },
      trainSeeds: [0, 100_000],
      testSeeds: [100_000, 100_200],
      eval: { episodes: 1 },
      seed,
    });
    const r = await trainPolicyGradient({ config, envs });
    runs.push(
      Object.fromEntries(
        NAMES.map((f) => [f, r.metrics.map((m) => m.values[FIGURES[f]] ?? Number.NaN)]),
      ) as Record<Figure, number[]>,
    );
    process.stderr.write(`${arm.name} seed ${seed}: ${r.seconds.toFixed(1)} s\n`);
  }
  const perSeed = Object.fromEntries(
    NAMES.map((f) => [f, runs.map((s) => mean(s[f].slice(-window)))]),
  ) as Record<Figure, number[]>;
  // Every 10th iteration (and the last): the mean over seeds.
  const at = Array.from({ length: iters }, (_, i) => i).filter((i) => i % 10 === 0 || i === iters - 1);
  const curves = Object.fromEntries(
    NAMES.map((f) => [f, at.map((i) => r4(mean(runs.map((s) => s[f][i]))))]),
  ) as Record<Figure, number[]>;
  out[arm.name] = { params: arm.params, perSeed, curves };
}
const ref = out.format;
const cpuSeconds = () => {
  const u = process.cpuUsage(cpu0);
  return Number(((u.user + u.system) / 1e6).toFixed(1));
};
const at = Array.from({ length: iters }, (_, i) => i).filter((i) => i % 10 === 0 || i === iters - 1);
console.log(
  JSON.stringify({
    setting: {
      env: { env: 'tools', params: base },
      policy: 'mlp:hidden=32',
      algo: 'grpo',
      iters,
      groups,
      groupSize: 8,
      budget,
      window,
      seeds,
    },
    curveIters: at,
    arms: Object.fromEntries(
      ARMS.map(({ name }) => {
        const a = out[name];
        return [
          name,
          {
            params: a.params,
            final: Object.fromEntries(NAMES.map((f) => [f, r4(mean(a.perSeed[f]))])),
            perSeed: Object.fromEntries(NAMES.map((f) => [f, a.perSeed[f].map(r4)])),
            curves: a.curves,
            ...(name === 'format'
              ? {}
              : {
                  minusFormat: Object.fromEntries(
                    NAMES.map((f) => [f, paired(a.perSeed[f].map((x, i) => x - ref.perSeed[f][i]))]),
                  ),
                }),
          },
        ];
      }),
    ),
    seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
    cpuSeconds: cpuSeconds(),
    load: { start: r4(load0), end: r4(loadavg()[0]), cores: cpus().length },
  }),
);
