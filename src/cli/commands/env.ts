// turnwise env describe | export | oracle | play
import { existsSync } from 'node:fs';
import { createInterface, emitKeypressEvents } from 'node:readline';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import type { Task, Turn } from '../../core/types.ts';
import { ACTION_NAMES } from '../../envs/frozenlake/index.ts';
import { describeEnv, envEntry, envSpec, makeEnv } from '../../envs/index.ts';
import { fmt, json, out, table } from '../io.ts';
import { type EnvFlags, envConfigFromFlags, envOptions, int, seed } from '../options.ts';
import { ABOUT } from './about.ts';

interface CommonFlags extends EnvFlags {
  seed: string;
  /** Same as --seed (the name tool envs' docs use); wins when given. */
  taskSeed?: string;
  json?: boolean;
}

function taskFrom(envId: string, flags: CommonFlags): Task {
  const s =
    flags.taskSeed === undefined ? seed(flags.seed) : int('--task-seed', flags.taskSeed, 0, 2 ** 53 - 1);
  return { ...envConfigFromFlags(envId, flags), seed: s };
}

function budgetOf(flags: { budget?: string }, task: Task): number {
  if (flags.budget !== undefined) return int('--budget', flags.budget, 1, 1_000_000);
  return envSpec(task).maxTurns ?? 100;
}

