// The web env's contracts: the oracle solves every task of 30 seeds of each app (canonical and unseen
// variants), random succeeds on almost none (a measured bound), the eps-oracle in between; the
// per-turn quality rises monotonically along the oracle's path to 1; variants keep the app logic and
// change what the agent sees; snapshot/restore round trips; checkEnv; the tool schemas agree with ajv;
// MCP through the SDK's own client; the CLI.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Ajv } from 'ajv';
import type { Env, StepResult, Task, ToolCall, Trajectory } from '../../../src/core/types.ts';
import { checkEnv } from '../../../src/envs/check.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../../src/envs/index.ts';
import {
  describeWeb,
  parseWebCall,
  WEB_TOOLS,
  type WebEnv,
  type WebObservation,
} from '../../../src/envs/web/index.ts';
import { makePolicy } from '../../../src/policies/spec.ts';
import { rollout } from '../../../src/rollout/batch.ts';
import { turnwise } from '../../cli/run.ts';

const DOMAINS = ['shop', 'booking', 'admin'] as const;
const BUDGET = 40;
const BIN = fileURLToPath(new URL('../../../bin/turnwise.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'turnwise-web-'));

const task = (seed: number, params: Record<string, unknown> = {}): Task => ({
  ...envConfig('web', params),
  seed,
});
const webEnv = (seed: number, params: Record<string, unknown> = {}) =>
  makeEnv(task(seed, params)) as unknown as WebEnv;

async function run(tasks: Task[], policy: string, samples = 1): Promise<Trajectory[]> {
  return (await rollout({
    tasks,
    samples,
    budget: BUDGET,
    runSeed: 5,
    policy: makePolicy(policy, envs.spec(tasks[0])),
    makeEnv: envs.make,
  })) as Trajectory[];
}

const quality = (t: Trajectory) => t.turns.map((x) => x.info.quality as number);

test('the oracle solves every task of 30 seeds of each app, canonical and unseen variants; quality rises monotonically to 1', async () => {
  for (const domain of DOMAINS)
    for (const variant of [0, 'mixed'] as const) {
      const trs = await run(makeTasks(envConfig('web', { domain, variant }), 30, 0), 'oracle');
      for (const t of trs) {
        const where = `${domain} variant ${variant} seed ${t.task.seed}`;
        assert.deepEqual([t.outcome.success, t.outcome.failure, t.outcome.return], [true, null, 1], where);
        assert.ok(t.outcome.turns <= 25, `${where}: ${t.outcome.turns} turns`);
        const q = quality(t);
        for (let i = 1; i < q.length; i++)
          assert.ok(q[i] >= q[i - 1], `${where}: quality fell at turn ${i}: ${q}`);
        assert.equal(q[q.length - 1], 1, where);
        assert.ok(q[0] < 1, where);
        // It rises once per sub-goal met, each met sub-goal stays met.
        const met = t.turns.map((x) => x.info.met as number);
        assert.equal(met[met.length - 1], t.turns[0].info.goals);
        for (const x of t.turns)
          assert.equal(x.info.valid, undefined, `${where}: the oracle made an invalid call`);
      }
    }
});

test('random succeeds on almost none (measured: 0 of 360); the eps-oracle lies between', async () => {
  const tasks = DOMAINS.flatMap((domain) => makeTasks(envConfig('web', { domain }), 30, 100));
  const random = await run(tasks, 'random', 4);
  const wins = random.filter((t) => t.outcome.success).length;
  assert.ok(wins <= 3, `random solved ${wins} of ${random.length}`);
  // Its episodes end by its own answer (wrong), the budget, or a wrong commit — never an invalid call.
  for (const t of random)
    assert.ok(
      ['wrong-answer', 'budget', 'irreversible', null].includes(t.outcome.failure),
      t.outcome.failure ?? '',
    );
  const eps = await run(tasks, 'oracle:eps=0.3');
  const rate = eps.filter((t) => t.outcome.success).length / eps.length;
  assert.ok(rate > 0.1 && rate < 0.9, `eps=0.3 solved ${rate}`);
});

test('variants: the same data, goals and checks; other labels, widgets, layout and flows; variant 0 is canonical', () => {
  const seen: Record<string, Set<string>> = {};
  for (const domain of DOMAINS) {
    const base = describeWeb(task(4, { domain }), true) as { goal: string; data: Record<string, unknown> };
    const homes = new Set<string>();
    for (let variant = 0; variant < 40; variant++) {
      const d = describeWeb(task(4, { domain, variant }), true) as {
        goal: string;
        variant: number;
        data: Record<string, unknown>;
      };
      const { variant: choices, ...data } = d.data;
      const { variant: _, ...baseData } = base.data;
      assert.deepEqual(data, baseData, `${domain} variant ${variant}: other data`);
      assert.equal(d.goal, base.goal);
      for (const [k, v] of Object.entries(choices as Record<string, string>)) {
        seen[`${domain}.${k}`] ??= new Set();
        seen[`${domain}.${k}`].add(v);
      }
      const e = webEnv(4, { domain, variant });
      homes.add((e.reset(0) as WebObservation).page);
    }
    assert.ok(homes.size >= 30, `${domain}: ${homes.size} distinct start pages in 40 variants`);
  }
  // Every flow and widget kind a variant may take appears in 40 variants.
  const sizes = Object.fromEntries(Object.entries(seen).map(([k, v]) => [k, v.size]));
  assert.deepEqual(sizes, {
    'shop.checkout': 3,
    'shop.afterAdd': 2,
    'booking.flow': 3,
    'booking.dates': 2,
    'booking.guests': 3,
    'admin.delete': 3,
    'admin.afterSave': 2,
    'admin.status': 3,
  });
  // The canonical shop: first labels, a select for the colour, nav first.
  const page = (webEnv(0, { domain: 'shop' }).reset(0) as WebObservation).page.split('\n');
  assert.deepEqual(
    page.slice(1, 4).map((l) => l.replace(/\[\d+\] /, '')),
    ["\tnavigation ''", "\t\tlink 'Home'", "\t\tlink 'Cart (0)'"],
  );
  assert.ok(
    page.some((l) => /^\t\t\t\[\d+\] combobox 'Color' value='Any', hasPopup='menu', expanded=False$/.test(l)),
  );
  // Deterministic: a variant renders the same pages twice.
  assert.equal(
    (webEnv(3, { variant: 17 }).reset(0) as WebObservation).page,
    (webEnv(3, { variant: 17 }).reset(0) as WebObservation).page,
  );
});

test('snapshot and restore: the same continuation, in the env and in a fresh one; stateKey follows state', () => {
  for (const domain of DOMAINS) {
    const e = webEnv(8, { domain, level: 3 });
    e.reset(0);
    const view = e.scripted();
    const turns: { action: ToolCall }[] = [];
    const go = (env: WebEnv, action: ToolCall) => {
      const r = env.step(action) as StepResult<WebObservation>;
      turns.push({ action });
      return r;
    };
    let fourth: StepResult<WebObservation> | undefined;
    for (let i = 0; i < 4; i++) fourth = go(e, view.goldAction(turns as never) as ToolCall);
    const snap = e.snapshot();
    assert.deepEqual(JSON.parse(JSON.stringify(snap)), snap);
    // A detour from the menu, then the oracle.
    const menu = view.validActions(turns as never) as ToolCall[];
    const actions = [menu[menu.length - 2], ...Array.from({ length: 3 }, () => undefined)];
    const first: StepResult<WebObservation>[] = [];
    for (const a of actions) first.push(go(e, a ?? (view.goldAction(turns as never) as ToolCall)));
    const played = first.map((_, i) => turns[4 + i].action);
    for (const env of [e, webEnv(8, { domain, level: 3 })]) {
      if (env !== e) env.reset(0);
      env.restore(snap);
      const again = played.map((a) => env.step(a) as StepResult<WebObservation>);
      assert.deepEqual(again, first, domain);
      assert.equal(env.stateKey(again[2].observation), e.stateKey(first[2].observation));
    }
    // The key is the state's: the same page reached twice has one key; another page another.
    const f = webEnv(8, { domain, level: 3 });
    const start = f.reset(0) as WebObservation;
    assert.equal(f.stateKey(start), e.stateKey(webEnv(8, { domain, level: 3 }).reset(0) as WebObservation));
    assert.notEqual(f.stateKey(start), e.stateKey(fourth!.observation));
  }
});

test('checkEnv passes (menu actions, bad calls, snapshots); every env a rollout makes is closed; schemas agree with ajv', async () => {
  for (const domain of DOMAINS) {
    const menu = webEnv(0, { domain })
      .menu()
      .filter((a) => a.name !== 'answer');
    const extra: ToolCall[] = [
      { name: 'click', arguments: { id: '99999' } },
      { name: 'type', arguments: { id: 3 } },
      { name: 'answer', arguments: { text: 'done' } },
    ];
    const problems = await checkEnv(() => webEnv(0, { domain }) as unknown as Env<WebObservation, ToolCall>, {
      episodes: 5,
      maxTurns: 12,
      seed: 1,
      action: (rng) => (rng.int(6) === 0 ? extra[rng.int(3)] : menu[rng.int(menu.length)]),
      malformed: { name: 'press', arguments: {} },
    });
    assert.deepEqual(problems, []);
  }
  let made = 0;
  let closed = 0;
  const counted = (t: Task) => {
    const env = envs.make(t) as unknown as WebEnv;
    made++;
    const close = env.close.bind(env);
    env.close = () => {
      closed++;
      return close();
    };
    return env as unknown as Env<unknown, unknown>;
  };
  const tasks = makeTasks(envConfig('web', {}), 6, 40);
  await rollout({
    tasks,
    samples: 2,
    budget: BUDGET,
    runSeed: 1,
    policy: makePolicy('oracle:eps=0.3', envs.spec(tasks[0])),
    makeEnv: counted,
    concurrency: 3,
  });
  assert.deepEqual([made, closed], [6, 6]);
  const ajv = new Ajv();
  const byName = new Map(WEB_TOOLS.map((t) => [t.name, ajv.compile(t.parameters)]));
  for (const c of [
    { name: 'click', arguments: { id: '12' } },
    { name: 'click', arguments: { id: 12 } },
    { name: 'click', arguments: { id: 'a12' } },
    { name: 'click', arguments: {} },
    { name: 'type', arguments: { id: '3', text: 'Busan' } },
    { name: 'type', arguments: { id: '3', text: 'x', extra: 1 } },
    { name: 'select', arguments: { id: 4, option: '' } },
    { name: 'goto', arguments: { url: '/cart' } },
    { name: 'back', arguments: {} },
    { name: 'submit', arguments: { now: true } },
    { name: 'answer', arguments: { text: 'Order 1043' } },
  ])
    assert.equal(byName.get(c.name)!(c.arguments), parseWebCall(c).ok, JSON.stringify(c));
});

// ---- MCP ----

const open: Client[] = [];
after(() => Promise.all(open.map((c) => c.close())));

test('mcp --env web: the MCP SDK’s client plays the oracle’s episode; the stored line is the in-process trajectory', async () => {
  const t = task(6, { domain: 'shop', variant: 2 });
  const [inProcess] = (await rollout({
    tasks: [t],
    samples: 1,
    budget: BUDGET,
    runSeed: t.seed,
    policy: makePolicy('oracle', envs.spec(t)),
    makeEnv: envs.make,
  })) as Trajectory[];
  assert.equal(inProcess.outcome.success, true);
  const store = join(dir, 'mcp.jsonl');
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      BIN,
      'mcp',
      '--env',
      'web',
      '--domain',
      'shop',
      '--variant',
      '2',
      '--task-seed',
      '6',
      '--budget',
      String(BUDGET),
      '--store',
      store,
    ],
    stderr: 'pipe',
  });
  const client = new Client({ name: 'turnwise-test', version: '1.0.0' });
  open.push(client);
  await client.connect(transport);
  const tools = (await client.listTools()).tools;
  assert.deepEqual(
    tools.map((x) => x.name),
    ['click', 'type', 'select', 'goto', 'back', 'submit', 'answer', 'observe'],
  );
  const env = envs.make(t);
  const first = (await client.callTool({ name: 'observe', arguments: {} })) as CallToolResult;
  assert.equal((first.content[0] as { text: string }).text, env.text!(inProcess.turns[0].observation));
  let last: CallToolResult | undefined;
  for (const turn of inProcess.turns) {
    const a = turn.action as ToolCall;
    last = (await client.callTool({ name: a.name, arguments: a.arguments })) as CallToolResult;
  }
  const s = last!.structuredContent as { done: boolean; success: boolean; return: number };
  assert.deepEqual([s.done, s.success, s.return], [true, true, 1]);
  await client.close();
  const [line] = readFileSync(store, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Trajectory);
  const strip = (x: Trajectory) => ({
    ...x,
    id: '',
    policy: '',
    turns: x.turns.map((y) => ({ ...y, logp: 0 })),
  });
  assert.deepEqual(strip(line), strip(inProcess));
});

