// turnwise calc compound | dead-groups | tokens — the seeds' closed forms (docs/methods.md §1), each with an
// optional seeded Monte-Carlo check (--simulate [N]); calc shaping — reward shaping measured by exact DP on
// FrozenLake (docs/shaping.md); calc fog — the belief MDP's exact value under fog and the fully observed
// bound (docs/methods-measured.md).
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { Rng } from '../../core/rng.ts';
import { DEFAULT_SUCCESS_RATE, FrozenLakeWorld, REGISTERED_LIMIT } from '../../envs/frozenlake/env.ts';
import { generateRandomMap, parseMap } from '../../envs/frozenlake/map.ts';
import { FogLimitError, fogReport } from '../../theory/fog.ts';
import {
  compound,
  DEFAULT_BASELINE_TOKENS,
  DEFAULT_SHAPING_COEF,
  deadGroupOdds,
  measureShaping,
  SHAPINGS,
  type ShapingKind,
  simulateCompound,
  simulateDeadGroups,
  tokenBudget,
} from '../../theory/index.ts';
import { fmt, json, out, table } from '../io.ts';
import { int, num, probability, seed } from '../options.ts';
import { ABOUT } from './about.ts';

const DEFAULT_SAMPLES = 100_000;
/** Keys the Monte-Carlo stream apart from any rollout stream of the same seed. */
const THEORY_STREAM = 0x7e0;

function samplesOf(raw: string | boolean | undefined): number | undefined {
  if (raw === undefined || raw === false) return undefined;
  return raw === true ? DEFAULT_SAMPLES : int('--simulate', raw, 1, 100_000_000);
}

/** Six decimals, or three significant digits in exponent form for tiny values (p^G is often ~1e-11). */
const f6 = (x: number): string => (x !== 0 && Math.abs(x) < 1e-4 ? x.toExponential(3) : fmt(x, 6));

function uniform(runSeed: number): () => number {
  const rng = Rng.derive(runSeed, THEORY_STREAM);
  return () => rng.float();
}

