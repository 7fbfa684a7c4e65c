// The language study as a whole: every (world, seed) — one after another in this thread, or as jobs on
// worker threads (`parallel`: each world's own stages, then its seeds; the same records either way) —
// then the findings across seeds per world, side by side with the paper's numbers and each world's
// pre-registered predictions. summary.json is this summary; `studyLanguageVerdicts` recomputes
// every verdict from the stored measurements (`turnwise study verdicts --in`).
import { envs as registry } from '../../envs/index.ts';
import { WorkerPool } from '../../rollout/pool.ts';
import { columns } from '../budget/terminal.ts';
import {
  type LanguageProfile,
  type LanguageWorldId,
  PRE_REGISTRATION,
  type Sizes,
  worldIn,
} from './design.ts';
import {
  type LanguageEvent,
  type LanguageRunOptions,
  type LanguageRunRecord,
  runLanguageSeed,
} from './run.ts';
import { type AcrossSeeds, acrossSeeds, languageFindings } from './verdicts.ts';
import type { LanguageJob } from './worker.ts';

export interface LanguageStudySummary {
  study: 'budget-language';
  version: 1;
  profile: string;
  seeds: number[];
  worlds: {
    id: LanguageWorldId;
    title: string;
    env: unknown;
    model: unknown;
    expert: string;
    budget: number;
    T: number[];
    mix: number[];
    step: string;
    errors: string;
    sizes: Sizes;
    preRegistration: (typeof PRE_REGISTRATION)[LanguageWorldId];
  }[];
  runs: LanguageRunRecord[];
  findings: AcrossSeeds[];
  seconds: number;
}

export interface LanguagePlan {
  profile: LanguageProfile;
  worlds: LanguageWorldId[];
  seeds: number[];
}

/** What decides whether an `out` can be resumed: the profile's sizes and model, the worlds, the seeds. */
export function planRecord(p: LanguagePlan): unknown {
  return {
    profile: p.profile.name,
    worlds: p.worlds,
    seeds: p.seeds,
    sizes: p.worlds.map((w) => p.profile.sizes[w]),
    budgets: p.worlds.map((w) => {
      const x = worldIn(p.profile, w);
      return { model: x.model, T: x.T, mix: x.mix };
    }),
  };
}

export interface LanguageStudyOptions extends Omit<LanguageRunOptions, 'profile'> {
  /** Jobs at once on worker threads (default 1: one after another in this thread). Worker threads
   * use the registry's envs (src/envs/index.ts), so `envs` must be that registry then. */
  parallel?: number;
}

export async function runLanguageStudy(
  plan: LanguagePlan,
  o: LanguageStudyOptions,
): Promise<LanguageStudySummary> {
  const t0 = performance.now();
  const jobs = plan.worlds.length * plan.seeds.length;
  const parallel = Math.max(1, Math.min(o.parallel ?? 1, jobs));
  let runs: LanguageRunRecord[];
  if (parallel === 1) {
    runs = [];
    for (const world of plan.worlds)
      for (const seed of plan.seeds)
        runs.push(await runLanguageSeed({ ...o, profile: plan.profile }, world, seed));
  } else {
    if (o.envs !== registry)
      throw new Error('runLanguageStudy: worker threads make their envs from the registry; give it as envs');
    runs = await runOnThreads(plan, o.out, parallel, o.onEvent ?? (() => {}));
  }
  return languageSummary(plan, runs, (performance.now() - t0) / 1000);
}

const JOB_MODULE = new URL('./worker.ts', import.meta.url);

/**
 * The plan's jobs on `parallel` worker threads: each world's own stages (tokenizer, base) first, then
 * its seeds, each seed a job of its own; a free thread takes the next job whose world is ready (worlds
 * first, then seeds, the most expensive first by the profile's timing model, else in plan order).
 * Each job computes what it computes alone (its streams are its seed's; a product's bits do not depend
 * on the thread), so the records are those of one after another; they come back in plan order.
 */
