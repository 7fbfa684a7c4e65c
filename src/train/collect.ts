// Stages 1–3 of a policy-gradient iteration (train/loop.ts): the iteration's tasks and their K rollouts
// each (budgets fixed or from a schedule, guidance prefixes, cross-policy sampling); BREAD's replay of
// all-failure groups with an expert prefix; DAPO's refill of groups without outcome contrast. Every
// draw derives from (run seed, iteration), so a resumed run repeats them. The acting weights are the
// learner's, or — in the asynchronous pipeline (train/pipeline.ts) — its snapshot one update old.
import { Rng } from '../core/rng.ts';
import type { Task, Trajectory } from '../core/types.ts';
import { type DeadGroupReport as DeadGroups, deadGroups } from '../credit/index.ts';
import { rollout } from '../rollout/batch.ts';
import type { Prefix } from '../rollout/episode.ts';
import { CrossPolicy } from './cross-policy.ts';
import type { Learner } from './learner.ts';
import { budgetAt } from './schedule.ts';
import { drawTasks, guideKey, type Run, TRAIN_STREAM } from './setup.ts';

/** K rollouts of each task, with the iteration's budgets, prefixes and acting policy (`actor`'s) — in
 * this process, or on a queue's workers, which load the acting weights (published by hash, version = the
 * iteration): every episode of an iteration acts with the same weights, wherever it runs. */
async function rolloutGroups(
  r: Run,
  iter: number,
  tasks: Task[],
  runSeed: number,
  prefixes: Map<number, number> | undefined,
  actor: Learner,
): Promise<Trajectory[]> {
  const { s, config, stale } = r;
  const run =
    r.queue === undefined
      ? rollout
      : r.queue.runner({
          policy: { id: actor.policy.id, checkpoint: actor.checkpoint(s.spec) },
          version: iter,
        });
  return run({
    tasks,
    samples: config.groupSize,
    budget: (task, sample) => budgetAt(config.budget, config.seed, iter, task.seed, sample),
    revealBudget: s.revealBudget,
    runSeed,
    policy: stale ? new CrossPolicy(actor.policy, stale.policy, config.crossPolicy.q) : actor.policy,
    makeEnv: s.envs.make,
    idPrefix: `i${iter}-`,
    prefix:
      prefixes === undefined
        ? undefined
        : (task): Prefix<unknown> | undefined => {
            const L = prefixes.get(task.seed) ?? 0;
            return L > 0 ? { policy: s.expert!(task), turns: L } : undefined;
          },
  });
}

/** Guidance: a prefix length for a task, drawn around its logged difficulty. */
function prefixFor(r: Run, iter: number, task: Task): number {
  return r.guide!.samplePrefix(
    guideKey(r.s, task),
    Rng.derive(r.config.seed, TRAIN_STREAM.prefix, iter, task.seed),
  );
}

/** Stage 1: the iteration's tasks and their groups. Gaussian guidance gives every task a prefix. */
export async function collect(
  r: Run,
  iter: number,
  actor: Learner = r.s.learner,
): Promise<{ tasks: Task[]; batch: Trajectory[]; prefixes?: Map<number, number> }> {
  const { s, config } = r;
  const tasks = drawTasks(
    s.env,
    config.trainSeeds,
    config.groups,
    Rng.derive(config.seed, TRAIN_STREAM.tasks, iter),
  );
  const prefixes =
    r.guide && config.guidance.mode === 'gaussian'
      ? new Map(tasks.map((t) => [t.seed, prefixFor(r, iter, t)]))
      : undefined;
  const batch = await rolloutGroups(
    r,
    iter,
    tasks,
    Rng.derive(config.seed, TRAIN_STREAM.rollout, iter).uint32(),
    prefixes,
    actor,
  );
  return { tasks, batch, prefixes };
}

/** Stage 2 (BREAD): groups that came back all-failure are replayed with an expert prefix of ≥ 1 turn;
 * the guide logs every group's successes first. Returns the batch and the number of replayed groups. */
export async function replayDeadGroups(
  r: Run,
  iter: number,
  batch: Trajectory[],
  first: DeadGroups,
): Promise<{ batch: Trajectory[]; guided: number }> {
  const { s, config, guide } = r;
  if (guide === undefined) return { batch, guided: 0 };
  for (const g of first.groups) {
    const group = g.indices.map((i) => batch[i]);
    guide.record(guideKey(s, group[0].task), group.filter((t) => t.outcome.success).length, group.length);
  }
  if (config.guidance.mode !== 'bread') return { batch, guided: 0 };
  const failed = first.groups.filter(
    (g, k) => first.dead[k] && g.indices.every((i) => !batch[i].outcome.success),
  );
  if (failed.length === 0) return { batch, guided: 0 };
  const again = await rolloutGroups(
    r,
    iter,
    failed.map((g) => batch[g.indices[0]].task),
    Rng.derive(config.seed, TRAIN_STREAM.bread, iter).uint32(),
    new Map(
      failed.map((g) => [
        batch[g.indices[0]].task.seed,
        Math.max(1, prefixFor(r, iter, batch[g.indices[0]].task)),
      ]),
    ),
    s.learner,
  );
  const replayed = [...batch];
  failed.forEach((g, k) => {
    g.indices.forEach((i, j) => {
      replayed[i] = again[k * config.groupSize + j];
    });
  });
  return { batch: replayed, guided: failed.length };
}

/** Stage 3 (DAPO dynamic sampling): drop groups without outcome contrast, refill with fresh tasks. */
export async function refill(
  r: Run,
  iter: number,
  tasks: Task[],
  batch: Trajectory[],
  prefixes?: Map<number, number>,
  actor: Learner = r.s.learner,
): Promise<{ batch: Trajectory[]; refills: number }> {
  const { s, config } = r;
  if (!config.dynamicSampling.enabled) return { batch, refills: 0 };
  const live = (b: Trajectory[]) => {
    const d = deadGroups(b);
    return d.groups.filter((_, k) => !d.dead[k]).flatMap((g) => g.indices.map((i) => b[i]));
  };
  let kept = live(batch);
  let refills = 0;
  const used = new Set(tasks.map((t) => t.seed));
  for (let round = 0; round < config.dynamicSampling.maxRounds && kept.length < batch.length; round++) {
    const need = config.groups - kept.length / config.groupSize;
    const rng = Rng.derive(config.seed, TRAIN_STREAM.refill, iter, round);
    const more = drawTasks(s.env, config.trainSeeds, need, rng, used);
    for (const t of more) used.add(t.seed);
    refills += need;
    const mp = prefixes && new Map(more.map((t) => [t.seed, prefixFor(r, iter, t)]));
    kept = kept.concat(live(await rolloutGroups(r, iter, more, rng.uint32(), mp, actor)));
  }
  return { batch: kept.length > 0 ? kept : batch, refills };
}

/** What stages 1–3 gather for an iteration: its batch, the dead groups of its first collection, the
 * groups refilled and replayed. */
export interface Gathered {
  batch: Trajectory[];
  first: DeadGroups;
  refills: number;
  guided: number;
}

/** Stages 1–3 in order (collect, BREAD's replay, DAPO's refill), every rollout acted by `actor`. */
export async function gather(r: Run, iter: number, actor: Learner = r.s.learner): Promise<Gathered> {
  const collected = await collect(r, iter, actor);
  const first = deadGroups(collected.batch);
  const replayed = await replayDeadGroups(r, iter, collected.batch, first);
  const { batch, refills } = await refill(
    r,
    iter,
    collected.tasks,
    replayed.batch,
    collected.prefixes,
    actor,
  );
  return { batch, first, refills, guided: replayed.guided };
}
