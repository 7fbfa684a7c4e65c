// turnwise compare: two policies side by side — Pass@(K,T) and its paired difference, step quality at
// the same states, recovery from injected errors, likelihood ratios, failures (docs/methods.md §5).
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { FAILURE_KINDS } from '../../core/types.ts';
import { envs } from '../../envs/index.ts';
import { type CompareReport, compare, STATES_FROM, type StatesFrom } from '../../eval/compare.ts';
import { resolveMode } from '../../eval/evaluate.ts';
import { hackLine } from '../../eval/hacking.ts';
import type { Likelihood } from '../../eval/likelihood.ts';
import type { StepQuality } from '../../eval/step-quality.ts';
import { toolEffectLine } from '../../eval/tool-effects.ts';
import { checksEpisodes } from '../../policies/replay.ts';
import { openPolicy } from '../../policies/spec.ts';
import { checkScoring, openCache, requestTotals } from '../cache.ts';
import { fmt, json, out, Progress, table } from '../io.ts';
import {
  CACHE_HELP,
  connectOptions,
  type OpenAIFlags,
  openaiOptions,
  parsePrice,
  totalsLine,
} from '../openai-flags.ts';
import { int } from '../options.ts';
import { checkQueueFlag, queueOption, refuseWithQueue } from '../queue.ts';
import { openQueue, policyRef } from '../queue-run.ts';
import { ABOUT } from './about.ts';
import { interval, type PassFlags, passOptions, passTable, readPassFlags, warnOneTask } from './eval.ts';

interface CompareFlags extends PassFlags, OpenAIFlags {
  cache?: string;
  a: string;
  b: string;
  states: string;
  statesFrom: string;
  actions: string;
  continuations: string;
  queue?: string;
}

const orDash = (x: number | null, digits = 4) => (x === null ? '-' : fmt(x, digits));

function qualityRows(label: string, q: StepQuality): (string | number)[] {
  return [
    label,
    q.states,
    orDash(q.aBetter),
    orDash(q.ties),
    orDash(q.bBetter),
    orDash(q.regretA),
    orDash(q.regretB),
    orDash(q.score),
    q.exact ? fmt(q.exact.score) : '-',
  ];
}

