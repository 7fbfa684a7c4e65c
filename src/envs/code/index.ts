// The code env as a registered env: params, tasks → worlds (cached), env construction, the task's
// description (with its gold), and the throughput figure `turnwise bench env code` reports.
import { Rng } from '../../core/rng.ts';
import type { EnvSpec, Task, ToolCall } from '../../core/types.ts';
import { CodeChoiceEnv, candidatesOf, codeChoiceSpec } from './choice.ts';
import { CodeEnv, codeScripted, codeSpec } from './env.ts';
import { DEFAULT_SANDBOX_LIMITS } from './sandbox.ts';
import { sandboxPool } from './sandbox-pool.ts';
import { callText, codeParams, codeWorld } from './task.ts';

export * from './choice.ts';
export * from './env.ts';
export * from './families.ts';
export * from './hack.ts';
export * from './sandbox.ts';
export * from './sandbox-pool.ts';
export type * from './sandbox-runner.ts';
export * from './task.ts';
export * from './tools.ts';

export function makeCodeEnv(task: Task): CodeEnv {
  return new CodeEnv(codeWorld(task));
}

/** The env of a task: the write-mode env, or the candidate variant (params mode 'choose'). */
export function makeCodeTaskEnv(task: Task): CodeEnv | CodeChoiceEnv {
  const world = codeWorld(task);
  return world.params.mode === 'choose' ? new CodeChoiceEnv(world) : new CodeEnv(world);
}

/** The spec of a task's env (the candidate variant's is discrete). */
export function codeTaskSpec(task: Task): EnvSpec {
  const p = codeParams(task.params);
  return p.mode === 'choose' ? codeChoiceSpec(p.candidates ?? 4) : codeSpec();
}

/** Plain data describing a task: its family, level, prompt and examples; with `gold` the reference, the
 * hidden tests and their expected outputs, and the sandbox's limits. */
export function describeCode(task: Task, gold = false): Record<string, unknown> {
  const w = codeWorld(task);
  const p = w.problem;
  const out: Record<string, unknown> = {
    family: p.family,
    category: p.category,
    level: p.level,
    function: `${p.name}(${p.params.join(', ')})`,
    statement: p.statement,
    examples: w.visible.map((t) => ({ call: callText(p.name, t.args), expected: t.expected })),
    hiddenTests: w.hidden.length,
    prompt: w.prompt,
  };
  // The candidate variant: the programs offered (their kinds, and how many hidden tests each passes, with gold).
  if (w.params.mode === 'choose')
    out.candidates = candidatesOf(w).map((c) => ({
      code: c.code,
      ...(gold ? { kind: c.kind, hiddenPassed: c.pass.filter(Boolean).length } : {}),
    }));
  if (gold)
    out.gold = {
      reference: p.reference,
      hidden: w.hidden.map((t) => ({ call: callText(p.name, t.args), expected: t.expected })),
      limits: DEFAULT_SANDBOX_LIMITS,
    };
  return out;
}

/** The description as lines of text (turnwise env describe). */
export function describeCodeText(d: Record<string, unknown>): string[] {
  const lines = [
    `${d.category} level ${d.level} (${d.family}): ${d.function}`,
    String(d.statement),
    'examples:',
    ...(d.examples as { call: string; expected: string }[]).map((e) => `  ${e.call} → ${e.expected}`),
    `hidden tests: ${d.hiddenTests}`,
  ];
  const candidates = d.candidates as { code: string; kind?: string; hiddenPassed?: number }[] | undefined;
  candidates?.forEach((c, i) => {
    const what = c.kind === undefined ? '' : ` (${c.kind}, passes ${c.hiddenPassed} hidden tests)`;
    lines.push(`candidate ${i}${what}:`, ...c.code.split('\n').map((l) => `  ${l}`));
  });
  const gold = d.gold as { reference: string; hidden: { call: string; expected: string }[] } | undefined;
  if (gold !== undefined) {
    lines.push(
      'gold reference:',
      ...gold.reference.split('\n').map((l) => `  ${l}`),
      'hidden tests (call → expected):',
    );
    for (const h of gold.hidden) lines.push(`  ${h.call} → ${h.expected}`);
  }
  return lines;
}

export interface CodeBenchOptions {
  /** Env steps to take (default 2000). */
  steps?: number;
  /** Params of the tasks (default: mixed level and category). */
  params?: Record<string, unknown>;
  seed?: number;
}

export interface CodeThroughput {
  steps: number;
  episodes: number;
  seconds: number;
  stepsPerSecond: number;
  /** Test cases the sandbox ran (each run_tests/submit runs every hidden test of the task). */
  testRuns: number;
  testRunsPerSecond: number;
  /** Sandbox workers alive once the bench's last env is closed (0: none left behind). */
  liveSandboxes: number;
}

/**
 * Throughput of the code env through its public API: episodes on consecutive task seeds, each step a
 * uniform draw from the gold calls and the scripted menu (pre-drawn, so the figure measures the env and
 * the sandbox, not an RNG), a new task on termination, one step at a time. A sandbox worker is started
 * (one warm-up step) before the clock starts.
 */
export async function benchCode(options: CodeBenchOptions = {}): Promise<CodeThroughput> {
  const steps = options.steps ?? 2000;
  const seed = options.seed ?? 0;
  const params = codeParams(options.params ?? {});
  const rng = Rng.derive(seed, 0xbe4c);
  const draws = Array.from({ length: steps }, () => rng.float());
  const task = (s: number): Task => ({ env: 'code', params: { ...params }, seed: s });
  let taskSeed = seed;
  let env = makeCodeEnv(task(taskSeed));
  let menu: ToolCall[] = [];
  const start = () => {
    env.reset(taskSeed);
    const v = codeScripted(env.world);
    menu = [
      v.goldAction([]),
      ...v.validActions([]),
      { name: 'submit', arguments: { code: env.world.problem.reference } },
    ];
  };
  start();
  await env.step(menu[0]);
  start();
  let episodes = 1;
  let testRuns = 0;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < steps; i++) {
    const r = await env.step(menu[Math.floor(draws[i] * menu.length)]);
    testRuns += env.world.hidden.length;
    if (r.terminated) {
      env.close();
      env = makeCodeEnv(task(++taskSeed));
      start();
      episodes++;
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  env.close();
  await sandboxPool.drained();
  return {
    steps,
    episodes,
    seconds,
    stepsPerSecond: steps / seconds,
    testRuns,
    testRunsPerSecond: testRuns / seconds,
    liveSandboxes: sandboxPool.live,
  };
}
