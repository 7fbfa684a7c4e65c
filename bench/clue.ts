// Clue credit (issue 29 item 4) and the information gain on search (item 3's last part;
// docs/methods-measured.md "Clue credit on search"), on the search env's choice variant
// (params {mode: 'choose'}: 6 calls a turn, an MLP's features).
// Part 1, fidelity: a fixed behaviour policy (ε-gold: the gold path's call with probability q, else a
// uniform slot) plays groups of G samples per task under budget T; each turn's reference is its true
// advantage under that policy, A^π(s_t, a_t) = Q^π(s_t, a_t) − V^π(s_t), estimated by M continuations from
// the env's snapshot at s_t (a_t forced, then π; and π from the start), each continuation's offers drawn
// from a fresh seed. Every method's credit is scored against it as `credit fidelity` scores against
// the exact advantage (Pearson, Spearman, sign agreement over every turn); clue − grpo paired over seeds.
// Part 2, training: GRPO, clue credit, and GRPO with `--info-gain W` train an MLP from the same seeds;
// each policy then plays held-out tasks under the true reward: success, turns, and the paired
// differences (method − grpo) with their mean and 95% t-interval over seeds. One JSON object.
//   node --import tsx bench/clue.ts [--seeds 1,2,3] [--iters 100] [--weight 0.5] [--episodes 400]
import { Rng } from '../src/core/rng.ts';
import type { Trajectory, Turn } from '../src/core/types.ts';
import { creditBatch, fidelity, type MethodName, methodOptions } from '../src/credit/index.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../src/envs/index.ts';
import { goldCall, type SearchChoiceEnv, type SearchChoiceObservation } from '../src/envs/search/index.ts';
import { rollout } from '../src/rollout/batch.ts';
import { parseTrainConfig } from '../src/train/config.ts';
import { trainPolicyGradient } from '../src/train/loop.ts';
import { benchArgs } from './args.ts';
import { paired, r4 } from './paired.ts';

const { values } = benchArgs('bench/clue.ts', {
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    iters: { type: 'string', default: '100' },
    weight: { type: 'string', default: '0.5' },
    episodes: { type: 'string', default: '400' },
    'fidelity-tasks': { type: 'string', default: '8' },
    continuations: { type: 'string', default: '16' },
  },
});
const seeds = values.seeds.split(',').map(Number);
const iters = Number(values.iters);
const weight = Number(values.weight);
const episodes = Number(values.episodes);
const fidelityTasks = Number(values['fidelity-tasks']);
const M = Number(values.continuations);
const PARAMS = { mode: 'choose' };
const BUDGET = 20;
const FID_BUDGET = 12;
const G = 8;
const Q_GOLD = 0.5;
const METHODS: MethodName[] = ['grpo', 'rloo', 'gigpo', 'turn-level', 'reverse-turn', 'clue'];
const log = (s: string) => process.stderr.write(`${s}\n`);
const cpu0 = process.cpuUsage();
const t0 = performance.now();

// ── Part 1: credit fidelity against the Monte Carlo A^π of an ε-gold policy ────────────────────────

type Env = SearchChoiceEnv;
const act = (env: Env, o: SearchChoiceObservation, rng: Rng): number => {
  if (rng.float() < Q_GOLD) {
    const g = JSON.stringify(goldCall(env.world, new Set(env.clues)));
    return o.slots.findIndex((c) => JSON.stringify(c) === g);
  }
  return rng.int(o.slots.length);
};

/** π from the env's current state with `left` turns; the first action forced when given. Returns R. */
function continueFrom(env: Env, o: SearchChoiceObservation, left: number, rng: Rng, first?: number): number {
  let obs = o;
  for (let k = 0; k < left; k++) {
    const r = env.step(k === 0 && first !== undefined ? first : act(env, obs, rng));
    obs = r.observation;
    if (r.terminated) return r.reward;
  }
  return 0;
}

