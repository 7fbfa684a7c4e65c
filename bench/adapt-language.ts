// Test-time adaptation with the language agent (issue 29 item 2; bench/adapt.ts measures the MLP): the
// transformer cloned on random slippery 4x4 FrozenLake maps read as text (the paper profile's base,
// DIR/frozenlake-text/base of `turnwise study budget --policy-kind transformer`) meets *larger* maps,
// 5x5 — a distribution the MLP cannot even read (its input is tied to the map's size), the text agent
// reads as it reads any board. It adapts there from its own rollouts and rewards (src/train/adapt.ts,
// `turnwise adapt`'s code: token-level GRPO with turnwise train's transformer defaults). Held-out success
// on 5x5 maps — sampled, one episode a map, the same episode seeds for every policy — before and after
// each --at episodes; the paired difference over seeds (mean and 95% t-interval). Control: the same
// episodes spent on more 4x4 maps, measured on the same 5x5 maps — what more training alone buys.
// --world sql: an unseen sql domain instead — a clone on level-1 questions of one domain (--source,
// default shop; `turnwise bc --env sql --level 1 --domain shop`) meets another's schema (--target,
// default school), its control the same episodes spent on more questions of its own domain; sql has no
// oracle, so there is no optimum, only the sampled success (the env's exact-match check of the answer).
// --world web: an unseen app variant (issue 29 item 2's third case) — a clone on level-1 tasks of one
// app (--domain, default admin) in one variant (--source, default 0, the canonical app; `turnwise bc
// --env web --domain admin --level 1`) meets the same app in another variant (--target, default 3: the
// same widget kinds, other column order, layout and element ids; src/envs/web/skin.ts), its control the
// same episodes spent on more tasks of its own variant; measured by the env's state check, no optimum.
// Each (seed, arm) runs in a child process of its own (gemm on one thread), --jobs of them at a time:
// the numbers do not depend on --jobs. One JSON object on stdout, progress on stderr.
//   node --import tsx bench/adapt-language.ts --base DIR/frozenlake-text/base [--seeds 1,2,3] [--iters 3]
//     [--groups 8] [--group-size 8] [--at 64,192] [--maps 100] [--budget 100] [--target-size 5] [--jobs 2]
//   node --import tsx bench/adapt-language.ts --world sql --base RUN [--source shop] [--target school]
//     [--budget 10] [--maps 100] …
//   node --import tsx bench/adapt-language.ts --world web --base RUN [--domain admin] [--source 0]
//     [--target 3] [--budget 10] [--maps 100] …
import { existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { envConfig, envs, makeTasks } from '../src/envs/index.ts';
import { DOMAIN_IDS } from '../src/envs/sql/domains.ts';
import { APP_IDS } from '../src/envs/web/app.ts';
import { meanOptimalSuccess } from '../src/eval/exact.ts';
import { gemmThreads } from '../src/nn/gemm.ts';
import { adapt } from '../src/train/adapt.ts';
import { parseTrainConfig } from '../src/train/config.ts';
import { FILES } from '../src/train/run-dir.ts';
import { benchArgs } from './args.ts';
import { finishJob, openBase, runJobs } from './jobs.ts';
import { type AdaptRow, adaptCurve, r4 } from './paired.ts';

const { values } = benchArgs('bench/adapt-language.ts', {
  options: {
    base: { type: 'string' },
    world: { type: 'string', default: 'frozenlake' },
    source: { type: 'string' },
    target: { type: 'string' },
    domain: { type: 'string', default: 'admin' },
    seeds: { type: 'string', default: '1,2,3' },
    iters: { type: 'string', default: '3' },
    groups: { type: 'string', default: '8' },
    'group-size': { type: 'string', default: '8' },
    at: { type: 'string', default: '64,192' },
    maps: { type: 'string', default: '100' },
    budget: { type: 'string' },
    'target-size': { type: 'string', default: '5' },
    jobs: { type: 'string', default: '2' },
    job: { type: 'string' },
  },
});
const fail = (msg: string): never => {
  process.stderr.write(`bench/adapt-language.ts: ${msg}\n`);
  process.exit(2);
};
const world = values.world;
if (world !== 'frozenlake' && world !== 'sql' && world !== 'web')
  fail(`--world: got "${world}"; expected frozenlake, sql or web`);
const BASES: Record<string, string> = {
  frozenlake:
    'a transformer cloned on FrozenLake text (turnwise study budget --policy-kind transformer --out DIR → DIR/frozenlake-text/base)',
  sql: 'a transformer cloned on one sql domain (turnwise bc --env sql --level 1 --domain shop --out RUN)',
  web: 'a transformer cloned on one web app variant (turnwise bc --env web --domain admin --level 1 --out RUN)',
};
const base = values.base ?? fail(`--base: missing; expected ${BASES[world]}`);
/** sql: the two domains; web: the two variants of --domain's app. */
const from = values.source ?? (world === 'web' ? '0' : 'shop');
const to = values.target ?? (world === 'web' ? '3' : 'school');
if (world === 'web' && !(APP_IDS as readonly string[]).includes(values.domain))
  fail(`--domain: got "${values.domain}"; expected ${APP_IDS.join(', ')}`);
for (const [flag, v] of [
  ['source', from],
  ['target', to],
] as const)
  if (world === 'web' && !(/^\d+$/.test(v) && Number(v) <= 1_000_000))
    fail(`--${flag}: got "${v}"; expected a web variant, an integer in [0, 1000000]`);
  else if (world !== 'web' && !(DOMAIN_IDS as readonly string[]).includes(v))
    fail(`--${flag}: got "${v}"; expected ${DOMAIN_IDS.join(', ')}`);
if (world !== 'frozenlake' && (world === 'web' ? Number(from) === Number(to) : from === to))
  fail(`--target: got "${to}"; expected ${world === 'web' ? 'a variant' : 'a domain'} other than --source`);
const checkpoint = existsSync(join(base, FILES.policy)) ? join(base, FILES.policy) : base;
if (!existsSync(checkpoint)) fail(`--base: got "${base}"; expected a run directory or checkpoint file`);
const ints = (flag: string, raw: string) => {
  const xs = raw.split(',').map(Number);
  if (!xs.every((x) => Number.isInteger(x) && x >= 0)) fail(`--${flag}: got "${raw}"; expected integers ≥ 0`);
  return xs;
};
const seeds = ints('seeds', values.seeds);
const [iters] = ints('iters', values.iters);
const [groups] = ints('groups', values.groups);
const [groupSize] = ints('group-size', values['group-size']);
const at = ints('at', values.at);
const [maps] = ints('maps', values.maps);
const [budget] = ints('budget', values.budget ?? (world === 'frozenlake' ? '100' : '10'));
const [targetSize] = ints('target-size', values['target-size']);
const [jobs] = ints('jobs', values.jobs);
const worldParams = (side: 'source' | 'target'): Record<string, unknown> => {
  const v = side === 'source' ? from : to;
  if (world === 'sql') return { level: 1, domain: v };
  if (world === 'web') return { domain: values.domain, level: 1, variant: Number(v) };
  return { random: true, size: side === 'source' ? 4 : targetSize, p: 0.8, slippery: true };
};
const source = worldParams('source');
const target = worldParams('target');
const HELD_OUT = 50_000_000;
const targetMaps = makeTasks(envConfig(world, target), maps, HELD_OUT);
const spec = envs.spec(targetMaps[0]);

const config = (params: object, seed: number) =>
  parseTrainConfig({
    env: { env: world, params },
    policy: { kind: 'checkpoint', path: checkpoint },
    iters,
    groups,
    groupSize,
    budget: { kind: 'fixed', budget },
    eval: { episodes: 1 },
    seed,
  });

type Arm = 'adapted' | 'control';
/** One adaptation: a fresh copy of the clone trained on the arm's maps, measured on the 5x5 maps. The
 * arms of a seed share its run seed, so the held-out episodes are drawn with the same seeds (the
 * "before" point is the same number in both). */
async function runJob(seed: number, arm: Arm): Promise<number[]> {
  gemmThreads(1);
  const params = arm === 'adapted' ? target : source;
  const r = await adapt({
    config: config(params, seed),
    envs,
    policy: await openBase(checkpoint, spec, fail),
    at,
    evalTasks: targetMaps,
    evalBudget: budget,
    onIter: (i, n, m) =>
      process.stderr.write(
        `seed ${seed} ${arm}: iteration ${i + 1}/${n}, success ${m['rollout/success'].toFixed(3)}, invalid ${(m['rollout/invalid_rate'] ?? 0).toFixed(3)}\n`,
      ),
  });
  return r.points.map((p) => p.success);
}

if (values.job !== undefined) {
  const [s, arm] = values.job.split(':');
  finishJob(await runJob(Number(s), arm as Arm));
}
await openBase(checkpoint, spec, fail);

const t0 = performance.now();
const load0 = loadavg()[0];
const { results: points, cpuSeconds: childCpu } = await runJobs<number[]>(
  seeds.flatMap((seed) => (['adapted', 'control'] as const).map((arm) => `${seed}:${arm}`)),
  jobs,
  fail,
);
const rows: AdaptRow[] = seeds.map((seed) => {
  const adapted = points.get(`${seed}:adapted`)!;
  const control = points.get(`${seed}:control`)!;
  if (adapted[0] !== control[0]) fail(`seed ${seed}: the two arms measured the clone differently`);
  process.stderr.write(
    `seed ${seed}: before ${adapted[0].toFixed(4)} adapted ${adapted
      .slice(1)
      .map((x) => x.toFixed(4))
      .join(' ')} control ${control
      .slice(1)
      .map((x) => x.toFixed(4))
      .join(' ')}\n`,
  );
  return { before: adapted[0], adapted: adapted.slice(1), control: control.slice(1) };
});
const summary = adaptCurve(at, seeds, rows);
const cpu = process.cpuUsage();
console.log(
  JSON.stringify({
    setting: {
      policy: {
        frozenlake: `transformer cloned on FrozenLake text, random 4x4 maps (${base})`,
        sql: `transformer cloned on sql level 1, domain ${from} (${base})`,
        web: `transformer cloned on web ${values.domain} level 1, variant ${from} (${base})`,
      }[world],
      world,
      source,
      target,
      budget,
      iters,
      groups,
      groupSize,
      seeds,
      heldOutMaps: maps,
      measure: 'sampled, one episode a map, the same episode seeds for every policy',
      optimal: world !== 'frozenlake' ? null : r4((await meanOptimalSuccess(envs, targetMaps, budget))!),
    },
    before: summary.before,
    curve: summary.curve,
    perSeed: summary.perSeed,
    wallSeconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
    // This process and its children, as each counted its own.
    cpuSeconds: Number((childCpu + (cpu.user + cpu.system) / 1e6).toFixed(1)),
    jobs,
    load: { start: r4(load0), end: r4(loadavg()[0]), cores: cpus().length },
  }),
);
