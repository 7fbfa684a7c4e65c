// The whole budget study (issue 11): every (world, seed) pair is one run of the pipeline
// (pipeline.ts), the runs go in parallel on worker threads (one run per thread, so a run's figures do
// not depend on how many run beside it), and the findings are taken across seeds per world:
//   heldFraction = the fraction of seeds (where it could be decided) in which a finding held;
//   held         = it held in more than half of them;
//   ours         = the mean over seeds of each run's tested quantity, with a t-interval across seeds
//                  (one seed: that run's own interval).
// summary.json is this study summary; `studyFindings` recomputes its findings from the runs' stored
// quantities (findings.ts), so `turnwise study verdicts` audits every level.
import { availableParallelism, totalmem } from 'node:os';
import { Worker } from 'node:worker_threads';
import { PROFILE_RUNS, type ProfileName, type StudyConfig, worldConfig } from './config.ts';
import type { AcrossSeedsFigure, Estimate, PassGrid } from './figures.ts';
import { finiteOrNull } from './figures.ts';
import { budgetFindings } from './findings.ts';
import {
  type RunEvent,
  type RunJob,
  type RunKey,
  type RunOutput,
  runOne,
  TRAINERS,
  type TrainerName,
} from './run.ts';
import type { FindingId, StudyFinding, StudySummary, Summary, WorldInfo } from './summary.ts';
import { FINDING_IDS } from './summary.ts';
import type { RlTrainer } from './trainer.ts';
import { NARROW_DESIGN, WORLD_SETTINGS, type WorldId } from './world.ts';

export interface StudyPlan {
  /** The profile's config (its `seed` and `world` are replaced per run). */
  config: StudyConfig;
  seeds: readonly number[];
  worlds: readonly WorldId[];
}

/** A profile's plan: its seeds and worlds (PROFILE_RUNS), or the ones given. */
export function studyPlan(
  config: StudyConfig,
  seeds?: readonly number[],
  worlds?: readonly WorldId[],
): StudyPlan {
  const runs = PROFILE_RUNS[config.profile as ProfileName] ?? {
    seeds: [config.seed],
    worlds: [config.world],
  };
  return { config, seeds: seeds ?? runs.seeds, worlds: worlds ?? runs.worlds };
}

export interface StudyRunOptions {
  /** A trainer by name runs on worker threads; a function runs in this thread, one run after another. */
  trainer: TrainerName | RlTrainer;
  /** Runs at once (default: the machine's parallelism; 1 = in this thread). */
  parallel?: number;
  onEvent?: (e: RunEvent) => void;
}

export interface StudyRunResult {
  summary: StudySummary;
  /** Per run, the policies as safetensors bytes (NeuralPolicy.checkpoint), by role. */
  policies: (RunKey & { files: Record<string, Uint8Array> })[];
}

/** Runs at once when --parallel is not given: the cores, but one per 4 GiB of the machine's memory (a
 * default-profile run holds ≈ 0.9 GB at its peak, bench/README.md: an 8 GB laptop runs two at once,
 * 1.8 GB, beside a browser); at least one. Parallelism changes no result (each run is seeded). */
export function defaultParallel(cores = availableParallelism(), memory = totalmem()): number {
  return Math.max(1, Math.min(cores, Math.floor(memory / 2 ** 32)));
}

/** Runs every (world, seed) of the plan and takes the findings across seeds. */
export async function runStudy(plan: StudyPlan, o: StudyRunOptions): Promise<StudyRunResult> {
  const t0 = performance.now();
  const jobs: RunJob[] = plan.worlds.flatMap((world) =>
    plan.seeds.map((seed) => ({ world, seed, config: worldConfig(plan.config, world, seed) })),
  );
  const parallel = Math.max(1, Math.min(o.parallel ?? defaultParallel(), jobs.length));
  const onEvent = o.onEvent ?? (() => {});
  let results: RunOutput[];
  if (typeof o.trainer === 'function' || parallel === 1) {
    const trainer = typeof o.trainer === 'function' ? o.trainer : TRAINERS[o.trainer];
    results = [];
    for (const job of jobs) results.push(await runOne(job, trainer, onEvent));
  } else {
    results = await runOnThreads(jobs, o.trainer, parallel, onEvent);
  }
  const runs = results.map((r) => r.summary);
  const summary = studySummary(plan, runs, parallel, (performance.now() - t0) / 1000);
  return {
    summary,
    policies: results.map((r, i) => ({ world: jobs[i].world, seed: jobs[i].seed, files: r.files })),
  };
}