// ---- CLI ----

test('CLI: rollout --env web (oracle all, random none), env describe with the gold path, bad input refused', async () => {
  const roll = async (policy: string, ...more: string[]) => {
    const r = await turnwise([
      'rollout',
      '--env',
      'web',
      '--policy',
      policy,
      '--tasks',
      '30',
      '--budget',
      String(BUDGET),
      '--json',
      ...more,
    ]);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as { success: number; episodes: number; failures: Record<string, number> };
  };
  const oracle = await roll('oracle', '--variant', 'mixed');
  assert.deepEqual([oracle.episodes, oracle.success], [30, 1]);
  const random = await roll('random');
  assert.equal(random.success, 0);
  const d = await turnwise([
    'env',
    'describe',
    'web',
    '--domain',
    'booking',
    '--level',
    '1',
    '--task-seed',
    '3',
    '--gold',
  ]);
  assert.equal(d.code, 0, d.stderr);
  const desc = describeWeb(task(3, { domain: 'booking', level: 1 }), true) as {
    goal: string;
    gold: { path: { text: string }[] };
  };
  const lines = d.stdout.split('\n');
  assert.equal(
    lines[0],
    'web {"domain":"booking","level":1,"variant":0,"browser":false,"misuse":3} task seed 3',
  );
  assert.equal(lines[2], `goal: ${desc.goal}`);
  for (const [i, s] of desc.gold.path.entries())
    assert.ok(
      lines.some((l) => l.startsWith(`  ${i + 1}. ${s.text}`)),
      s.text,
    );
  assert.match(d.stdout, /^tools: click, type, select, goto, back, submit, answer$/m);
  for (const [args, line] of [
    [['--variant', 'x'], 'turnwise: --variant: got "x"; expected an integer from 0 to 1000000, or mixed'],
    [['--domain', 'bank'], /^turnwise: --domain: /],
    [['--level', '4'], /^turnwise: --level: /],
  ] as const) {
    const bad = await turnwise(['rollout', '--env', 'web', '--policy', 'oracle', '--tasks', '1', ...args]);
    assert.equal(bad.code, 2);
    assert.equal(bad.stderr.trim().split('\n').length, 1);
    if (typeof line === 'string') assert.equal(bad.stderr.trim(), line);
    else assert.match(bad.stderr, line);
  }
  const other = await turnwise([
    'rollout',
    '--env',
    'frozenlake',
    '--variant',
    '2',
    '--policy',
    'oracle',
    '--tasks',
    '1',
  ]);
  assert.deepEqual(
    [other.code, other.stderr.trim()],
    [2, 'turnwise: --variant: got 2; frozenlake has no --variant'],
  );
});
