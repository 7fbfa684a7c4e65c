// Pass@(K,T) with bootstrap intervals at scale: 10 000 tasks × 64 samples × 20 budgets × 5 values of
// K, 2000 resamples (issue 3). Prints one JSON object; machine-dependent, never asserted in tests.
//   node --import tsx bench/passkt.ts [--tasks N] [--samples n] [--budgets B] [--resamples R] [--pair]
// The first-success turns are synthetic (drawn once, not timed): per task a success probability
// p ~ U(0, 1) spread over turns 1..100 geometrically, the shape of a real budget curve.
import { Rng } from '../src/core/rng.ts';
import { bootstrapPassKT } from '../src/eval/bootstrap.ts';
import { countsFromFirstSuccess, passKT } from '../src/eval/passkt.ts';
import { benchArgs } from './args.ts';

const { values } = benchArgs('bench/passkt.ts', {
  options: {
    tasks: { type: 'string', default: '10000' },
    samples: { type: 'string', default: '64' },
    budgets: { type: 'string', default: '20' },
    resamples: { type: 'string', default: '2000' },
    pair: { type: 'boolean', default: false },
    seed: { type: 'string', default: '0' },
  },
});
const tasks = Number(values.tasks);
const samples = Number(values.samples);
const nBudgets = Number(values.budgets);
const resamples = Number(values.resamples);
const K = [1, 2, 4, 8, 16].filter((k) => k <= samples);
const T = Array.from({ length: nBudgets }, (_, j) => Math.round(((j + 1) * 100) / nBudgets));

function synthetic(seed: number): Int32Array {
  const rng = Rng.derive(seed, 99);
  const first = new Int32Array(tasks * samples);
  for (let i = 0; i < tasks; i++) {
    const p = rng.float();
    const hazard = 0.02 + 0.2 * rng.float();
    for (let s = 0; s < samples; s++) {
      if (rng.float() >= p) continue;
      let t = 1;
      while (t < 100 && rng.float() >= hazard) t++;
      first[i * samples + s] = t;
    }
  }
  return first;
}

const firstA = synthetic(1);
const firstB = synthetic(2);
const time = (f: () => void): number => {
  const t0 = performance.now();
  f();
  return (performance.now() - t0) / 1000;
};
// Warm-up on a small problem so that the figure measures compiled code.
bootstrapPassKT([countsFromFirstSuccess(firstA.subarray(0, 100 * samples), samples, T)], K, {
  resamples: 50,
});
let point: number[][] = [];
const seconds = time(() => {
  const a = countsFromFirstSuccess(firstA, samples, T);
  point = passKT(a, K);
  if (values.pair) {
    const b = countsFromFirstSuccess(firstB, samples, T);
    passKT(b, K);
    bootstrapPassKT([a, b], K, { resamples, seed: 0 });
  } else bootstrapPassKT([a], K, { resamples, seed: 0 });
});
process.stdout.write(
  `${JSON.stringify({
    tasks,
    samples,
    budgets: T.length,
    K: K.length,
    resamples,
    policies: values.pair ? 2 : 1,
    seconds: Number(seconds.toFixed(4)),
    passAt1Tmax: Number(point[0][T.length - 1].toFixed(4)),
  })}\n`,
);
