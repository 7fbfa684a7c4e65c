// turnwise train-pair — two agents, one outcome (docs/two-agent.md): a planner that picks a waypoint on a
// FrozenLake map and an executor that walks, trained together with per-agent credit (train/pair-run.ts).
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { AGENT_CREDITS, type AgentCredit } from '../../credit/agents.ts';
import { envs } from '../../envs/index.ts';
import { searchPairEnvs } from '../../envs/search/index.ts';
import { checkOutput } from '../../store/paths.ts';
import { PAIR_DEFAULTS, type PairConfig } from '../../train/pair.ts';
import { type AgentSource, runPair, runSearchPair, type SearchPlannerSource } from '../../train/pair-run.ts';
import {
  SEARCH_PAIR_DEFAULTS,
  type SearchLevelParam,
  type SearchPairConfig,
} from '../../train/pair-search.ts';
import { fmt, interactive, json, out, table, warn } from '../io.ts';
import { int, intList, level as levelFlag, num, seed } from '../options.ts';
import { ABOUT } from './about.ts';

interface PairFlags {
  env: string;
  level?: string;
  planner: string;
  executor: string;
  credit: string;
  size: string;
  p: string;
  slippery?: boolean;
  budget?: string;
  sight: string;
  iters: string;
  groups: string;
  groupSize: string;
  hidden: string;
  lr: string;
  evalMaps: string;
  seed: string;
  out?: string;
  json?: boolean;
}

function source(flag: '--planner' | '--executor', raw: string): AgentSource {
  if (raw === 'mlp') return 'mlp';
  if (raw === 'goal') {
    if (flag === '--executor') throw new InputError(flag, raw, 'expected mlp or a network file');
    return 'goal';
  }
  if (raw.trim() === '') throw new InputError(flag, raw, 'expected mlp, goal or a network file');
  return { file: raw };
}

/** Hidden widths: comma-separated integers from 1 to 4096. */
function widths(raw: string): number[] {
  const w = intList('--hidden', raw, 1);
  if (w.some((x) => x > 4096)) throw new InputError('--hidden', raw, 'expected widths from 1 to 4096');
  return w;
}

/** The training loop's flags, the same for both envs (read after each env's own, in this order). */
function loopFlags(f: PairFlags) {
  return {
    iters: int('--iters', f.iters, 1, 100_000),
    groups: int('--groups', f.groups, 1, 100_000),
    groupSize: int('--group-size', f.groupSize, 1, 10_000),
    hidden: widths(f.hidden),
    lr: num('--lr', f.lr, (x) => x > 0 && x < 10, 'a step size in (0, 10)'),
    seed: seed(f.seed),
  };
}

/** --out must not be a network file either agent reads. */
function checkPairOut(
  out: string | undefined,
  planner: AgentSource | SearchPlannerSource,
  executor: AgentSource,
): void {
  const file = (a: AgentSource | SearchPlannerSource) => (typeof a === 'object' ? a.file : undefined);
  if (out !== undefined)
    checkOutput(out, '--out', 'dir', [
      ['--planner', file(planner)],
      ['--executor', file(executor)],
    ]);
}