/** The study summary of finished runs (world-major, seeds in plan order). */
export function studySummary(
  plan: Pick<StudyPlan, 'seeds' | 'worlds'> & { config: Pick<StudyConfig, 'profile'> },
  runs: Summary[],
  parallel: number,
  seconds: number,
): StudySummary {
  const partial = {
    study: 'budget' as const,
    version: 3 as const,
    profile: plan.config.profile,
    seeds: [...plan.seeds],
    worlds: plan.worlds.map(worldInfo),
    runs,
  };
  return {
    ...partial,
    findings: studyFindings(partial),
    acrossSeeds: plan.worlds.map((w) => acrossSeeds(w, runsOf(partial, w))),
    parallel,
    seconds,
  };
}

export function worldInfo(id: WorldId): WorldInfo {
  const w = WORLD_SETTINGS[id];
  const description =
    id === 'slippery'
      ? 'FrozenLake random maps on 1/3-slippery ice; the base cloned on the expert’s own rollouts; policies see the map and their cell'
      : 'FrozenLake random maps on ice that moves the intended way with probability 0.9; the base cloned on the expert’s intended path; policies also see their last action and whether it went as intended';
  return {
    id,
    successRate: w.successRate,
    demos: w.demos,
    memory: w.memory,
    description,
    ...(id === 'narrow'
      ? {
          design: {
            premise: NARROW_DESIGN.premise,
            world: NARROW_DESIGN.world,
            predictions: { ...NARROW_DESIGN.predictions },
          },
        }
      : {}),
  };
}

const runsOf = (s: Pick<StudySummary, 'runs'>, world: string) => s.runs.filter((r) => r.world === world);

/**
 * The findings across seeds, per world, recomputed from each run's stored quantities (findings.ts):
 * what summary.json's `findings` holds and what `turnwise study verdicts` prints.
 */
export function studyFindings(s: Pick<StudySummary, 'runs' | 'worlds'>): StudyFinding[] {
  return s.worlds.flatMap((w) => {
    const runs = runsOf(s, w.id);
    const perRun = runs.map((r) => budgetFindings(r));
    return FINDING_IDS.map((id) =>
      acrossSeedsFinding(
        id,
        perRun.map((fs) => fs.find((x) => x.id === id)!),
        runs.map((r) => r.config.seed),
      ),
    );
  });
}

/** One finding across seeds: the majority verdict, the fraction held, the mean tested quantity. */
export function acrossSeedsFinding(id: FindingId, perSeed: StudyFinding[], seeds: number[]): StudyFinding {
  const first = perSeed[0];
  const verdicts = perSeed.map((x) => x.held);
  const decided = verdicts.filter((v): v is boolean => v !== null);
  const heldFraction = decided.length === 0 ? null : decided.filter((v) => v).length / decided.length;
  const ours: Estimate = perSeed.length === 1 ? first.ours : meanAcross(perSeed.map((x) => x.ours.value));
  const n = perSeed.length;
  return {
    id,
    world: first.world,
    claim: first.claim,
    paper: first.paper,
    ours: { value: ours.value, ci95: ours.ci95 },
    held: heldFraction === null ? null : heldFraction > 0.5,
    heldFraction,
    test:
      n === 1
        ? first.test
        : `${first.test} Across the ${n} seeds: held when it holds in more than half of the seeds where it is decided (ours: the mean over seeds with a t-interval across seeds).`,
    note: n === 1 ? first.note : verdicts.map((v, i) => `seed ${seeds[i]}: ${verdictWord(v)}`).join('; '),
    seeds,
    perSeed: verdicts,
  };
}

