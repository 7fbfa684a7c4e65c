// `--env openenv:URL`: a turnwise env served over OpenEnv (serve/openenv.ts) and consumed back through
// envs/openenv/ gives the in-process trajectories byte for byte — same tasks, same seeds, same policy —
// all but the `task` field, which names the env (`{"env": "openenv", "params": {"url": …}}`). Then what
// the consumer reads of a server (the spec, the chat encoding, the text view), how it refuses one that
// is not there or not OpenEnv, malformed actions as observations, and a server at capacity.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { InputError } from '../../src/core/errors.ts';
import { Rng } from '../../src/core/rng.ts';
import type { EnvConfig, Policy, Task, Trajectory } from '../../src/core/types.ts';
import { connectWebSocket } from '../../src/core/websocket.ts';
import { envConfig, envSpec, envs, makeTasks, prepareEnv } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { TabularPolicy } from '../../src/policies/tabular.ts';
import { rollout } from '../../src/rollout/batch.ts';
import { type RunningOpenEnv, startOpenEnvServer } from '../../src/serve/openenv.ts';

const running: RunningOpenEnv[] = [];
const dir = mkdtempSync(join(tmpdir(), 'turnwise-openenv-'));
after(async () => {
  for (const s of running) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

async function serve(config: EnvConfig, o: { budget?: number; maxSessions?: number } = {}): Promise<string> {
  const s = await startOpenEnvServer({
    envs,
    config,
    budget: o.budget ?? envs.spec({ ...config, seed: 0 }).maxTurns ?? 100,
    seed: 0,
    maxSessions: o.maxSessions ?? 64,
    metadata: { name: config.env, description: `${config.env} served for the tests` },
  });
  running.push(s);
  return s.url;
}

/** The served env's config as the consumer has it, read from the server first (what the CLI does). */
async function remote(url: string): Promise<EnvConfig> {
  await prepareEnv(`openenv:${url}`);
  return envConfig(`openenv:${url}`, {});
}

type AnyPolicy = Policy<unknown, unknown>;

async function play(
  config: EnvConfig,
  policy: (task: Task) => AnyPolicy,
  o: { tasks: number; samples: number; budget: number; seed: number; concurrency?: number },
): Promise<Trajectory[]> {
  return await rollout({
    tasks: makeTasks(config, o.tasks, o.seed),
    samples: o.samples,
    budget: o.budget,
    runSeed: o.seed,
    policy,
    makeEnv: (t) => envs.make(t),
    concurrency: o.concurrency ?? 8,
  });
}

/** Every byte of each trajectory but its task, which names the env; the task seeds equal. */
function assertSameTrajectories(local: Trajectory[], served: Trajectory[]): void {
  assert.equal(served.length, local.length);
  for (let i = 0; i < local.length; i++) {
    assert.equal(served[i].task.env, 'openenv');
    assert.equal(served[i].task.seed, local[i].task.seed);
    const { task: _a, ...l } = local[i];
    const { task: _b, ...s } = served[i];
    assert.equal(JSON.stringify(s), JSON.stringify(l), `trajectory ${local[i].id}`);
  }
}

test('round trip, FrozenLake: random maps on slippery ice, a non-uniform table policy and random — byte for byte', async () => {
  const config = envConfig('frozenlake', { random: true, size: 5, slippery: true });
  const served = await remote(await serve(config));
  const spec = envSpec({ ...served, seed: 0 });
  assert.deepEqual([spec.actions, spec.observations, spec.maxTurns], [4, 25, 100]);
  // A table with seeded, non-uniform logits: its actions depend on the observations it is given.
  const rng = Rng.derive(42);
  const logits = Float32Array.from({ length: 25 * 4 }, () => 3 * rng.float() - 1.5);
  const table = () => new TabularPolicy(25, 4, logits) as unknown as AnyPolicy;
  const o = { tasks: 6, samples: 4, budget: 40, seed: 3 };
  const local = await play(config, table, o);
  const remoteRun = await play(served, table, o);
  assertSameTrajectories(local, remoteRun);
  // The episodes vary (some reach G, some fall in): the comparison is not of empty runs.
  const kinds = new Set(local.map((t) => t.outcome.failure));
  assert.ok(kinds.size >= 2, `outcomes ${[...kinds].join(', ')}`);
  const random = (s: typeof spec) => () => makePolicy('random', s);
  assertSameTrajectories(
    await play(config, random(envSpec({ ...config, seed: 0 })), { ...o, budget: 100 }),
    await play(served, random(spec), { ...o, budget: 100 }),
  );
});

for (const id of ['sql', 'web'])
  test(`round trip, ${id}: a replayed oracle:eps=0.3 run with tool misuse mixed in — byte for byte`, async () => {
    const config = envConfig(id, {});
    const served = await remote(await serve(config));
    const localSpec = envSpec({ ...config, seed: 0 });
    const o = { tasks: 5, samples: 2, budget: localSpec.maxTurns ?? 20, seed: 10 };
    const recorded = await play(config, () => makePolicy('oracle:eps=0.3', localSpec), o);
    // The replay file: the recorded actions, with a call of a tool that does not exist and one with bad
    // arguments put in front of every other episode (the env judges them: valid=false observations).
    const lines = recorded.map((t, i) => {
      const actions = t.turns.map((x) => x.action);
      if (i % 2 === 0)
        actions.unshift(
          { name: 'drop_table', arguments: {} },
          { name: 'describe_table', arguments: { t: 1 } },
        );
      return JSON.stringify({ task: t.task.seed, sample: Number(t.id.split('-').pop()), actions });
    });
    const file = join(dir, `${id}-replay.jsonl`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    const local = await play(config, () => makePolicy(`replay:${file}`, localSpec), o);
    const remoteRun = await play(
      served,
      () => makePolicy(`replay:${file}`, envSpec({ ...served, seed: 0 })),
      o,
    );
    assertSameTrajectories(local, remoteRun);
    assert.ok(local.some((t) => t.turns.some((x) => x.info.valid === false)));
    assert.ok(local.some((t) => t.outcome.success));
  });

test("round trip, FrozenLake at the server's budget: truncation coincides; malformed actions (-1) are observations", async () => {
  const config = envConfig('frozenlake', { map: '4x4' });
  const served = await remote(await serve(config, { budget: 6 }));
  // Left at S stays at S: six turns, then truncated, as in process; -1 is refused without moving.
  const file = join(dir, 'lake-replay.jsonl');
  writeFileSync(
    file,
    [0, 1].map((task) => JSON.stringify({ task, sample: 0, actions: [0, -1, 0, -1, 0, 0, 0] })).join('\n'),
  );
  const o = { tasks: 2, samples: 1, budget: 6, seed: 0 };
  const local = await play(config, () => makePolicy(`replay:${file}`, envSpec({ ...config, seed: 0 })), o);
  const remoteRun = await play(
    served,
    () => makePolicy(`replay:${file}`, envSpec({ ...served, seed: 0 })),
    o,
  );
  assertSameTrajectories(local, remoteRun);
  assert.deepEqual(
    remoteRun[0].turns.map((t) => t.info),
    [{}, { valid: false }, {}, { valid: false }, {}, {}],
  );
  assert.deepEqual([remoteRun[0].outcome.end, remoteRun[0].outcome.failure], ['truncated', 'budget']);
});

test('what the consumer reads: the served chat encoding and text view equal the in-process ones', async () => {
  const config = envConfig('frozenlake', { map: '8x8', slippery: true });
  const served = await remote(await serve(config));
  const local = envSpec({ ...config, seed: 0 });
  const spec = envSpec({ ...served, seed: 0 });
  assert.deepEqual(spec.chat, local.chat);
  assert.equal(spec.observations, 64);
  const env = await envs.make({ ...served, seed: 0 });
  const first = await env.reset(1);
  const step = await env.step(2);
  const inProcess = await envs.make({ ...config, seed: 0 });
  assert.equal(env.text!(first), inProcess.text!(first));
  assert.equal(env.text!(step.observation), inProcess.text!(step.observation));
  await env.close?.();
});

test('a server at capacity (max_concurrent_envs 1): eight episodes in flight wait their turn, none fails', async () => {
  const config = envConfig('frozenlake', { map: '4x4', slippery: true });
  const served = await remote(await serve(config, { maxSessions: 1 }));
  const o = { tasks: 4, samples: 2, budget: 30, seed: 5, concurrency: 8 };
  const local = await play(config, () => makePolicy('random', envSpec({ ...config, seed: 0 })), o);
  const remoteRun = await play(served, () => makePolicy('random', envSpec({ ...served, seed: 0 })), o);
  assertSameTrajectories(local, remoteRun);
  assert.ok(remoteRun.every((t) => t.outcome.end !== 'error'));
});

test("a server full of another client's sessions: each episode ends as error at once, none waits for ever", async () => {
  const config = envConfig('frozenlake', { map: '4x4' });
  const url = await serve(config, { maxSessions: 1 });
  const served = await remote(url);
  // Another client holds the one session (its reset answered: the server counts it).
  const other = await connectWebSocket(`${url}/ws`);
  const answered = new Promise((r) => other.once('message', r));
  other.send(JSON.stringify({ type: 'reset', data: {} }));
  await answered;
  const o = { tasks: 2, samples: 3, budget: 10, seed: 0, concurrency: 4 };
  const policy = () => makePolicy('random', envSpec({ ...served, seed: 0 }));
  const refused = await play(served, policy, o);
  assert.equal(refused.length, 6);
  for (const t of refused) {
    assert.deepEqual([t.outcome.failure, t.turns.length], ['error', 0]);
    assert.match(
      t.outcome.error ?? '',
      /Server at capacity: 1\/1 sessions active.*\(code: CAPACITY_REACHED\)/,
    );
  }
  const gone = new Promise((r) => other.once('close', r));
  other.close();
  await gone;
  const after = await play(served, policy, o);
  assert.ok(after.every((t) => t.outcome.end !== 'error'));
});

test('refused at start, one line naming --env: nothing listening, not OpenEnv, the wrong env, a malformed URL', async () => {
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise((r) => closed.close(r));
  const refusal = async (id: string) => {
    try {
      await prepareEnv(id);
    } catch (e) {
      assert.ok(e instanceof InputError, String(e));
      assert.equal(e.field, '--env');
      assert.ok(!e.message.includes('\n'));
      return e.message;
    }
    assert.fail(`${id} was not refused`);
  };
  assert.equal(
    await refusal(`openenv:http://127.0.0.1:${port}`),
    `--env: got "openenv:http://127.0.0.1:${port}"; expected an OpenEnv server; http://127.0.0.1:${port} does not answer (ECONNREFUSED)`,
  );
  const notOpenEnv = createServer((_req, res) => {
    res.statusCode = 404;
    res.end('{"detail":"Not Found"}');
  });
  await new Promise<void>((r) => notOpenEnv.listen(0, '127.0.0.1', r));
  const other = `http://127.0.0.1:${(notOpenEnv.address() as AddressInfo).port}`;
  assert.match(
    await refusal(`openenv:${other}`),
    /expected an OpenEnv server; GET \/health answered HTTP 404$/,
  );
  notOpenEnv.close();
  const lake = await serve(envConfig('frozenlake', {}));
  assert.match(await refusal(`openenv:${lake}#sql`), /serves "frozenlake", not "sql"$/);
  await prepareEnv(`openenv:${lake}#frozenlake`);
  assert.match(
    await refusal('openenv:ftp://x'),
    /expected openenv:URL\[#name\], URL an http:\/\/ or https:\/\/ address/,
  );
});

test('training over OpenEnv: GRPO on a served FrozenLake learns the same table, iteration for iteration, as in process', async () => {
  const { parseTrainConfig } = await import('../../src/train/config.ts');
  const { trainPolicyGradient } = await import('../../src/train/loop.ts');
  const config = envConfig('frozenlake', { map: '4x4', slippery: true });
  const served = await remote(await serve(config));
  const run = async (env: EnvConfig) =>
    await trainPolicyGradient({
      config: parseTrainConfig({
        env: { env: env.env, params: env.params },
        iters: 4,
        groups: 4,
        groupSize: 4,
        budget: { kind: 'fixed', budget: 30 },
        eval: { episodes: 16 },
        seed: 7,
      }),
      envs,
    });
  const [local, remoteRun] = [await run(config), await run(served)];
  // The learned tables, bit for bit.
  const table = (r: Awaited<ReturnType<typeof run>>) =>
    Array.from(r.learner.params[0][1].data as Float32Array);
  assert.deepEqual(table(remoteRun), table(local));
  assert.notDeepEqual(table(local), new Array(table(local).length).fill(0), 'training moved the table');
  // Every metric that does not need the env's oracle (step quality and regret read Q*, which does
  // not cross the wire), iteration for iteration.
  const oracleFree = (r: Awaited<ReturnType<typeof run>>) =>
    r.metrics.map((m) =>
      Object.fromEntries(Object.entries(m.values).filter(([k]) => !/step_quality|step_regret/.test(k))),
    );
  assert.deepEqual(oracleFree(remoteRun), oracleFree(local));
  assert.equal(remoteRun.final?.success, local.final?.success);
});
