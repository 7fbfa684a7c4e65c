// The rollout queue's seam without Redis: jobs as plain data with deterministic ids, a worker's episode
// equal byte for byte to rollout()'s, the wire form holding what JSON cannot, and the producer's
// reassembly — any arrival order, duplicates counted once — giving rollout()'s batch.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Policy, Task, Trajectory } from '../../src/core/types.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { rollout } from '../../src/rollout/batch.ts';
import {
  batchJobs,
  checkRunId,
  decodeTrajectory,
  encodeTrajectory,
  IN_PROCESS,
  jobId,
  playJob,
  Reassembly,
} from '../../src/rollout/queue.ts';

type AnyPolicy = Policy<unknown, unknown>;
const slippery4 = envConfig('frozenlake', { map: '4x4', slippery: true });
const random4 = envConfig('frozenlake', { random: true, size: 4, p: 0.8, slippery: true });

/** A deterministic shuffle (Fisher–Yates on a fixed LCG), so a failure is reproducible. */
function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const a = [...xs];
  let s = seed >>> 0;
  for (let i = a.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const j = s % (i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

test('job ids: run-<run>-task-<seed>-sample-<k>-v<version>, never a colon; run ids are checked', () => {
  assert.equal(jobId('rollout-1a2b.3', 17, 2, 5), 'run-rollout-1a2b.3-task-17-sample-2-v5');
  assert.equal(checkRunId('train-0f.12'), 'train-0f.12');
  assert.throws(() => checkRunId('a:b'), /run: got "a:b"; expected 1 to 100 of A-Z a-z 0-9 \. _ -/);
  assert.throws(() => checkRunId(''), /expected 1 to 100/);
});

test('a batch as jobs: one per episode in episode order, budgets and ids as rollout() gives them', () => {
  const tasks = makeTasks(slippery4, 3, 10);
  const policy = makePolicy('oracle:eps=0.2', envs.spec(tasks[0]));
  const budget = (task: Task, sample: number) => 5 + (task.seed % 3) + sample;
  const opts = { tasks, samples: 2, budget, runSeed: 4, policy, makeEnv, idPrefix: 'i7-' };
  const { jobs, order } = batchJobs(opts, 'r.1', { id: policy.id, spec: 'oracle:eps=0.2' }, 3);
  const local = rollout(opts) as Trajectory[];
  assert.deepEqual(order, [
    'run-r.1-task-10-sample-0-v3',
    'run-r.1-task-10-sample-1-v3',
    'run-r.1-task-11-sample-0-v3',
    'run-r.1-task-11-sample-1-v3',
    'run-r.1-task-12-sample-0-v3',
    'run-r.1-task-12-sample-1-v3',
  ]);
  order.forEach((id, i) => {
    const job = jobs.get(id)!;
    assert.equal(job.id, local[i].id);
    assert.equal(job.budget, local[i].budget);
    assert.equal(job.revealBudget, local[i].revealBudget);
    // Plain data: a JSON round trip is the identity.
    assert.deepEqual(JSON.parse(JSON.stringify(job)), job);
  });
});

test('the same (task, sample) twice in a batch is one job; the same id for another episode is refused', () => {
  const [t] = makeTasks(slippery4, 1, 3);
  const policy = makePolicy('random', envs.spec(t));
  const ref = { id: policy.id, spec: 'random' };
  const same = batchJobs({ tasks: [t, t], samples: 2, budget: 9, runSeed: 1, policy, makeEnv }, 'r', ref, 0);
  assert.equal(same.jobs.size, 2);
  assert.deepEqual(same.order, [
    'run-r-task-3-sample-0-v0',
    'run-r-task-3-sample-1-v0',
    'run-r-task-3-sample-0-v0',
    'run-r-task-3-sample-1-v0',
  ]);
  const other = { ...t, params: { ...t.params, slippery: false } };
  assert.throws(
    () => batchJobs({ tasks: [t, other], samples: 1, budget: 9, runSeed: 1, policy, makeEnv }, 'r', ref, 0),
    /job run-r-task-3-sample-0-v0 stands for two different episodes/,
  );
});

test('what cannot travel is refused: a policy per task, expert prefixes, a reference naming another policy', () => {
  const tasks = makeTasks(slippery4, 1, 0);
  const policy = makePolicy('random', envs.spec(tasks[0]));
  const ref = { id: policy.id, spec: 'random' };
  const base = { tasks, samples: 1, budget: 5, runSeed: 0, policy, makeEnv };
  assert.throws(() => batchJobs({ ...base, policy: () => policy }, 'r', ref, 0), /one policy for every task/);
  assert.throws(
    () => batchJobs({ ...base, prefix: () => ({ policy, turns: 1 }) }, 'r', ref, 0),
    /cannot carry expert prefixes/,
  );
  assert.throws(() => batchJobs(base, 'r', { id: 'oracle', spec: 'oracle' }, 0), /reference names oracle/);
});

test("a worker's episode is rollout()'s, byte for byte: fixed and random maps, sync and lockstep policies", () => {
  for (const [config, spec] of [
    [slippery4, 'oracle:eps=0.3'],
    [random4, 'random'],
    [random4, 'mlp:hidden=8,seed=2'],
  ] as const) {
    const tasks = makeTasks(config, 5, 20);
    const policy = makePolicy(spec, envs.spec(tasks[0]));
    const opts = { tasks, samples: 3, budget: 30, runSeed: 9, policy, makeEnv };
    const local = rollout(opts) as Trajectory[];
    const { jobs, order } = batchJobs(opts, 'r', { id: policy.id, spec }, 0);
    // A fresh policy, as a worker opens it, and a fresh env per job, in a shuffled order.
    const opened = makePolicy(spec, envs.spec(tasks[0]));
    const played = new Map<string, string>();
    for (const id of shuffled(order, 5))
      played.set(id, JSON.stringify(playJob(jobs.get(id)!, opened, makeEnv(jobs.get(id)!.task))));
    assert.deepEqual(
      order.map((id) => played.get(id)),
      local.map((t) => JSON.stringify(t)),
      `${spec} on ${JSON.stringify(config.params)}`,
    );
  }
});

test('a worker records the policy id the job names (a checkpoint copy would name its own path)', () => {
  const [task] = makeTasks(slippery4, 1, 0);
  const policy = makePolicy('random', envs.spec(task));
  const { jobs } = batchJobs(
    { tasks: [task], samples: 1, budget: 4, runSeed: 0, policy, makeEnv },
    'r',
    { id: policy.id, spec: 'random' },
    0,
  );
  const job = { ...[...jobs.values()][0], policy: { id: 'runs/a', checkpoint: 'f'.repeat(64) } };
  const copy: AnyPolicy = {
    ...policy,
    id: '/tmp/turnwise-worker-x/ffff.safetensors',
    act: (c) => policy.act(c),
  };
  assert.equal((playJob(job, copy, makeEnv(task)) as Trajectory).policy, 'runs/a');
});

test('the env of a job is closed after its episode, also when the episode cannot start', async () => {
  const [task] = makeTasks(slippery4, 1, 0);
  const policy = makePolicy('random', envs.spec(task));
  const ref = { id: policy.id, spec: 'random' };
  const { jobs } = batchJobs(
    { tasks: [task], samples: 1, budget: 4, runSeed: 0, policy, makeEnv },
    'r',
    ref,
    0,
  );
  const job = [...jobs.values()][0];
  let closed = 0;
  const env = () => Object.assign(makeEnv(task), { close: async () => void closed++ });
  await playJob(job, policy, env());
  assert.equal(closed, 1);
  const aware: AnyPolicy = { ...policy, budgetAware: true, act: (c) => policy.act(c) };
  // The env's close is asynchronous here, so the refusal comes after it, as a rejection.
  await assert.rejects(
    Promise.resolve().then(() => playJob(job, aware, env())),
    /reveal the budget/,
  );
  assert.equal(closed, 2);
});

test('the wire form keeps −∞, NaN and −0, which JSON cannot: the same values, the same JSON', () => {
  const [task] = makeTasks(slippery4, 1, 0);
  const t: Trajectory = {
    id: 'x',
    task,
    policy: 'p',
    budget: 3,
    revealBudget: false,
    turns: [
      {
        t: 0,
        observation: 0,
        action: 1,
        reward: -0,
        logp: Number.NEGATIVE_INFINITY,
        info: {},
        trace: { text: 'a', logprobs: [Number.NEGATIVE_INFINITY, -0.5, Number.NaN] },
      },
    ],
    outcome: {
      success: false,
      return: -0,
      turns: 1,
      firstSuccessTurn: null,
      end: 'truncated',
      failure: 'budget',
    },
  };
  const back = decodeTrajectory(encodeTrajectory(t));
  assert.equal(back.turns[0].logp, Number.NEGATIVE_INFINITY);
  assert.deepEqual(back.turns[0].trace?.logprobs, [Number.NEGATIVE_INFINITY, -0.5, Number.NaN]);
  assert.ok(Object.is(back.turns[0].reward, -0));
  assert.ok(Object.is(back.outcome.return, -0));
  assert.equal(back.outcome.firstSuccessTurn, null);
  assert.equal(JSON.stringify(back), JSON.stringify(t));
  // Plain JSON would have turned −∞ into null and −0 into 0.
  assert.equal(JSON.parse(JSON.stringify(t)).turns[0].logp, null);
});

test('reassembly: results in any order, duplicates ignored, each episode handed on once in episode order', () => {
  const tasks = makeTasks(random4, 6, 100);
  const policy = makePolicy('random', envs.spec(tasks[0]));
  const opts = { tasks, samples: 4, budget: 25, runSeed: 2, policy, makeEnv };
  const local = rollout(opts) as Trajectory[];
  const { jobs, order } = batchJobs(opts, 'r', { id: policy.id, spec: 'random' }, 0);
  const wire = new Map(
    order.map((id) => [
      id,
      encodeTrajectory(playJob(jobs.get(id)!, policy, makeEnv(jobs.get(id)!.task)) as Trajectory),
    ]),
  );
  for (const keep of [true, false]) {
    const seen: number[] = [];
    const lines: string[] = [];
    const r = new Reassembly(order, {
      keep,
      onTrajectory: (t, i) => {
        seen.push(i);
        lines.push(JSON.stringify(t));
      },
    });
    // Every result twice, the second copies interleaved with the first: at-least-once delivery.
    const arrivals = shuffled([...order, ...order], 11);
    const taken = arrivals.map((id) => r.settle(id, wire.get(id)!));
    assert.equal(taken.filter(Boolean).length, order.length);
    assert.equal(r.taken, order.length);
    assert.equal(r.duplicates, order.length);
    assert.ok(r.complete);
    assert.deepEqual(r.missing(), []);
    assert.deepEqual(
      seen,
      order.map((_, i) => i),
    );
    assert.deepEqual(
      lines,
      local.map((t) => JSON.stringify(t)),
    );
    assert.equal(r.result.length, keep ? local.length : 0);
    // A result of another batch is not this batch's.
    assert.equal(r.settle('run-other-task-1-sample-0-v0', wire.get(order[0])!), false);
  }
});

test('reassembly waits for the earliest missing episode, and says which jobs it still awaits', () => {
  const order = ['a', 'b', 'c'];
  const [task] = makeTasks(slippery4, 1, 0);
  const t = (id: string): string =>
    encodeTrajectory({
      id,
      task,
      policy: 'p',
      budget: 1,
      revealBudget: false,
      turns: [],
      outcome: {
        success: false,
        return: 0,
        turns: 0,
        firstSuccessTurn: null,
        end: 'truncated',
        failure: 'budget',
      },
    });
  const got: string[] = [];
  const r = new Reassembly(order, { onTrajectory: (x) => got.push(x.id) });
  r.settle('c', t('c'));
  r.settle('b', t('b'));
  assert.deepEqual(got, []);
  assert.deepEqual(r.missing(), ['a']);
  assert.ok(!r.complete);
  r.settle('a', t('a'));
  assert.deepEqual(got, ['a', 'b', 'c']);
});

test('the in-process queue is rollout() itself', async () => {
  const tasks = makeTasks(random4, 4, 0);
  const policy = makePolicy('oracle:eps=0.1', envs.spec(tasks[0]));
  const opts = { tasks, samples: 2, budget: 20, runSeed: 3, policy, makeEnv };
  const run = IN_PROCESS.runner({ policy: { id: policy.id, spec: 'ignored' } });
  assert.equal(JSON.stringify(await run(opts)), JSON.stringify(rollout(opts)));
  assert.equal(IN_PROCESS.where, 'in-process');
});
