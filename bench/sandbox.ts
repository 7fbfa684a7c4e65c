// The code and sql envs' per-step bounds and what isolation costs (issue 21 §2). Prints one JSON object
// per line; machine-dependent, never asserted in tests.
//   node --import tsx bench/sandbox.ts [--attempts N] [--queries N] [--episodes N]
// - honest work, isolated vs in-thread (the reference, measured in the same run on the same inputs):
//   code attempts (each task's reference and wrong programs on its hidden tests) through the worker pool
//   and through runAttempt on this thread; sql queries (each task's menu queries and gold) through the
//   query processes and through runQuery on a connection of this process; one at a time (latency) and
//   eight in flight (throughput over the pool);
// - whole honest episodes: rollouts of oracle:eps=0.2 (the byte-identity workload), episodes/s, with the
//   default envs and with envs that grade and query on this thread (the reference), the median of three;
// - hostile work, the bounds: per-step wall time of code that spends its time in long native calls and
//   of queries inside one long native step, against the limit; the largest observation an output bomb
//   gets; the memory a query bomb gets before it is refused; the worker's wasm memory.
import type { Env, Task } from '../src/core/types.ts';
import {
  CodeEnv,
  type CodeObservation,
  codeWorld,
  DEFAULT_SANDBOX_LIMITS,
  grade,
  gradeIsolated,
  runAttempt,
  KILL_GRACE_MS as SANDBOX_GRACE_MS,
  sandboxModule,
  sandboxPool,
  sandboxWorkerState,
  WASM_MEMORY_PAGES,
  WORKER_HEAP_MB,
  WORKERS,
} from '../src/envs/code/index.ts';
import { envConfig, envs, makeTasks } from '../src/envs/index.ts';
import {
  DEFAULT_LIMITS,
  openReadOnly,
  PROCESS_MEMORY_MB,
  PROCESSES,
  KILL_GRACE_MS as QUERY_GRACE_MS,
  queryPool,
  runQuery,
  runQueryIsolated,
  SqlEnv,
  type SqlWorld,
  sqlScripted,
  sqlWorld,
} from '../src/envs/sql/index.ts';
import { makePolicy } from '../src/policies/spec.ts';
import { rollout } from '../src/rollout/batch.ts';
import { benchArgs } from './args.ts';

const { values } = benchArgs('bench/sandbox.ts', {
  options: {
    attempts: { type: 'string', default: '400' },
    queries: { type: 'string', default: '2000' },
    episodes: { type: 'string', default: '192' },
  },
});
const nAttempts = Number(values.attempts);
const nQueries = Number(values.queries);
const nEpisodes = Number(values.episodes);
const print = (o: Record<string, unknown>) => console.log(JSON.stringify(o));
const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

/** Seconds to run `jobs` with `inFlight` at once (in order; a new one starts as one ends). */
async function timed<J>(jobs: readonly J[], inFlight: number, run: (j: J) => unknown): Promise<number> {
  const t0 = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < jobs.length) await run(jobs[next++]);
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return (performance.now() - t0) / 1000;
}

/** The same jobs on this thread (the reference, after a warm-up) and isolated, one at a time and eight
 * in flight; `ready` starts the workers or processes (and lets them hold every world) first. */
async function versus<J>(
  jobs: J[],
  here: (j: J) => unknown,
  isolated: (j: J) => Promise<unknown>,
  ready: () => Promise<unknown>,
) {
  await ready();
  await timed(jobs.slice(0, 100), 1, here);
  const reference = await timed(jobs, 1, here);
  const one = await timed(jobs, 1, isolated);
  const eight = await timed(jobs, 8, isolated);
  const n = jobs.length;
  return {
    reference: round(n / reference, 1),
    isolated: round(n / one, 1),
    eightInFlight: round(n / eight, 1),
    addedMs: round(((one - reference) / n) * 1000),
  };
}