export function registerEnv(program: Command): void {
  const env = program.command('env').description(ABOUT.env.description);

  envOptions(
    env
      .command('describe')
      .argument('<env>', 'environment id (frozenlake)')
      .description("the spec, the map and the full transition table (Gymnasium's P[s][a] layout)"),
  )
    .option('--seed <n>', 'task seed (picks the map with --random)', '0')
    .option('--task-seed <n>', 'task seed (same as --seed)')
    .option('--gold', 'tool envs: also show the gold solution')
    .option('--json', 'machine-readable output')
    .action((envId: string, flags: CommonFlags & { gold?: boolean }) => {
      const task = taskFrom(envId, flags);
      // A tool env's task, or one with its own text layout (the code env's candidate variant is discrete).
      if (envSpec(task).tools !== undefined || envEntry(task.env).describeText !== undefined) {
        describeToolTask(task, flags.gold === true, flags.json === true);
        return;
      }
      const d = describeEnv(task) as {
        desc: string[];
        nS: number;
        nA: number;
        P: [number, number, number, boolean][][][];
      };
      if (flags.json) return json(d);
      const spec = envSpec(task);
      out(`${task.env} ${JSON.stringify(task.params)} seed ${task.seed}`);
      out(
        `states ${d.nS}, actions ${d.nA} (${ACTION_NAMES.map((n, i) => `${i} ${n}`).join(', ')}), registered limit ${spec.maxTurns}`,
      );
      out(d.desc.join('\n'));
      const rows: (string | number)[][] = [['s', 'a', 'outcomes [prob → next, reward, terminated]']];
      d.P.forEach((bySA, s) => {
        bySA.forEach((outcomes, a) => {
          rows.push([
            s,
            ACTION_NAMES[a],
            outcomes.map(([p, n, r, t]) => `${fmt(p, 3)}→${n},${r}${t ? ',T' : ''}`).join('  '),
          ]);
        });
      });
      out(table(rows));
    });

  envOptions(
    env
      .command('export')
      .argument('<env>', 'environment id (sql)')
      .description("write a task's data to a file (sql: the task's SQLite database)"),
  )
    .option('--seed <n>', 'task seed', '0')
    .option('--task-seed <n>', 'task seed (same as --seed)')
    .requiredOption('--out <file>', 'the file to write (must not exist)')
    .option('--json', 'machine-readable output')
    .action((envId: string, flags: CommonFlags & { out: string }) => {
      const task = taskFrom(envId, flags);
      const entry = envEntry(envId);
      if (entry.export === undefined) throw new InputError('env', envId, 'this env has nothing to export');
      if (existsSync(flags.out)) throw new InputError('--out', flags.out, 'the file exists; give a new path');
      let bytes: number;
      try {
        bytes = entry.export(task, flags.out);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
        throw new InputError('--out', flags.out, `cannot write it (${code}); give a writable new path`);
      }
      if (flags.json) return json({ task, out: flags.out, bytes });
      out(`wrote ${flags.out} (${bytes} bytes): the database of ${task.env} task ${task.seed}`);
    });

  envOptions(
    env
      .command('oracle')
      .argument('<env>', 'environment id (frozenlake)')
      .description('exact finite-horizon V* and Q* with h = --budget turns left'),
  )
    .option('--budget <T>', 'turns left h (default: the registered episode limit)')
    .option('--seed <n>', 'task seed (picks the map with --random)', '0')
    .option('--json', 'machine-readable output')
    .action(async (envId: string, flags: CommonFlags & { budget?: string }) => {
      const task = taskFrom(envId, flags);
      const h = budgetOf(flags, task);
      // Only the spec is asked first: an env without an oracle (sql holds a SQLite connection) is never
      // opened, and one that is opened is closed again.
      if (!envSpec(task).oracle) throw new InputError('env', envId, 'this env has no exact oracle');
      const made = makeEnv(task);
      const oracle = made.oracle?.();
      await made.close?.();
      if (oracle === undefined) throw new InputError('env', envId, 'this env has no exact oracle');
      const V = Array.from({ length: oracle.nS }, (_, s) => oracle.v(h, s));
      const Q = Array.from({ length: oracle.nS }, (_, s) => Array.from(oracle.q(h, s)));
      if (flags.json) return json({ V, Q });
      const d = describeEnv(task) as { desc: string[] };
      const ncol = d.desc[0].length;
      out(`V*_${h} (probability of reaching G within ${h} turns) and the greedy action per cell:`);
      const arrows = ['←', '↓', '→', '↑'];
      const rows: string[][] = [];
      for (let r = 0; r < d.desc.length; r++) {
        const row: string[] = [];
        for (let c = 0; c < ncol; c++) {
          const s = r * ncol + c;
          const cell = d.desc[r][c];
          if (cell === 'H' || cell === 'G') row.push(`  ${cell}   `);
          else {
            const q = Q[s];
            const best = q.indexOf(Math.max(...q));
            row.push(`${fmt(V[s])}${arrows[best]}`);
          }
        }
        rows.push(row);
      }
      out(rows.map((r) => r.join('  ')).join('\n'));
    });

  envOptions(
    env
      .command('play')
      .argument('<env>', 'environment id (frozenlake)')
      .description(
        'play it yourself: arrows, wasd, hjkl or 0-3; q quits. Without a TTY, actions are read from stdin',
      ),
  )
    .option('--budget <T>', 'turn budget (default: the registered episode limit)')
    .option('--seed <n>', 'task seed (picks the map with --random) and episode seed', '0')
    .option('--hints', "show the oracle's Q* for each action")
    .option('--json', 'print the played trajectory as JSON at the end')
    .action(async (envId: string, flags: CommonFlags & { budget?: string; hints?: boolean }) => {
      const task = taskFrom(envId, flags);
      await play(task, budgetOf(flags, task), flags.hints === true, flags.json === true);
    });
}

/** A tool env's task: its question, tables and (with gold) the gold query and result. */
function describeToolTask(task: Task, gold: boolean, asJson: boolean): void {
  const entry = envEntry(task.env);
  if (entry.describeText !== undefined) {
    const raw = describeEnv(task, { gold });
    if (asJson) {
      json({ task, spec: envSpec(task), ...raw });
      return;
    }
    out(`${task.env} ${JSON.stringify(task.params)} task seed ${task.seed}`);
    out(entry.describeText(raw).join('\n'));
    const tools = envSpec(task).tools;
    if (tools !== undefined) out(`tools: ${tools.map((x) => x.name).join(', ')}`);
    return;
  }
  const d = describeEnv(task, { gold }) as {
    domain: string;
    level: number;
    template: string;
    question: string;
    ordered: boolean;
    tables: { name: string; rows: number; columns: { name: string; type: string; references?: string }[] }[];
    gold?: { query: string; columns: string[]; rows: unknown[][] };
  };
  const spec = envSpec(task);
  if (asJson) {
    json({ task, spec, ...d });
    return;
  }
  out(`${task.env} ${JSON.stringify(task.params)} task seed ${task.seed}`);
  out(`domain ${d.domain}, level ${d.level} (${d.template})${d.ordered ? ', ordered' : ''}`);
  out(`question: ${d.question}`);
  out('tables:');
  for (const t of d.tables) {
    const cols = t.columns.map((c) => `${c.name} ${c.type}${c.references ? ` → ${c.references}` : ''}`);
    out(`  ${t.name} (${t.rows} rows): ${cols.join(', ')}`);
  }
  out(`tools: ${(spec.tools ?? []).map((x) => x.name).join(', ')}`);
  if (d.gold !== undefined) {
    out(`gold: ${d.gold.query}`);
    out(`gold result (${d.gold.rows.length} rows):`);
    out(table([d.gold.columns, ...d.gold.rows.map((r) => r.map((v) => (v === null ? 'NULL' : String(v))))]));
  }
}

