// A tools task = (params, seed) → an initial API state (files and accounts) and a request of several
// steps in templated language, with its gold calls, gold results and goal state. Params:
//   level   1 | 2 | 3 | 'mixed' (default): the number of steps — 1–2, 3–4, 5–6; mixed draws it;
//   domain  'files' | 'bank' | 'mixed' (default): which API the steps use; mixed draws it per step;
//   misuse  how many malformed calls (unknown function, bad arguments) end the episode as
//           `invalid-action` (default 3; the earlier ones are tool errors the agent sees).
// Every step is generated against the state the previous gold steps leave, so the gold path is valid;
// at least one step changes the state. Worlds are cached per (params, seed): they are immutable.
import { z } from 'zod';
import { Rng, STREAM } from '../../core/rng.ts';
import type { Task, ToolCall } from '../../core/types.ts';
import { fromZod } from '../../core/validate.ts';
import { type ApiState, canonical, cloneState, execute } from './apis.ts';
import { type GoalAttribute, goalAttributes } from './checkers.ts';
import type { ToolsToolName } from './tools.ts';

const ParamsSchema = z
  .object({
    level: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal('mixed')]).optional(),
    domain: z.enum(['files', 'bank', 'mixed']).optional(),
    misuse: z.number().int().min(1).max(100).optional(),
  })
  .strict();

export type ToolsLevel = 1 | 2 | 3;
export interface ToolsParams {
  level: ToolsLevel | 'mixed';
  domain: 'files' | 'bank' | 'mixed';
  misuse: number;
}

export function toolsParams(raw: Record<string, unknown>): ToolsParams {
  const p = fromZod(ParamsSchema, raw, 'params');
  return { level: p.level ?? 'mixed', domain: p.domain ?? 'mixed', misuse: p.misuse ?? 3 };
}

export interface GoalStep {
  call: ToolCall;
  text: string;
  api: 'files' | 'bank';
  mutating: boolean;
}

export interface ToolsWorld {
  params: ToolsParams;
  level: ToolsLevel;
  initial: ApiState;
  steps: GoalStep[];
  request: string;
  goal: ApiState;
  /** The gold calls' results, canonical JSON, in gold order. */
  goldResults: string[];
  attrs: GoalAttribute[];
}

const FILE_NAMES = [
  'notes.txt',
  'todo.txt',
  'report.md',
  'budget.csv',
  'draft.txt',
  'ideas.md',
  'log.txt',
  'plan.md',
  'readme.md',
  'summary.txt',
];
const NEW_NAMES = ['backup.txt', 'archive.md', 'final.txt', 'copy.md', 'old.txt', 'v2.md', 'shared.txt'];
const LINES = [
  'buy milk',
  'call the plumber',
  'Q3 revenue up 4%',
  'ship v1.2 on Friday',
  'rent,1200',
  'fix the login bug',
  'meeting moved to 3pm',
  'renew the passport',
  'draft the intro',
  'water the plants',
];
const OWNERS = ['Alice', 'Bob', 'Chen', 'Dana', 'Emeka', 'Farah', 'Goro', 'Hana'];

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)];
const call = (name: ToolsToolName, args: Record<string, string | number> = {}): ToolCall => ({
  name,
  arguments: args,
});

function initialState(rng: Rng): ApiState {
  const files: Record<string, string> = {};
  const names = rng.shuffle([...FILE_NAMES]).slice(0, 3 + rng.int(3));
  for (const f of names) {
    const n = 1 + rng.int(3);
    files[f] = Array.from({ length: n }, () => pick(rng, LINES)).join('\n');
  }
  const accounts: ApiState['accounts'] = {};
  const owners = rng.shuffle([...OWNERS]).slice(0, 3 + rng.int(2));
  for (const owner of owners) {
    let id = '';
    do id = `ACC-${1000 + rng.int(9000)}`;
    while (Object.hasOwn(accounts, id));
    accounts[id] = { owner, balance: 10 * (10 + rng.int(90)), open: true };
  }
  return { files, accounts };
}

type Make = (s: ApiState, rng: Rng) => { call: ToolCall; text: string } | null;

const FILE_STEPS: Make[] = [
  (s, rng) => {
    const f = pick(rng, Object.keys(s.files).sort());
    return f === undefined ? null : { call: call('cat', { file: f }), text: `Show me what ${f} says.` };
  },
  (s, rng) => {
    const f = pick(rng, Object.keys(s.files).sort());
    const free = NEW_NAMES.filter((n) => !Object.hasOwn(s.files, n));
    if (f === undefined || free.length === 0) return null;
    const d = pick(rng, free);
    return { call: call('cp', { src: f, dst: d }), text: `Make a copy of ${f} named ${d}.` };
  },
  (s, rng) => {
    const f = pick(rng, Object.keys(s.files).sort());
    const free = NEW_NAMES.filter((n) => !Object.hasOwn(s.files, n));
    if (f === undefined || free.length === 0) return null;
    const d = pick(rng, free);
    return { call: call('mv', { src: f, dst: d }), text: `Rename ${f} to ${d}.` };
  },
  (s, rng) => {
    const f = pick(rng, Object.keys(s.files).sort());
    const t = pick(rng, LINES);
    return f === undefined
      ? null
      : { call: call('append', { file: f, text: t }), text: `Add the line "${t}" at the end of ${f}.` };
  },
  (s, rng) => {
    const fs = Object.keys(s.files).sort();
    if (fs.length < 3) return null;
    const f = pick(rng, fs);
    return { call: call('rm', { file: f }), text: `Delete ${f}.` };
  },
];