// --- code: honest attempts ------------------------------------------------------------------------
const codeJobs: { seed: number; code: string }[] = [];
for (let seed = 0; codeJobs.length < nAttempts; seed++) {
  const w = codeWorld({ ...envConfig('code', {}), seed });
  for (const code of [w.problem.reference, ...w.wrong]) codeJobs.push({ seed, code });
}
codeJobs.length = nAttempts;
const world = (seed: number) => codeWorld({ ...envConfig('code', {}), seed });
const module = await sandboxModule();
const inThread = (j: { seed: number; code: string }) => {
  const w = world(j.seed);
  runAttempt(
    module,
    j.code,
    w.problem.name,
    w.hidden.map((t) => ({ args: t.argsJson })),
    w.seed,
  );
};
const isolated = (j: { seed: number; code: string }) => gradeIsolated(world(j.seed), j.code);
sandboxPool.acquire();
const code = await versus(codeJobs, inThread, isolated, () =>
  Promise.all(Array.from({ length: WORKERS }, (_, i) => isolated(codeJobs[i]))),
);
print({
  bench: 'code-attempts',
  attempts: nAttempts,
  workers: WORKERS,
  inThreadPerSecond: code.reference,
  isolatedPerSecond: code.isolated,
  isolatedEightInFlightPerSecond: code.eightInFlight,
  addedMsPerAttempt: code.addedMs,
});

// --- sql: honest queries ------------------------------------------------------------------------
const sqlJobs: { seed: number; query: string }[] = [];
for (let seed = 0; sqlJobs.length < nQueries; seed++) {
  const w = sqlWorld({ ...envConfig('sql', {}), seed });
  const menu = sqlScripted(w)
    .validActions([])
    .filter((a) => a.name === 'execute_sql')
    .map((a) => a.arguments.query as string);
  for (const query of [w.question.gold, ...menu]) sqlJobs.push({ seed, query });
}
sqlJobs.length = nQueries;
const sqlW = (seed: number) => sqlWorld({ ...envConfig('sql', {}), seed });
const connections = new Map<number, ReturnType<typeof openReadOnly>>();
const queryInProcess = (j: { seed: number; query: string }) => {
  const w = sqlW(j.seed);
  let db = connections.get(j.seed);
  if (db === undefined) {
    db = openReadOnly(w);
    connections.set(j.seed, db);
  }
  runQuery(db, j.query, w.rowCounts);
};
const queryIsolated = (j: { seed: number; query: string }) =>
  runQueryIsolated(sqlW(j.seed), j.query, DEFAULT_LIMITS);
queryPool.acquire();
// Every process holds every world once before the clock starts.
const sql = await versus(sqlJobs, queryInProcess, queryIsolated, () =>
  timed(sqlJobs, PROCESSES, queryIsolated),
);
for (const db of connections.values()) db.close();
print({
  bench: 'sql-queries',
  queries: nQueries,
  processes: PROCESSES,
  inProcessPerSecond: sql.reference,
  isolatedPerSecond: sql.isolated,
  isolatedEightInFlightPerSecond: sql.eightInFlight,
  addedMsPerQuery: sql.addedMs,
});

// --- whole honest episodes (the byte-identity workload), isolated vs in-thread envs ------------------
const dbs = new Map<SqlWorld, ReturnType<typeof openReadOnly>>();
const inThreadEnv = (t: Task): Env<unknown, unknown> => {
  if (t.env === 'code')
    return new CodeEnv(codeWorld(t), DEFAULT_SANDBOX_LIMITS, (w, code, limits) =>
      grade(w, code, module, limits),
    ) as Env<unknown, unknown>;
  return new SqlEnv(sqlWorld(t), DEFAULT_LIMITS, (w, sql, limits) => {
    let db = dbs.get(w);
    if (db === undefined) {
      db = openReadOnly(w);
      dbs.set(w, db);
    }
    return runQuery(db, sql, w.rowCounts, limits);
  }) as Env<unknown, unknown>;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const env of ['code', 'sql']) {
  const rates: Record<string, number[]> = { inThread: [], isolated: [] };
  for (let rep = 0; rep < 4; rep++) {
    for (const [kind, makeEnv] of [
      ['inThread', inThreadEnv],
      ['isolated', (t: Task) => envs.make(t)],
    ] as const) {
      const tasks = makeTasks(envConfig(env, {}), nEpisodes / 4, 5 + 1000 * rep);
      const policy = makePolicy('oracle:eps=0.2', envs.spec(tasks[0]));
      const t0 = performance.now();
      const trajectories = await rollout({ tasks, samples: 4, budget: 12, runSeed: 5, policy, makeEnv });
      const seconds = (performance.now() - t0) / 1000;
      if (rep > 0) rates[kind].push(trajectories.length / seconds); // the first is a warm-up
    }
  }
  print({
    bench: `${env}-episodes`,
    episodes: nEpisodes,
    inThreadPerSecond: round(median(rates.inThread), 1),
    isolatedPerSecond: round(median(rates.isolated), 1),
    ratio: round(median(rates.isolated) / median(rates.inThread), 2),
  });
}
for (const db of dbs.values()) db.close();