export function registerTrainPair(program: Command): void {
  const d = PAIR_DEFAULTS;
  program
    .command('train-pair')
    .description(ABOUT['train-pair'].description)
    .option(
      '--env <env>',
      'frozenlake: the planner picks a waypoint, the executor walks; search: the planner writes how many hops the question takes, the executor makes the calls (the choice variant)',
      'frozenlake',
    )
    .option('--level <hops>', "search: the questions' hops, 1, 2, 3 or mixed", 'mixed')
    .option(
      '--planner <kind>',
      'mlp: trained; FILE: a planner network written by --out, fixed; frozenlake: goal, fixed, the waypoint is the goal (straight to it); search: level, fixed to the hops the question states, or 1, 2, 3, a constant plan',
      'mlp',
    )
    .option('--executor <kind>', 'mlp: trained; FILE: an executor network written by --out, fixed', 'mlp')
    .option(
      '--credit <method>',
      "shared: both agents get the team's GRPO outcome; per-agent: the planner its choice's (waypoint's or plan's) mean outcome, the executor GRPO among the episodes of its choice; counterfactual: the planner R − Σ_c π(c)·R(c) over replays of every choice, the executor the team's",
      'shared',
    )
    .option('--size <n>', 'frozenlake: side of the random maps', String(d.size))
    .option('--p <p>', 'frozenlake: probability that a cell is frozen', String(d.p))
    .option('--slippery', 'frozenlake: slippery ice (success rate 1/3)')
    .option(
      '--budget <T>',
      `turns of both agents: the planner's one and T − 1 executor steps (default frozenlake ${d.budget}, search ${SEARCH_PAIR_DEFAULTS.budget})`,
    )
    .option(
      '--sight <R>',
      'frozenlake: the executor sees the holes within Chebyshev distance R of its cell (0: the whole map; the planner sees it all)',
      String(d.sight),
    )
    .option('--iters <n>', 'training iterations', String(d.iters))
    .option('--groups <n>', 'maps (search: questions) per iteration', String(d.groups))
    .option('--group-size <n>', 'episodes per map or question (the group of credit)', String(d.groupSize))
    .option('--hidden <sizes>', 'hidden widths of both networks', d.hidden.join(','))
    .option('--lr <lr>', "Adam's step size", String(d.lr))
    .option(
      '--eval-maps <n>',
      'held-out maps (search: questions) of the final evaluation (4 episodes each)',
      '200',
    )
    .option('--seed <n>', 'run seed', String(d.seed))
    .option(
      '--out <dir>',
      'write planner.safetensors, executor.safetensors, trajectories.jsonl, summary.json',
    )
    .option('--json', 'machine-readable output')
    .action((f: PairFlags, cmd: Command) => {
      if (f.env === 'search') return searchPair(f, cmd);
      if (f.env !== 'frozenlake') throw new InputError('--env', f.env, 'expected frozenlake or search');
      if (cmd.getOptionValueSource('level') === 'cli')
        throw new InputError(
          '--level',
          f.level ?? '',
          'only with --env search (frozenlake maps have --size, --p)',
        );
      if (/^(level|[123])$/.test(f.planner))
        throw new InputError(
          '--planner',
          f.planner,
          'expected mlp, goal or a network file (level and 1, 2, 3 are search plans)',
        );
      const planner = source('--planner', f.planner);
      const executor = source('--executor', f.executor) as Exclude<AgentSource, 'goal'>;
      if (!AGENT_CREDITS.includes(f.credit as AgentCredit))
        throw new InputError('--credit', f.credit, `expected ${AGENT_CREDITS.join(', ')}`);
      if (planner === 'goal' && executor !== 'mlp')
        throw new InputError('--executor', f.executor, 'with --planner goal the executor is trained: mlp');
      const config: PairConfig = {
        ...d,
        credit: f.credit as AgentCredit,
        size: int('--size', f.size, 2, 8),
        p: num('--p', f.p, (x) => x > 0 && x <= 1, 'a probability in (0, 1]'),
        slippery: f.slippery === true,
        budget: int('--budget', f.budget ?? String(d.budget), 2, 1000),
        sight: int('--sight', f.sight, 0, 8),
        ...loopFlags(f),
      };
      const evalMaps = int('--eval-maps', f.evalMaps, 1, 1_000_000);
      checkPairOut(f.out, planner, executor);
      const r = runPair(envs, {
        config,
        planner,
        executor,
        evalMaps,
        evalSamples: 4,
        out: f.out,
        onIter: interactive()
          ? (m) =>
              warn(
                `iter ${m.iter + 1}/${config.iters}: success ${fmt(m['rollout/success'], 3)}, waypoint on a hole ${fmt(m['planner/hole'], 3)}`,
              )
          : undefined,
      });
      if (f.json) return json(r);
      const role = (name: string, trained: boolean) => `${name} (${trained ? 'trained' : 'fixed'})`;
      out(
        `pair on frozenlake ${config.size}x${config.size} random maps (p ${config.p}${config.slippery ? ', slippery' : ''}): planner ${role(r.planner, r.trained.planner)}, executor ${role(r.executor, r.trained.executor)}`,
      );
      out(
        `credit ${config.credit}; ${config.iters} iterations of ${config.groups} maps × ${config.groupSize}; budget ${config.budget} (the planner's turn, then ${config.budget - 1} steps)`,
      );
      const e = r.evaluation;
      out(
        `\nheld-out: ${e.episodes / 4} maps × 4 episodes\n${table([
          ['success', 'exact bound', 'mean turns', 'waypoint on a hole', 'waypoint S or G'],
          [fmt(e.success), fmt(e.optimal), fmt(e.turns, 2), fmt(e.hole), fmt(e.direct)],
        ])}`,
      );
      out(`env steps: ${r.envSteps} in episodes, ${r.replaySteps} in counterfactual replays`);
      if (f.out !== undefined) out(`wrote ${r.files.join(', ')} to ${f.out}`);
    });
}