function print(r: CompareReport, resamples: number, actions: number, unscored: string[]): void {
  const { a, b } = r.passKT;
  out(`A = ${a.policy} (${a.mode} mode), B = ${b.policy} (${b.mode} mode)`);
  out(`\nPass@(K,T) of A, 95% bootstrap intervals over tasks (${resamples} resamples)`);
  out(passTable(a.K, a.T, a.passKT, a.ci95));
  out('\nPass@(K,T) of B');
  out(passTable(b.K, b.T, b.passKT, b.ci95));
  out('\nA − B (paired: the same resampled tasks)');
  out(passTable(a.K, a.T, r.passKT.diff, r.passKT.diffCi95));

  if (r.stepQuality) {
    out(
      `\nStep quality at the same states: ${actions} actions each, scored by the exact Q*_h(s,a), h = turns left`,
    );
    out(
      table([
        ['states', 'n', 'A better', 'tie', 'B better', 'regret A', 'regret B', 'A better + ½tie', '(exact)'],
        qualityRows('normal', r.stepQuality.normal),
        qualityRows('error', r.stepQuality.error),
      ]),
    );
  } else if (r.stepProxy) {
    const q = r.stepProxy;
    out(
      `\nStep quality by the env's per-turn proxy (info.${q.field}; no exact oracle): ${actions} actions each at the same states, pairs where both steps carry the proxy`,
    );
    out(
      table([
        ['states', 'scored pairs', 'A better', 'tie', 'B better', 'A better + ½tie', 'mean A', 'mean B'],
        [
          q.states,
          fmt(q.scored),
          orDash(q.aBetter),
          orDash(q.ties),
          orDash(q.bBetter),
          orDash(q.score),
          orDash(q.meanA),
          orDash(q.meanB),
        ],
      ]),
    );
    out(
      `on their own trajectories: mean proxy A ${orDash(q.own.a)} (${q.own.turnsA} turns), B ${orDash(q.own.b)} (${q.own.turnsB} turns)`,
    );
    out('Recovery: the env has no exact oracle to pick bad actions with (skipped)');
  } else
    out(
      '\nStep quality and recovery: the env has no exact oracle and its turns carry no quality proxy (skipped)',
    );

  if (r.recovery) {
    const rec = r.recovery;
    out(
      `\nRecovery: continuation success after a forced bad action (${rec.states} error states × ${rec.continuations} continuations)`,
    );
    const row = (label: string, c: typeof rec.a) => [
      label,
      orDash(c.success),
      c.ci95 ? interval(c.ci95) : '-',
      orDash(c.exact),
    ];
    out(
      table([
        ['policy', 'success', '95% interval', 'exact'],
        row('A', rec.a),
        row('B', rec.b),
        ['A − B', orDash(rec.diff), rec.diffCi95 ? interval(rec.diffCi95) : '-', ''],
      ]),
    );
    out(
      `(${rec.attempts} forcing attempts: ${rec.terminal} ended the episode at once, ${rec.noBadAction} had no bad action)`,
    );
  }

  if (r.likelihood) {
    const l = r.likelihood;
    const cell = (x: number | null, inf: number, of: number) =>
      `${orDash(x)}${inf > 0 ? ` (+${inf} of ${of} infinite)` : ''}`;
    out('\nLikelihood: mean NLL per action; LLR = Σ_t log π_A − log π_B over successful trajectories');
    out(
      table([
        ['', 'under A', 'under B', 'LLR (successful)'],
        [
          `A's actions (${l.actions.a})`,
          cell(l.nllAunderA, l.infinite.nllAunderA, l.actions.a),
          cell(l.nllAunderB, l.infinite.nllAunderB, l.actions.a),
          cell(l.llrSuccessA, l.infinite.llrSuccessA, l.successful.a),
        ],
        [
          `B's actions (${l.actions.b})`,
          cell(l.nllBunderA, l.infinite.nllBunderA, l.actions.b),
          cell(l.nllBunderB, l.infinite.nllBunderB, l.actions.b),
          cell(l.llrSuccessB, l.infinite.llrSuccessB, l.successful.b),
        ],
      ]),
    );
    out(`(${l.note})`);
    printText(l);
  } else if (unscored.length > 0) for (const reason of unscored) out(`\nLikelihood: unavailable — ${reason}`);
  else out('\nLikelihood: a policy cannot score actions (no logProb or probs)');

  out(`\nFailures at T=${a.T[a.T.length - 1]}`);
  const f = r.failures;
  out(
    table([
      ['policy', 'episodes', 'success', ...FAILURE_KINDS, 'turns (success)', 'turns (failure)'],
      ...(['a', 'b'] as const).map((p) => [
        p.toUpperCase(),
        f[p].episodes,
        f[p].successes,
        ...FAILURE_KINDS.map((k) => f[p].byKind[k]),
        orDash(f[p].meanTurnsSuccess, 2),
        orDash(f[p].meanTurnsFailure, 2),
      ]),
    ]),
  );
  if (r.hacking !== undefined)
    for (const p of ['a', 'b'] as const) {
      const h = r.hacking[p];
      out(`${p.toUpperCase()}: ${h === null ? 'reward hacking: no tracked program submitted' : hackLine(h)}`);
    }
  if (r.toolEffects !== undefined)
    for (const p of ['a', 'b'] as const) {
      const e = r.toolEffects[p];
      out(`${p.toUpperCase()}: ${e === null ? 'tool calls: no tracked episode' : toolEffectLine(e)}`);
    }
}

/** The per-token and per-trajectory figures of text policies (absent for policies that write no text). */
function printText(l: Likelihood): void {
  const t = l.perToken;
  const j = l.perTrajectory;
  if (t === undefined || j === undefined) return;
  const cell = (x: number | null, inf: number, of: number | null) =>
    `${orDash(x)}${inf > 0 ? ` (+${inf} of ${of ?? '-'} infinite)` : ''}`;
  const n = (x: number | null) => (x === null ? 'tokens unknown' : `${x} tokens`);
  out(
    '\nLikelihood per token: Σ −log π / Σ tokens over the actions; LLR = Σ LLR / Σ tokens over successful trajectories',
  );
  out(
    table([
      ['', 'under A', 'under B', 'LLR (successful)'],
      [
        `A's actions (${n(t.tokens.a)})`,
        cell(t.nllAunderA, t.infinite.nllAunderA, l.actions.a),
        cell(t.nllAunderB, t.infinite.nllAunderB, l.actions.a),
        cell(t.llrSuccessA, t.infinite.llrSuccessA, l.successful.a),
      ],
      [
        `B's actions (${n(t.tokens.b)})`,
        cell(t.nllBunderA, t.infinite.nllBunderA, l.actions.b),
        cell(t.nllBunderB, t.infinite.nllBunderB, l.actions.b),
        cell(t.llrSuccessB, t.infinite.llrSuccessB, l.successful.b),
      ],
    ]),
  );
  out(`(tokens: ${t.unit})`);
  out(
    '\nLikelihood per trajectory: NLL = Σ_t −log π over a trajectory, mean over trajectories (LLR per trajectory: the first table)',
  );
  out(
    table([
      ['', 'under A', 'under B'],
      [
        `A's trajectories (${j.trajectories.a})`,
        cell(j.nllAunderA, j.infinite.nllAunderA, j.trajectories.a),
        cell(j.nllAunderB, j.infinite.nllAunderB, j.trajectories.a),
      ],
      [
        `B's trajectories (${j.trajectories.b})`,
        cell(j.nllBunderA, j.infinite.nllBunderA, j.trajectories.b),
        cell(j.nllBunderB, j.infinite.nllBunderB, j.trajectories.b),
      ],
    ]),
  );
}