// --- hostile code: per-step wall time, observation size, memory ------------------------------------
const w3 = world(3);
const fn = w3.problem.name;
const codeEnv = new CodeEnv(w3);
codeEnv.reset(3);
const hostileCode: [string, string][] = [
  ['native indexOf', `function ${fn}() { return 'a'.repeat(1e6).indexOf('a'.repeat(1e4) + 'b'); }`],
  ['native split', `function ${fn}() { return 'a'.repeat(1e6).split('a'.repeat(1e4) + 'b'); }`],
  ['loop', `function ${fn}() { for (;;); }`],
  [
    'output bomb',
    `String.prototype.slice = function () { return String(this); };\nfunction ${fn}() { return 'y'.repeat(1e7); }`,
  ],
  ['memory bomb', `function ${fn}() { const a = []; for (;;) a.push(new Uint8Array(1e6)); }`],
];
for (const [what, code] of hostileCode) {
  const t0 = performance.now();
  const r = await codeEnv.step({ name: 'run_tests', arguments: { code } });
  const ms = performance.now() - t0;
  const obs = r.observation as CodeObservation;
  print({
    bench: 'code-hostile',
    what,
    stepMs: Math.round(ms),
    limitMs: DEFAULT_SANDBOX_LIMITS.deadlineMs + SANDBOX_GRACE_MS,
    observationChars: JSON.stringify(obs).length,
    attemptError: obs.last?.attemptError?.slice(0, 80) ?? null,
  });
}
codeEnv.close();
print({
  bench: 'code-memory',
  wasmMemoryMaxBytes: WASM_MEMORY_PAGES.maximum * 65536,
  wasmMemorySeenBytes: sandboxWorkerState().memoryBytes,
  workerHeapMB: WORKER_HEAP_MB,
});

// --- hostile sql: per-step wall time, memory, result size ------------------------------------------
const ones = (k: number) => {
  let s = "'1'";
  for (let i = 0; i < k; i++) s = `replace(${s}, '1', '1,1,1,1,1,1,1,1,1,1')`;
  return s;
};
const array = (k: number) => `'[' || ${ones(k)} || ']'`;
const sw = sqlW(2);
const sqlEnv = new SqlEnv(sw);
sqlEnv.reset(2);
const hostileSql: [string, string][] = [
  ['json_each product', `SELECT count(*) FROM json_each(${array(4)}) a, json_each(${array(4)}) b`],
  [
    'pragma function product',
    'SELECT count(*) FROM pragma_function_list a, pragma_function_list b, pragma_function_list c',
  ],
  [
    '600 MB row',
    `SELECT length(a) + length(b) + length(c) FROM (SELECT ${ones(8)} a, ${ones(8)} || 'b' b, ${ones(8)} || 'c' c)`,
  ],
  ['wide result', `SELECT ${ones(5)} FROM ${sw.domain.people.table}`],
];
for (const [what, query] of hostileSql) {
  const t0 = performance.now();
  const r = await sqlEnv.step({ name: 'execute_sql', arguments: { query } });
  print({
    bench: 'sql-hostile',
    what,
    stepMs: Math.round(performance.now() - t0),
    limitMs: DEFAULT_LIMITS.timeoutMs + QUERY_GRACE_MS,
    observationChars: JSON.stringify(r.observation).length,
    error: r.observation.last?.error ?? null,
  });
}
sqlEnv.close();
print({ bench: 'sql-memory', processMemoryMB: PROCESS_MEMORY_MB, processes: PROCESSES });

sandboxPool.release();
queryPool.release();
await Promise.all([sandboxPool.drained(), queryPool.drained()]);
print({ bench: 'left-behind', workers: sandboxPool.live, processes: queryPool.live });