async function runOnThreads(
  plan: LanguagePlan,
  out: string,
  parallel: number,
  onEvent: (e: LanguageEvent) => void,
): Promise<LanguageRunRecord[]> {
  const cost = (w: LanguageWorldId, what: 'world' | 'seed') => plan.profile.timing?.[w]?.[what] ?? 0;
  const byCost = (what: 'world' | 'seed') => (a: LanguageJob, b: LanguageJob) =>
    cost(b.world, what) - cost(a.world, what);
  const worldJobs: LanguageJob[] = plan.worlds
    .map((world) => ({ out, profile: plan.profile, world, seed: null }))
    .sort(byCost('world'));
  const seedJobs: LanguageJob[] = plan.worlds
    .flatMap((world) => plan.seeds.map((seed) => ({ out, profile: plan.profile, world, seed })))
    .sort(byCost('seed'));
  const ready = new Set<LanguageWorldId>();
  const records = new Map<string, LanguageRunRecord>();
  const key = (world: LanguageWorldId, seed: number) => `${world}/${seed}`;
  /** The next job a free thread may take, undefined when none is ready yet (or none is left). */
  const next = (): LanguageJob | undefined => {
    const w = worldJobs.shift();
    if (w !== undefined) return w;
    const i = seedJobs.findIndex((j) => ready.has(j.world));
    return i < 0 ? undefined : seedJobs.splice(i, 1)[0];
  };
  const pool = new WorkerPool<LanguageJob, LanguageRunRecord | undefined>(JOB_MODULE, {}, parallel, (e) =>
    onEvent(e as LanguageEvent),
  );
  try {
    await new Promise<void>((resolve, reject) => {
      let running = 0;
      const give = () => {
        for (let job = running < parallel ? next() : undefined; job !== undefined; ) {
          const taken = job;
          running++;
          pool.run(taken).then((record) => {
            running--;
            if (taken.seed === null) ready.add(taken.world);
            else records.set(key(taken.world, taken.seed), record as LanguageRunRecord);
            if (running === 0 && worldJobs.length === 0 && seedJobs.length === 0) resolve();
            else give();
          }, reject);
          job = running < parallel ? next() : undefined;
        }
      };
      give();
    });
  } finally {
    await pool.close();
  }
  return plan.worlds.flatMap((world) =>
    plan.seeds.map((seed) => records.get(key(world, seed)) as LanguageRunRecord),
  );
}

export function languageSummary(
  plan: LanguagePlan,
  runs: LanguageRunRecord[],
  seconds: number,
): LanguageStudySummary {
  return {
    study: 'budget-language',
    version: 1,
    profile: plan.profile.name,
    seeds: plan.seeds,
    worlds: plan.worlds.map((id) => {
      const w = worldIn(plan.profile, id);
      return {
        id,
        title: w.title,
        env: w.env,
        model: w.model,
        expert: w.expert,
        budget: w.budget,
        T: w.T,
        mix: w.mix,
        step: w.step,
        errors: w.errors,
        sizes: plan.profile.sizes[id],
        preRegistration: PRE_REGISTRATION[id],
      };
    }),
    runs,
    findings: plan.worlds.flatMap((w) =>
      acrossSeeds(
        w,
        runs.filter((r) => r.world === w).map((r) => r.findings),
      ),
    ),
    seconds,
  };
}

/** Every verdict recomputed from the stored measurements: the findings a summary should hold. */
export function recomputeLanguageFindings(s: Pick<LanguageStudySummary, 'runs' | 'worlds'>): AcrossSeeds[] {
  return s.worlds.flatMap((w) =>
    acrossSeeds(
      w.id,
      s.runs.filter((r) => r.world === w.id).map((r) => languageFindings(r.world, r.measurements)),
    ),
  );
}

const f = (x: number | null | undefined, d = 3) => (x === null || x === undefined ? 'n/a' : x.toFixed(d));
const verdict = (h: boolean | null) => (h === null ? 'undecided' : h ? 'held' : 'not held');