export function registerCompare(program: Command): void {
  queueOption(openaiOptions(passOptions(program.command('compare').description(ABOUT.compare.description))))
    .requiredOption('--a <spec>', 'policy A')
    .requiredOption('--b <spec>', 'policy B')
    .option('--states <n>', 'states for step quality (normal and error states each)', '200')
    .option('--states-from <who>', 'take the states from the trajectories of a, b or both', 'both')
    .option('--actions <m>', 'actions each policy draws per state (M)', '16')
    .option('--continuations <n>', 'continuations per error state and policy', '8')
    .option('--cache <file.sqlite>', CACHE_HELP)
    .option('--json', 'machine-readable output')
    .action(async (flags: CompareFlags) => {
      await checkQueueFlag(flags.queue);
      refuseWithQueue(flags.queue, [
        ['--cache', flags.cache, 'the replay cache is a file of this process; give it to no queued run'],
      ]);
      const o = readPassFlags(flags);
      const price = parsePrice(flags.price);
      const cache = openCache(flags.cache, [flags.a, flags.b]);
      const connect = connectOptions(flags, o.config);
      const a = await openPolicy(flags.a, o.spec, '--a', cache, connect);
      const b = await openPolicy(flags.b, o.spec, '--b', cache, connect);
      for (const [p, field] of [
        [a, '--a'],
        [b, '--b'],
      ] as const)
        if (checksEpisodes(p))
          p.checkEpisodes(
            o.tasks.map((t) => t.seed),
            o.samples,
            field,
          );
      const unscored = await checkScoring([a, b], envs.make, o.tasks[0], o.T[o.T.length - 1]);
      const modeA = resolveMode(a, o.mode);
      const modeB = resolveMode(b, o.mode);
      const states = int('--states', flags.states, 1, 1_000_000);
      const actions = int('--actions', flags.actions, 1, 10_000);
      const continuations = int('--continuations', flags.continuations, 1, 10_000);
      if (!STATES_FROM.includes(flags.statesFrom as StatesFrom)) {
        throw new InputError('--states-from', flags.statesFrom, `expected one of: ${STATES_FROM.join(', ')}`);
      }
      const episodes = (mode: string) => o.tasks.length * o.samples * (mode === 'prefix' ? 1 : o.T.length);
      const progress = new Progress('compare', episodes(modeA) + episodes(modeB));
      const queue = await openQueue(flags.queue, 'compare');
      queue.show(progress);
      const report = await compare({
        rollouts: {
          a: queue.runner({ policy: policyRef(flags.queue, flags.a, a) }),
          b: queue.runner({ policy: policyRef(flags.queue, flags.b, b) }),
        },
        envs,
        tasks: o.tasks,
        samples: o.samples,
        K: o.K,
        T: o.T,
        a,
        b,
        mode: o.mode,
        runSeed: o.runSeed,
        states,
        statesFrom: flags.statesFrom as StatesFrom,
        actions,
        continuations,
        resamples: o.resamples,
        concurrency: o.concurrency,
        onProgress: (stage, done) => {
          if (stage === 'rollouts a') progress.update(done);
          else if (stage === 'rollouts b') progress.update(episodes(modeA) + done);
          else progress.update(episodes(modeA) + episodes(modeB), stage);
        },
      }).finally(() => queue.close());
      progress.done();
      warnOneTask(o.tasks.length);
      const totals = requestTotals([a, b], price);
      if (flags.json) {
        return json({
          ...report,
          ...(unscored.length > 0 ? { likelihoodUnavailable: unscored } : {}),
          ...(totals === undefined ? {} : { requests: totals }),
        });
      }
      out(
        `${o.config.env} ${JSON.stringify(o.config.params)}: ${o.tasks.length} tasks × ${o.samples} samples`,
      );
      print(report, o.resamples, actions, unscored);
      if (totals !== undefined) out(`\n${totalsLine(totals)}`);
    });
}