const KEYS: Record<string, number> = {
  left: 0,
  a: 0,
  h: 0,
  '0': 0,
  down: 1,
  s: 1,
  j: 1,
  '1': 1,
  right: 2,
  d: 2,
  l: 2,
  '2': 2,
  up: 3,
  w: 3,
  k: 3,
  '3': 3,
};

/** Yields key names (TTY) or whitespace-separated tokens (piped stdin). */
async function* inputTokens(): AsyncGenerator<string> {
  if (process.stdin.isTTY) {
    emitKeypressEvents(process.stdin);
    process.stdin.setRawMode(true);
    try {
      while (true) {
        const key = await new Promise<{ name?: string; sequence?: string; ctrl?: boolean }>((resolve) =>
          process.stdin.once('keypress', (_s, k) => resolve(k ?? {})),
        );
        if (key.ctrl && key.name === 'c') return;
        yield (key.name ?? key.sequence ?? '').toLowerCase();
      }
    } finally {
      process.stdin.setRawMode(false);
      process.stdin.pause();
    }
  } else {
    const rl = createInterface({ input: process.stdin });
    for await (const line of rl) for (const tok of line.trim().split(/\s+/)) if (tok) yield tok.toLowerCase();
  }
}

async function play(task: Task, budget: number, hints: boolean, asJson: boolean): Promise<void> {
  const env = makeEnv(task);
  const show = (o: unknown) => env.text?.(o as number) ?? JSON.stringify(o);
  const say = (text: string) => (asJson ? process.stderr.write(`${text}\n`) : out(text));
  let obs = (await env.reset(task.seed)) as number;
  const turns: Turn[] = [];
  let ended = 'quit';
  const oracle = env.oracle?.();
  const prompt = () => {
    say(`\n${show(obs)}\nturn ${turns.length + 1}/${budget} — move with arrows, wasd, hjkl or 0-3 (q quits)`);
    if (hints && oracle) {
      const q = oracle.q(budget - turns.length, oracle.state(obs));
      say(`Q*: ${ACTION_NAMES.map((n, a) => `${n} ${fmt(q[a], 3)}`).join('  ')}`);
    }
  };
  prompt();
  for await (const tok of inputTokens()) {
    if (tok === 'q' || tok === 'quit' || tok === 'escape') break;
    const action = KEYS[tok];
    if (action === undefined) {
      say(`unknown key ${JSON.stringify(tok)}`);
      continue;
    }
    const res = await env.step(action);
    turns.push({ t: turns.length, observation: obs, action, reward: res.reward, logp: 0, info: res.info });
    const moved = res.observation === obs ? 'stayed' : `moved to ${res.observation}`;
    say(`${ACTION_NAMES[action]} → ${moved}${res.reward ? `, reward ${res.reward}` : ''}`);
    obs = res.observation as number;
    if (res.terminated) {
      ended = res.info.success ? 'success: you reached the goal' : 'failure: you fell into a hole';
      break;
    }
    if (turns.length >= budget) {
      ended = 'failure: out of turns (budget)';
      break;
    }
    prompt();
  }
  say(`\n${show(obs)}\n${ended} after ${turns.length} turn(s)`);
  await env.close?.();
  if (asJson) {
    const success = turns.some((t) => t.info.success);
    json({ task, budget, turns, success, turnsUsed: turns.length });
  }
}