/** train-pair --env search: the planner decomposes the question (its hops), the executor calls. */
function searchPair(f: PairFlags, cmd: Command): void {
  for (const flag of ['size', 'p', 'slippery', 'sight'])
    if (cmd.getOptionValueSource(flag) === 'cli') {
      const raw = String(cmd.getOptionValue(flag));
      throw new InputError(`--${flag}`, raw, 'only with --env frozenlake (search questions have --level)');
    }
  const d = SEARCH_PAIR_DEFAULTS;
  const level: SearchLevelParam = levelFlag(f.level ?? 'mixed');
  let planner: SearchPlannerSource;
  if (f.planner === 'mlp' || f.planner === 'level') planner = f.planner;
  else if (/^[123]$/.test(f.planner)) planner = Number(f.planner) as 1 | 2 | 3;
  else if (f.planner === 'goal' || f.planner.trim() === '')
    throw new InputError(
      '--planner',
      f.planner,
      "expected mlp, level, 1, 2, 3 or a network file (goal is frozenlake's)",
    );
  else planner = { file: f.planner };
  const executor = source('--executor', f.executor) as 'mlp' | { file: string };
  if (!AGENT_CREDITS.includes(f.credit as AgentCredit))
    throw new InputError('--credit', f.credit, `expected ${AGENT_CREDITS.join(', ')}`);
  if (typeof planner !== 'object' && planner !== 'mlp' && executor !== 'mlp')
    throw new InputError('--executor', f.executor, `with --planner ${planner} the executor is trained: mlp`);
  const config: SearchPairConfig = {
    ...d,
    credit: f.credit as AgentCredit,
    level,
    budget: int('--budget', f.budget ?? String(d.budget), 2, 1000),
    ...loopFlags(f),
  };
  const evalQuestions = int('--eval-maps', f.evalMaps, 1, 1_000_000);
  checkPairOut(f.out, planner, executor);
  const r = runSearchPair(searchPairEnvs, {
    config,
    planner,
    executor,
    evalQuestions,
    evalSamples: 4,
    out: f.out,
    onIter: interactive()
      ? (m) =>
          warn(
            `iter ${m.iter + 1}/${config.iters}: success ${fmt(m['rollout/success'], 3)}, plan = hops ${fmt(m['planner/exact'], 3)}`,
          )
      : undefined,
  });
  if (f.json) {
    json(r);
    return;
  }
  const role = (name: string, trained: boolean) => `${name} (${trained ? 'trained' : 'fixed'})`;
  out(
    `pair on search questions (level ${config.level}, 6 calls offered a turn): planner ${role(r.planner, r.trained.planner)}, executor ${role(r.executor, r.trained.executor)}`,
  );
  out(
    `credit ${config.credit}; ${config.iters} iterations of ${config.groups} questions × ${config.groupSize}; budget ${config.budget} (the planner's turn, then ${config.budget - 1} calls)`,
  );
  const e = r.evaluation;
  out(
    `\nheld-out: ${e.episodes / 4} questions × 4 episodes\n${table([
      ['success', 'bound', 'mean turns', 'plan = hops', 'plan too short', 'plan too long'],
      [fmt(e.success), fmt(e.bound), fmt(e.turns, 2), fmt(e.exact), fmt(e.short), fmt(e.long)],
    ])}`,
  );
  out(`env steps: ${r.envSteps} in episodes, ${r.replaySteps} in counterfactual replays`);
  if (f.out !== undefined) out(`wrote ${r.files.join(', ')} to ${f.out}`);
}