function fidelityPart(seed: number) {
  const tasks = makeTasks(envConfig('search', PARAMS), fidelityTasks, 70_000_000 + seed * 1000);
  const batch: Trajectory[] = [];
  const reference: number[][] = [];
  for (const task of tasks)
    for (let i = 0; i < G; i++) {
      const env = makeEnv(task) as unknown as Env;
      const rng = Rng.derive(seed, task.seed, i, 0xc1);
      let o = env.reset(Rng.derive(seed, task.seed, i, 0xe5).uint32());
      const turns: Turn[] = [];
      const ref: number[] = [];
      let ret = 0;
      let success = false;
      let end: 'terminated' | 'truncated' = 'truncated';
      for (let t = 0; t < FID_BUDGET; t++) {
        const a = act(env, o, rng);
        // A^π(s_t, a_t): M continuations with a_t forced and M with π's own first action, from s_t.
        const snap = env.snapshot();
        let q = 0;
        let v = 0;
        for (let m = 0; m < M; m++) {
          const mr = Rng.derive(seed, task.seed, i, t, m);
          env.restore(snap, mr.uint32());
          q += continueFrom(env, o, FID_BUDGET - t, mr, a);
          env.restore(snap, mr.uint32());
          v += continueFrom(env, o, FID_BUDGET - t, mr);
        }
        env.restore(snap);
        ref.push((q - v) / M);
        const r = env.step(a);
        turns.push({ t, observation: o, action: a, reward: r.reward, logp: 0, info: r.info });
        ret += r.reward;
        o = r.observation;
        if (r.terminated) {
          success = r.info.success === true;
          end = 'terminated';
          break;
        }
      }
      batch.push({
        id: `f${seed}-${task.seed}-${i}`,
        task,
        policy: `eps-gold:${Q_GOLD}`,
        budget: FID_BUDGET,
        revealBudget: false,
        turns,
        outcome: {
          success,
          return: ret,
          turns: turns.length,
          firstSuccessTurn: success ? turns.length : null,
          end,
          failure: success ? null : end === 'truncated' ? 'budget' : 'wrong-answer',
        },
      });
      reference.push(ref);
    }
  const scores: Record<string, { pearson: number; spearman: number; sign: number }> = {};
  for (const m of METHODS) {
    const f = fidelity(creditBatch(batch, m, methodOptions(m, {})), reference);
    scores[m] = {
      pearson: r4(f.pearson ?? 0),
      spearman: r4(f.spearman ?? 0),
      sign: r4(f.signAgreement ?? 0),
    };
  }
  const turns = batch.reduce((a, t) => a + t.turns.length, 0);
  const success = batch.filter((t) => t.outcome.success).length / batch.length;
  return { scores, turns, success };
}

const fid: ReturnType<typeof fidelityPart>[] = [];
for (const seed of seeds) {
  fid.push(fidelityPart(seed));
  log(`fidelity seed ${seed}: ${JSON.stringify(fid.at(-1)?.scores.clue)}`);
}

// ── Part 2: training GRPO, clue credit, GRPO + info gain ──────────────────────────────────────────

const heldOut = makeTasks(envConfig('search', PARAMS), Math.ceil(episodes / 2), 50_000_000);
type Arm = 'grpo' | 'clue' | 'infoGain';
const ARMS: Arm[] = ['grpo', 'clue', 'infoGain'];
interface Result {
  success: number;
  turns: number;
  turnsOnSuccess: number;
  redundant: number;
  cpuSeconds: number;
}
const arms: Record<Arm, Result[]> = { grpo: [], clue: [], infoGain: [] };