/** The terminal summary, as lines (the CLI prints them). */
export function languageLines(s: LanguageStudySummary): string[] {
  const lines: string[] = [];
  lines.push(
    `Budget study with language agents — profile ${s.profile}: worlds ${s.worlds.map((w) => w.id).join(', ')}; seeds ${s.seeds.join(',')}`,
  );
  for (const w of s.worlds) {
    const runs = s.runs.filter((r) => r.world === w.id);
    lines.push('');
    lines.push(`World ${w.id}: ${w.title}`);
    const m = w.model as { layers: number; d: number; heads: number; ctx: number };
    lines.push(
      `base = a transformer (${m.layers} layers, d ${m.d}, ctx ${m.ctx}) cloned on ${w.expert} (${w.sizes.train} tasks, ${w.sizes.bc.epochs} epochs); RL = token-level GRPO at T=${w.budget} (${w.sizes.rl.iters} iterations of ${w.sizes.rl.groups} × ${w.sizes.rl.groupSize}); BudgetMix over {${w.mix.join(', ')}}`,
    );
    lines.push(
      `Pass@(1,T) on ${w.sizes.test} held-out tasks × ${w.sizes.samples} samples, mean over seeds; RL − base with its interval (seed ${runs[0]?.seed ?? '-'})`,
    );
    const header = ['', ...w.T.map((t) => `T=${t}`)];
    const rows: string[][] = [header];
    const mean = (pick: (r: LanguageRunRecord) => number) =>
      runs.length === 0 ? null : runs.map(pick).reduce((a, b) => a + b, 0) / runs.length;
    for (const [name, role] of [
      ['base', 'base'],
      ['RL', 'rl'],
      ['BudgetMix', 'budgetmix'],
      ['base at best τ', 'baseTau'],
    ] as const)
      rows.push([name, ...w.T.map((_, j) => f(mean((r) => r.measurements.pass.of[role][0][j])))]);
    const first = runs[0]?.measurements.pass.diff.rlBase[0];
    if (first !== undefined)
      rows.push(['RL − base', ...first.map((c) => `${f(c.value)} [${f(c.ci95[0])}, ${f(c.ci95[1])}]`)]);
    lines.push(...table(rows));
    for (const r of runs) {
      const me = r.measurements;
      const sq = me.stepQuality;
      lines.push(
        `seed ${r.seed}: invalid outputs base ${f(me.pass.invalid.base)}, RL ${f(me.pass.invalid.rl)}; best τ of the base ${r.tau}; step quality (${sq.signal}) win normal ${f(sq.normal.value)} (${sq.normal.states} states, ties ${f(sq.normal.ties)}), error ${f(sq.error.value)}, pre-error ${f(sq.preError.value)} (${sq.errors.made} error states)`,
      );
      const l = me.likelihood;
      lines.push(
        `        NLL under the base per action: RL’s ${f(l.nllRlUnderBase)} vs its own ${f(l.nllBaseUnderBase)} (ratio ${f(l.nllRatio.value)}); per token ${f(l.perToken?.nllRlUnderBase)} vs ${f(l.perToken?.nllBaseUnderBase)}; per trajectory ${f(l.perTrajectory?.nllRlUnderBase, 2)} vs ${f(l.perTrajectory?.nllBaseUnderBase, 2)}`,
      );
      lines.push(
        `        LLR of successes per trajectory: base’s ${f(l.llrSuccessBase.value, 2)} (${l.successes.base}), RL’s ${f(l.llrSuccessRl, 2)} (${l.successes.rl}); per token ${f(l.perToken?.llrSuccessBase)} / ${f(l.perToken?.llrSuccessRl)}; curves: reward ${f(me.curves.reward.first)} → ${f(me.curves.reward.last)}, step ${f(me.curves.step.first)} → ${f(me.curves.step.last)}`,
      );
    }
  }
  lines.push('');
  lines.push(
    'Findings across seeds (held in more than half of the seeds that decided it); the paper beside ours; the pre-registered prediction',
  );
  const rows: string[][] = [['world', 'finding', 'paper', 'ours (mean)', 'verdict', 'per seed', 'predicted']];
  for (const x of s.findings) {
    const w = s.worlds.find((y) => y.id === x.world);
    rows.push([
      x.world,
      x.id,
      x.paper,
      f(x.ours),
      verdict(x.held),
      x.perSeed.map((h) => (h === null ? '?' : h ? '+' : '−')).join(''),
      w?.preRegistration.predictions[x.id]?.split(':')[0] ?? '',
    ]);
  }
  lines.push(...table(rows, 3));
  const reasons = s.findings.filter((x) => x.held === null && x.reasons.length > 0);
  if (reasons.length > 0) {
    lines.push('undecided, because:');
    for (const x of reasons) lines.push(`  ${x.world} ${x.id}: ${x.reasons.join('; ')}`);
  }
  lines.push(`time: ${f(s.seconds, 1)} s`);
  return lines;
}

const table = (rows: string[][], left = 1): string[] => columns(rows, left).split('\n');