const open = (s: ApiState) =>
  Object.keys(s.accounts)
    .sort()
    .filter((id) => s.accounts[id].open);
const who = (s: ApiState, id: string) => `${id} (${s.accounts[id].owner})`;

const BANK_STEPS: Make[] = [
  (s, rng) => {
    const a = pick(rng, open(s));
    return {
      call: call('get_balance', { account: a }),
      text: `Tell me the balance of account ${who(s, a)}.`,
    };
  },
  (s, rng) => {
    const a = pick(rng, open(s));
    const x = 10 * (1 + rng.int(30));
    return {
      call: call('deposit', { account: a, amount: x }),
      text: `Deposit $${x} into account ${who(s, a)}.`,
    };
  },
  (s, rng) => {
    const a = pick(rng, open(s));
    const b = s.accounts[a].balance;
    if (b < 10) return null;
    const x = 10 * (1 + rng.int(Math.floor(b / 10)));
    return {
      call: call('withdraw', { account: a, amount: x }),
      text: `Withdraw $${x} from account ${who(s, a)}.`,
    };
  },
  (s, rng) => {
    const ids = rng.shuffle(open(s));
    if (ids.length < 2) return null;
    const [a, b] = ids;
    const bal = s.accounts[a].balance;
    if (bal < 10) return null;
    const x = 10 * (1 + rng.int(Math.floor(bal / 10)));
    return {
      call: call('transfer', { from: a, to: b, amount: x }),
      text: `Transfer $${x} from account ${who(s, a)} to account ${who(s, b)}.`,
    };
  },
  (s, rng) => {
    const ids = open(s);
    if (ids.length < 3) return null;
    const a = pick(rng, ids);
    return { call: call('close_account', { account: a }), text: `Close account ${who(s, a)}.` };
  },
];

const STEPS_OF_LEVEL: Record<ToolsLevel, [number, number]> = { 1: [1, 2], 2: [3, 4], 3: [5, 6] };

/** Builds a task's world from scratch (toolsWorld caches it). */
export function buildToolsWorld(params: ToolsParams, seed: number): ToolsWorld {
  const rng = Rng.derive(seed, STREAM.task, 0x7001);
  const level: ToolsLevel = params.level === 'mixed' ? ((1 + rng.int(3)) as ToolsLevel) : params.level;
  const initial = initialState(rng);
  const [lo, hi] = STEPS_OF_LEVEL[level];
  const n = lo + rng.int(hi - lo + 1);
  let state = cloneState(initial);
  const steps: GoalStep[] = [];
  const goldResults: string[] = [];
  const add = (mutatingOnly: boolean): void => {
    for (let tries = 0; tries < 100; tries++) {
      const api = params.domain === 'mixed' ? (rng.int(2) === 0 ? 'files' : 'bank') : params.domain;
      const makes = api === 'files' ? FILE_STEPS : BANK_STEPS;
      const made = makes[mutatingOnly ? 1 + rng.int(makes.length - 1) : rng.int(makes.length)](state, rng);
      if (made === null) continue;
      if (steps.some((x) => JSON.stringify(x.call) === JSON.stringify(made.call))) continue;
      const r = execute(
        state,
        made.call.name as ToolsToolName,
        made.call.arguments as Record<string, string>,
      );
      if (!r.ok) continue;
      state = r.state;
      steps.push({ ...made, api, mutating: r.mutating });
      goldResults.push(JSON.stringify(r.output));
      return;
    }
    throw new Error(`tools task ${seed}: could not generate a step`);
  };
  for (let i = 0; i < n; i++) add(false);
  if (!steps.some((x) => x.mutating)) add(true);
  const request = [
    'Please do the following, in order:',
    ...steps.map((x, i) => `${i + 1}. ${x.text}`),
    'Call finish when everything is done.',
  ].join('\n');
  return {
    params,
    level,
    initial,
    steps,
    request,
    goal: state,
    goldResults,
    attrs: goalAttributes(initial, state),
  };
}

const cache = new Map<string, ToolsWorld>();
const MAX_WORLDS = 1024;

export function toolsWorld(task: Task): ToolsWorld {
  const params = toolsParams(task.params);
  const key = JSON.stringify([params.level, params.domain, params.misuse, task.seed]);
  let world = cache.get(key);
  if (world === undefined) {
    world = buildToolsWorld(params, task.seed);
    if (cache.size >= MAX_WORLDS) cache.delete(cache.keys().next().value as string);
    cache.set(key, world);
  }
  return world;
}

export { canonical };