export function registerCalc(program: Command): void {
  const calc = program.command('calc').description(ABOUT.calc.description);

  calc
    .command('compound')
    .description('P(success) of n turns each right with probability q: q^n')
    .requiredOption('--q <q>', 'per-turn correctness in [0, 1]')
    .requiredOption('--n <n>', 'number of turns')
    .option('--simulate [N]', `check by Monte Carlo over N episodes (default ${DEFAULT_SAMPLES})`)
    .option('--seed <n>', 'seed of the simulation', '0')
    .option('--json', 'machine-readable output')
    .action((flags: { q: string; n: string; simulate?: string | boolean; seed: string; json?: boolean }) => {
      const q = probability('--q', flags.q);
      const n = int('--n', flags.n, 0, 1_000_000);
      const samples = samplesOf(flags.simulate);
      const runSeed = seed(flags.seed);
      const value = compound(q, n);
      const sim =
        samples === undefined
          ? undefined
          : { ...simulateCompound(q, n, samples, uniform(runSeed)), samples, seed: runSeed };
      if (flags.json) return json(sim === undefined ? { value } : { value, simulated: sim });
      out(`${q}^${n} = ${value}`);
      if (sim)
        out(`simulated: ${fmt(sim.value, 6)} ± ${fmt(sim.stdErr, 6)} (${samples} episodes, seed ${runSeed})`);
    });

  calc
    .command('dead-groups')
    .description('odds that a group of G samples with success rate p has no outcome contrast')
    .requiredOption('--p <p>', 'success rate per sample in [0, 1]')
    .requiredOption('--G <G>', 'group size (samples per task)')
    .option('--batch <B>', 'trajectories per batch, a multiple of G (default G: one group)')
    .option('--simulate [N]', `check by Monte Carlo over N batches (default ${DEFAULT_SAMPLES})`)
    .option('--seed <n>', 'seed of the simulation', '0')
    .option('--json', 'machine-readable output')
    .action(
      (flags: {
        p: string;
        G: string;
        batch?: string;
        simulate?: string | boolean;
        seed: string;
        json?: boolean;
      }) => {
        const p = probability('--p', flags.p);
        const G = int('--G', flags.G, 1, 1_000_000);
        const batch = flags.batch === undefined ? G : int('--batch', flags.batch, 1, 100_000_000);
        if (batch % G !== 0) throw new InputError('--batch', flags.batch, `expected a multiple of --G ${G}`);
        const samples = samplesOf(flags.simulate);
        const runSeed = seed(flags.seed);
        const odds = deadGroupOdds(p, G, batch);
        const sim =
          samples === undefined
            ? undefined
            : { ...simulateDeadGroups(p, G, batch, samples, uniform(runSeed)), samples, seed: runSeed };
        if (flags.json) return json(sim === undefined ? odds : { ...odds, simulated: sim });
        out(`p = ${p}, G = ${G}, batch ${batch} = ${batch / G} groups`);
        const rows: (string | number)[][] = [
          sim ? ['quantity', 'closed form', 'simulated', '± std.err'] : ['quantity', 'closed form'],
        ];
        for (const key of Object.keys(odds) as (keyof typeof odds)[]) {
          const est = sim && key !== 'poisson' ? sim[key] : undefined;
          rows.push(
            sim
              ? [key, f6(odds[key]), est ? f6(est.value) : '', est ? f6(est.stdErr) : '']
              : [key, f6(odds[key])],
          );
        }
        out(table(rows));
      },
    );

  calc
    .command('tokens')
    .description('decode tokens of a run: per trajectory × batch × steps, against a single-turn baseline')
    .requiredOption('--per-trajectory <N>', 'tokens per trajectory')
    .requiredOption('--batch <B>', 'trajectories per step')
    .requiredOption('--steps <S>', 'training steps')
    .option('--baseline <N>', 'tokens per trajectory of the baseline', String(DEFAULT_BASELINE_TOKENS))
    .option('--json', 'machine-readable output')
    .action(
      (flags: { perTrajectory: string; batch: string; steps: string; baseline: string; json?: boolean }) => {
        const t = tokenBudget(
          int('--per-trajectory', flags.perTrajectory, 1),
          int('--batch', flags.batch, 1),
          int('--steps', flags.steps, 1),
          int('--baseline', flags.baseline, 1),
        );
        if (!Number.isSafeInteger(t.totalTokens))
          throw new InputError('--per-trajectory', flags.perTrajectory, 'the product exceeds 2^53 tokens');
        if (flags.json) return json(t);
        out(
          table([
            ['per trajectory', 'batch', 'steps', 'total tokens', `vs ${t.baseline}-token baseline`],
            [t.perTrajectory, t.batch, t.steps, t.totalTokens.toExponential(3), `${fmt(t.vsBaseline, 1)}×`],
          ]),
        );
      },
    );

  calc
    .command('shaping')
    .description(
      'reward shaping on FrozenLake by exact DP: the shaped-optimal policy judged by the true reward (docs/shaping.md)',
    )
    .option('--map <map>', '4x4, 8x8 or rows such as SFFF,FHFH,FFFH,HFFG (default 4x4)')
    .option('--random', 'a random valid map drawn from --size, --p and --seed')
    .option('--size <n>', 'side of the random map (default 4)')
    .option('--p <p>', 'probability that a random cell is frozen (default 0.8)')
    .option('--seed <n>', 'seed of the random map (default 0)')
    .option('--slippery', 'slippery ice (success rate 1/3)')
    .option('--budget <T>', `turn budget: the horizon of every DP (default ${REGISTERED_LIMIT})`)
    .option('--kinds <list>', `shapings measured, comma-separated (default ${SHAPINGS.join(',')})`)
    .option(
      '--coef <list>',
      `coefficients c, comma-separated; each kind at each (default ${DEFAULT_SHAPING_COEF})`,
    )
    .option('--json', 'machine-readable output')
    .action(
      (flags: {
        map?: string;
        random?: boolean;
        size?: string;
        p?: string;
        seed?: string;
        slippery?: boolean;
        budget?: string;
        kinds?: string;
        coef?: string;
        json?: boolean;
      }) => {
        let desc: string[];
        if (flags.random) {
          if (flags.map !== undefined)
            throw new InputError('--map', flags.map, 'a map cannot be given together with --random');
          desc = generateRandomMap(
            flags.size === undefined ? 4 : int('--size', flags.size, 2, 64),
            flags.p === undefined
              ? 0.8
              : num('--p', flags.p, (x) => x > 0 && x <= 1, 'a probability in (0, 1]'),
            flags.seed === undefined ? 0 : seed(flags.seed),
          );
        } else {
          for (const k of ['size', 'p', 'seed'] as const)
            if (flags[k] !== undefined) throw new InputError(`--${k}`, flags[k], `--${k} goes with --random`);
          desc = parseMap(flags.map ?? '4x4');
        }
        const budget =
          flags.budget === undefined ? REGISTERED_LIMIT : int('--budget', flags.budget, 1, 10_000);
        const kinds = (flags.kinds ?? SHAPINGS.join(',')).split(',').map((k) => k.trim());
        for (const k of kinds)
          if (!(SHAPINGS as readonly string[]).includes(k))
            throw new InputError(
              '--kinds',
              flags.kinds,
              `expected a comma-separated list of ${SHAPINGS.join(', ')}`,
            );
        const coefs = (flags.coef ?? String(DEFAULT_SHAPING_COEF))
          .split(',')
          .map((raw) =>
            num(
              '--coef',
              raw.trim() === '' ? flags.coef : raw,
              Number.isFinite,
              'comma-separated finite numbers',
            ),
          );
        const world = new FrozenLakeWorld({
          desc,
          slippery: flags.slippery === true,
          successRate: DEFAULT_SUCCESS_RATE,
        });
        const shapings = (kinds as ShapingKind[]).flatMap((kind) => coefs.map((coef) => ({ kind, coef })));
        const report = measureShaping(world, budget, shapings);
        if (flags.json) return json({ map: desc, slippery: flags.slippery === true, ...report });
        out(
          `${desc.join(',')}${flags.slippery ? ' slippery' : ''}, budget ${budget}: true optimum V*_${budget}(start) = ${fmt(report.optimum, 6)}; ${report.cells} non-terminal cells`,
        );
        const rows: (string | number)[][] = [
          ['shaping', 'coef', 'potential', 'changed', 'of (h,s)', 'share', 'true success', 'optimum', 'loss'],
        ];
        for (const r of report.rows) {
          if (r.skipped !== undefined) {
            rows.push([
              r.kind,
              r.coef,
              r.potentialBased ? 'yes' : 'no',
              '-',
              '-',
              '-',
              '-',
              fmt(r.optimum, 6),
              `not exact: ${r.skipped}`,
            ]);
            continue;
          }
          rows.push([
            r.kind,
            r.coef,
            r.potentialBased ? 'yes' : 'no',
            r.changed,
            r.states,
            `${(100 * r.changedShare).toFixed(1)}%`,
            fmt(r.success, 6),
            fmt(r.optimum, 6),
            f6(r.loss),
          ]);
        }
        out(table(rows));
      },
    );

  calc
    .command('fog')
    .description(
      'FrozenLake under fog by exact DP: the Bayes-optimal success that sees only the revealed map (the belief MDP over the hidden cells) and the fully observed oracle, an upper bound (docs/methods-measured.md)',
    )
    .option(
      '--size <n>',
      'side of the random map: S top left, G bottom right (default 4; at most 20 hidden cells, so at most 4)',
    )
    .option(
      '--p <p>',
      "the prior: each hidden cell frozen with probability p, given a valid map (the generator's; default 0.8)",
    )
    .option('--fog <R>', 'the fog radius: cells within Chebyshev distance R are seen (default 1)')
    .option('--budget <T>', 'turn budget (default 8)')
    .option('--slippery', 'slippery ice (success rate 1/3)')
    .option('--json', 'machine-readable output')
    .action(
      (flags: {
        size?: string;
        p?: string;
        fog?: string;
        budget?: string;
        slippery?: boolean;
        json?: boolean;
      }) => {
        const size = flags.size === undefined ? 4 : int('--size', flags.size, 2, 64);
        const p =
          flags.p === undefined
            ? 0.8
            : num('--p', flags.p, (x) => x > 0 && x <= 1, 'a probability in (0, 1]');
        const radius = flags.fog === undefined ? 1 : int('--fog', flags.fog, 1, 64);
        const budget = flags.budget === undefined ? 8 : int('--budget', flags.budget, 1, 100);
        let report: ReturnType<typeof fogReport>;
        try {
          report = fogReport(size, radius, p, budget, flags.slippery === true);
        } catch (e) {
          if (e instanceof FogLimitError)
            throw e.limit === 'cells'
              ? new InputError('--size', flags.size ?? String(size), e.message)
              : new InputError('--budget', flags.budget ?? String(budget), e.message);
          throw e;
        }
        if (flags.json) return json(report);
        out(
          `${size}x${size} random maps (p ${p}, ${report.hidden} hidden cells, ${report.maps} valid maps)${report.slippery ? ' slippery' : ''}, fog ${radius}, budget ${budget}`,
        );
        out(
          table([
            ['', 'success'],
            ['under fog (belief MDP, exact)', fmt(report.fog, 6)],
            ['fully observed oracle (upper bound)', fmt(report.oracle, 6)],
            // The bound minus the value; float dust below 1e-12 is 0, not −0.000000.
            ['the price of the fog', fmt(Math.max(0, report.oracle - report.fog), 6)],
          ]),
        );
        out(
          `belief entropy after the first window: ${fmt(report.entropy, 3)} bits; ${report.states} belief states`,
        );
      },
    );
}