async function evaluate(policy: Parameters<typeof rollout>[0]['policy']) {
  const ts = await rollout({ tasks: heldOut, samples: 2, policy, makeEnv, budget: BUDGET, runSeed: 777 });
  const wins = ts.filter((t) => t.outcome.success);
  let redundant = 0;
  let all = 0;
  for (const t of ts)
    for (const turn of t.turns) {
      all++;
      if (turn.info.redundant === true) redundant++;
    }
  return {
    success: wins.length / ts.length,
    turns: ts.reduce((a, t) => a + t.outcome.turns, 0) / ts.length,
    turnsOnSuccess: wins.reduce((a, t) => a + t.outcome.turns, 0) / Math.max(1, wins.length),
    redundant: redundant / Math.max(1, all),
  };
}

for (const seed of seeds)
  for (const arm of ARMS) {
    const c0 = process.cpuUsage();
    const config = parseTrainConfig({
      env: envConfig('search', PARAMS),
      policy: { kind: 'mlp', hidden: [32] },
      iters,
      groups: 16,
      groupSize: G,
      budget: { kind: 'fixed', budget: BUDGET },
      eval: { episodes: 1 },
      seed,
      credit: { method: arm === 'clue' ? 'clue' : 'grpo' },
      ...(arm === 'infoGain' ? { infoGain: weight } : {}),
    });
    const r = await trainPolicyGradient({ config, envs });
    const c = process.cpuUsage(c0);
    arms[arm].push({ ...(await evaluate(r.policy)), cpuSeconds: (c.user + c.system) / 1e6 });
    log(`seed ${seed} ${arm}: ${JSON.stringify(arms[arm].at(-1))}`);
  }

type K = 'success' | 'turns' | 'turnsOnSuccess' | 'redundant';
const mean = (arm: Arm, k: K) => r4(arms[arm].reduce((a, x) => a + x[k], 0) / arms[arm].length);
const diff = (arm: Arm, k: K) => paired(seeds.map((_, i) => arms[arm][i][k] - arms.grpo[i][k]));
const fmean = (m: string, k: 'pearson' | 'spearman' | 'sign') =>
  r4(fid.reduce((a, f) => a + f.scores[m][k], 0) / fid.length);
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    setting: {
      env: 'search',
      params: PARAMS,
      policy: 'mlp:hidden=32',
      iters,
      groups: 16,
      groupSize: G,
      budget: BUDGET,
      weight,
      seeds,
      heldOutEpisodes: heldOut.length * 2,
      fidelity: {
        behaviour: `eps-gold q=${Q_GOLD}`,
        budget: FID_BUDGET,
        tasks: fidelityTasks,
        groupSize: G,
        continuations: M,
      },
    },
    fidelity: {
      turns: fid.map((f) => f.turns),
      behaviourSuccess: fid.map((f) => r4(f.success)),
      mean: Object.fromEntries(
        METHODS.map((m) => [
          m,
          { pearson: fmean(m, 'pearson'), spearman: fmean(m, 'spearman'), sign: fmean(m, 'sign') },
        ]),
      ),
      clueMinusGrpo: {
        pearson: paired(fid.map((f) => f.scores.clue.pearson - f.scores.grpo.pearson)),
        spearman: paired(fid.map((f) => f.scores.clue.spearman - f.scores.grpo.spearman)),
      },
    },
    training: Object.fromEntries(
      ARMS.map((a) => [
        a,
        {
          success: mean(a, 'success'),
          turns: mean(a, 'turns'),
          turnsOnSuccess: mean(a, 'turnsOnSuccess'),
          redundant: mean(a, 'redundant'),
        },
      ]),
    ),
    perSeed: seeds.map((s, i) => ({
      seed: s,
      ...Object.fromEntries(
        ARMS.map((a) => [a, { success: r4(arms[a][i].success), turns: r4(arms[a][i].turns) }]),
      ),
    })),
    difference: {
      clue: { success: diff('clue', 'success'), turns: diff('clue', 'turns') },
      infoGain: { success: diff('infoGain', 'success'), turns: diff('infoGain', 'turns') },
    },
    trainCpuSeconds: r4(ARMS.reduce((a, arm) => a + arms[arm].reduce((b, x) => b + x.cpuSeconds, 0), 0)),
    seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
    cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(1)),
  }),
);