const verdictWord = (v: boolean | null) => (v === true ? 'held' : v === false ? 'not held' : 'n/a');

/** Two-sided 95% Student t quantiles by degrees of freedom (1…10); 1.96 beyond. */
const T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228];

/** The mean of the finite values with a t-interval across them (no interval from fewer than two). */
export function meanAcross(xs: readonly (number | null)[]): Estimate & { perSeed: (number | null)[] } {
  const v = xs.filter((x): x is number => x !== null && Number.isFinite(x));
  const perSeed = xs.map(finiteOrNull);
  if (v.length === 0) return { value: null, ci95: [null, null], perSeed };
  const mean = v.reduce((a, b) => a + b, 0) / v.length;
  if (v.length < 2) return { value: mean, ci95: [null, null], perSeed };
  const sd = Math.sqrt(v.reduce((a, b) => a + (b - mean) ** 2, 0) / (v.length - 1));
  const half = (T975[v.length - 2] ?? 1.96) * (sd / Math.sqrt(v.length));
  return { value: mean, ci95: [mean - half, mean + half], perSeed };
}

/** Pass@(1,T) per policy and RL − base, mean over the world's seeds (one seed: its own interval). */
function acrossSeeds(world: string, runs: readonly Summary[]): StudySummary['acrossSeeds'][number] {
  const T = runs[0].exactPassKT.base.T;
  const over = (get: (r: Summary) => Estimate): AcrossSeedsFigure => {
    if (runs.length === 1) {
      const e = get(runs[0]);
      return { value: e.value, ci95: e.ci95, perSeed: [e.value] };
    }
    return meanAcross(runs.map((r) => get(r).value));
  };
  const names = (['base', 'rl', 'budgetmix', 'gigpo'] as const).filter((n) =>
    runs.every((r) => r.exactPassKT[n] !== undefined),
  );
  const at = (g: PassGrid, j: number): Estimate => ({ value: g.passKT[0][j], ci95: g.ci95[0][j] });
  const exact = Object.fromEntries(
    names.map((n) => [n, T.map((_, j) => over((r) => at(r.exactPassKT[n]!, j)))]),
  );
  const lead = T.map((_, j) => over((r) => at(r.exactPassKT.diff, j)));
  return { world, T: [...T], exact, lead };
}

// ── Running on worker threads ────────────────────────────────────────────────────────────────────

const BOOT = new URL('../../rollout/worker-boot.mjs', import.meta.url);
const JOB_MODULE = new URL('./run-worker.ts', import.meta.url);

/** The runs on `parallel` worker threads, results in job order. */
async function runOnThreads(
  jobs: readonly RunJob[],
  trainer: TrainerName,
  parallel: number,
  onEvent: (e: RunEvent) => void,
): Promise<RunOutput[]> {
  const results: RunOutput[] = new Array(jobs.length);
  let next = 0;
  const workers: Worker[] = [];
  const serve = (w: Worker) =>
    new Promise<void>((resolve, reject) => {
      const give = () => {
        if (next >= jobs.length) {
          resolve();
          return;
        }
        const i = next++;
        w.postMessage({ id: i, job: { ...jobs[i], trainer } });
      };
      w.on(
        'message',
        (m: { ready?: boolean; event?: RunEvent; id?: number; result?: RunOutput; error?: string }) => {
          if (m.ready) give();
          else if (m.event) onEvent(m.event);
          else if (m.error !== undefined) reject(new Error(m.error));
          else if (m.id !== undefined && m.result) {
            results[m.id] = m.result;
            give();
          }
        },
      );
      w.once('error', reject);
      w.once('exit', (code) => {
        if (code !== 0) reject(new Error(`study worker exited with code ${code}`));
      });
    });
  try {
    const served: Promise<void>[] = [];
    for (let i = 0; i < parallel; i++) {
      const w = new Worker(BOOT, { workerData: { module: JOB_MODULE.href, init: {} } });
      workers.push(w);
      served.push(serve(w));
    }
    await Promise.all(served);
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  return results;
}
