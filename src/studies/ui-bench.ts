// `turnwise bench ui`: how fast the dashboard answers on a large run (docs/benchmarks.md). A run of at
// least `turns` turns is generated first (not timed): FrozenLake 8x8, slippery, oracle:eps=0.2, budget
// 100, 8 samples a task, through the library's rollout(), written both as a trajectory file
// (`run.jsonl`, as `rollout --out` writes it) and as a run store (`store.sqlite`, as `rollout --db`).
// Then the real server (ui/app.ts) listens on a free loopback port in this process and is asked over
// HTTP, for each of the two: the first page of the run's trajectories — cold (the first request after
// the server started: the file's index is built then) and warm — and random trajectories with credit
// columns. References in the same run: the server's bare round trip (an answer that reads nothing), and
// what the dashboard did before it had an index — reading the whole file, and crediting it whole.
// Every answer timed is checked afterwards against the whole file (ids, turns, each credit column equal
// to `credit --in`'s row); a wrong answer throws.
import { mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Rng } from '../core/rng.ts';
import type { EnvConfig, Trajectory } from '../core/types.ts';
import { applyFlags, parseMethodSpec, splitMethodList } from '../credit/index.ts';
import { envSpec, envs, makeTasks } from '../envs/index.ts';
import { quantileSorted } from '../eval/bootstrap.ts';
import { makePolicy } from '../policies/spec.ts';
import { rollout } from '../rollout/batch.ts';
import { JsonlWriter, readTrajectories, TrajectoryFile } from '../store/jsonl.ts';
import type { SpacesOf } from '../store/outcomes.ts';
import { RunStore } from '../store/sqlite.ts';
import { startUi } from '../ui/app.ts';
import type { CreditOf } from '../ui/credit.ts';
import { FileIndex, fileIndex, storeIndex } from '../ui/run-index.ts';

export const UI_BENCH = {
  config: { env: 'frozenlake', params: { map: '8x8', slippery: true } } as EnvConfig,
  policy: 'oracle:eps=0.2',
  budget: 100,
  samples: 8,
  credit: 'grpo,exact',
  /** Rows of a page (the API's default). */
  limit: 50,
  /** Warm repeats of the first page, and of the reference round trip. */
  rounds: 20,
  goalMs: 300,
};

export interface UiBenchOptions {
  /** At least this many turns. */
  turns: number;
  /** Random trajectories opened (with credit) in each of the two runs. */
  opens: number;
  seed: number;
  /** A new or empty directory the runs are written to (made if missing; the caller's to remove). */
  dir: string;
  credit: CreditOf;
  spacesOf: SpacesOf;
}

/** Milliseconds of a set of timed requests. */
export interface Spread {
  n: number;
  medianMs: number;
  p90Ms: number;
  maxMs: number;
}

export interface RunFigures {
  firstPage: { coldMs: number; warm: Spread };
  /** Random trajectories with credit=grpo,exact; the first one apart (its run's group index is
   * built then, for a store). */
  open: { credit: string; firstMs: number; rest: Spread };
  /** What the run's index holds (run-index.ts accounts its typed arrays and strings). */
  indexBytes: number;
}

export interface UiBench {
  run: {
    env: EnvConfig;
    policy: string;
    budget: number;
    samples: number;
    seed: number;
    trajectories: number;
    turns: number;
    fileBytes: number;
    storeBytes: number;
    generateSeconds: number;
  };
  /** `heapBytes`: the memory one more index of the file keeps — V8's heap and external memory — built
   * after the timings, between collections by V8's collector (the mean of three). */
  file: RunFigures & { bytesPerTurn: number; heapBytes: number };
  store: RunFigures;
  reference: {
    /** The server's answer that reads nothing (a 404 of its own), warm. */
    roundTrip: Spread;
    /** The whole file read into memory, as the dashboard did before its index (per version of the file). */
    wholeFileReadMs: number;
    /** The whole file credited by each method (`credit --in`), as it did per request. */
    wholeFileCreditMs: Record<string, number>;
  };
  checked: { pageRows: number; trajectories: number; creditColumns: number };
  goalMs: number;
}

/** The run: trajectories streamed to the file and the store until `turns` turns are written. */
async function generate(o: UiBenchOptions): Promise<{ trajectories: number; turns: number }> {
  const { config, budget, samples } = UI_BENCH;
  mkdirSync(o.dir, { recursive: true });
  const spec = envSpec(makeTasks(config, 1, o.seed)[0]);
  const policy = makePolicy(UI_BENCH.policy, spec);
  const writer = new JsonlWriter(join(o.dir, 'run.jsonl'));
  const store = new RunStore(join(o.dir, 'store.sqlite'));
  store.createRun('bench', 'rollout', { ...config, policy: policy.id, budget, samples, seed: o.seed });
  let trajectories = 0;
  let turns = 0;
  const pending: Trajectory[] = [];
  try {
    for (let first = 0; turns < o.turns; ) {
      // Chunks of tasks, smaller as the goal nears (a task's K samples average ~60 turns here).
      const tasks = Math.max(1, Math.min(256, Math.ceil((o.turns - turns) / (samples * 60))));
      await rollout({
        tasks: makeTasks(config, tasks, o.seed + first),
        samples,
        budget,
        runSeed: o.seed,
        policy,
        makeEnv: envs.make,
        keep: false,
        onTrajectory: (t) => {
          writer.write(t);
          pending.push(t);
          trajectories++;
          turns += t.turns.length;
        },
      });
      store.addTrajectories('bench', trajectories - pending.length, pending);
      pending.length = 0;
      first += tasks;
    }
    store.setStatus('bench', 'done');
  } finally {
    writer.close();
    store.close();
  }
  return { trajectories, turns };
}

const spread = (ms: number[]): Spread => {
  const s = Float64Array.from(ms).sort();
  return {
    n: s.length,
    medianMs: quantileSorted(s, 0.5),
    p90Ms: quantileSorted(s, 0.9),
    maxMs: s[s.length - 1],
  };
};

/** V8's collector, to read the heap a structure keeps (not the garbage of building it). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

interface Answer {
  status: number;
  ms: number;
  body: {
    total: number;
    items: { index: number; id: string; turns: number }[];
    trajectory: Trajectory;
    credit: Record<string, number[]>;
    error?: string;
  };
}

function fail(what: string): never {
  throw new Error(`bench ui: a wrong answer: ${what}`);
}

export async function uiBench(o: UiBenchOptions): Promise<UiBench> {
  const g0 = performance.now();
  const made = await generate(o);
  const generateSeconds = (performance.now() - g0) / 1000;
  const gc = collector();
  gc(); // the generation's garbage, not the server's to collect
  const server = await startUi({
    runs: o.dir,
    credit: o.credit,
    spacesOf: o.spacesOf,
    port: 0,
    host: '127.0.0.1',
  });
  const get = async (path: string): Promise<Answer> => {
    const t0 = performance.now();
    const r = await fetch(`${server.url}${path}`);
    const body = (await r.json()) as Answer['body'];
    const ms = performance.now() - t0;
    if (r.status !== 200 && r.status !== 404) throw new Error(`GET ${path}: ${r.status} ${body.error}`);
    return { status: r.status, ms, body };
  };
  const rng = Rng.fromSeed(o.seed);
  const picks = Array.from({ length: o.opens }, () => rng.int(made.trajectories));
  const answers: { run: string; page: Answer; opens: Answer[] }[] = [];
  const measure = async (id: string) => {
    const page = `/api/runs/${encodeURIComponent(id)}/trajectories?limit=${UI_BENCH.limit}`;
    const cold = await get(page);
    const warm: number[] = [];
    for (let i = 0; i < UI_BENCH.rounds; i++) warm.push((await get(page)).ms);
    const opens: Answer[] = [];
    for (const k of picks)
      opens.push(await get(`/api/trajectories/${encodeURIComponent(id)}/${k}?credit=${UI_BENCH.credit}`));
    answers.push({ run: id, page: cold, opens });
    return {
      firstPage: { coldMs: cold.ms, warm: spread(warm) },
      open: {
        credit: UI_BENCH.credit,
        firstMs: opens[0]?.ms ?? 0,
        rest: spread(opens.slice(1).map((a) => a.ms)),
      },
    };
  };
  let file: UiBench['file'];
  let store: UiBench['store'];
  let roundTrip: Spread;
  try {
    const fileFigures = await measure('run.jsonl');
    const fileBytes = fileIndex(join(o.dir, 'run.jsonl'), o.spacesOf).index.bytes;
    file = { ...fileFigures, indexBytes: fileBytes, bytesPerTurn: fileBytes / made.turns, heapBytes: 0 };
    const storeFigures = await measure('store.sqlite#bench');
    const db = new RunStore(join(o.dir, 'store.sqlite'), 'run', true);
    try {
      store = { ...storeFigures, indexBytes: storeIndex(db, 'bench').index.bytes };
    } finally {
      db.close();
    }
    const trips: number[] = [];
    for (let i = 0; i < UI_BENCH.rounds; i++) trips.push((await get('/api/nothing')).ms);
    roundTrip = spread(trips);
  } finally {
    await server.close();
  }
  const path = join(o.dir, 'run.jsonl');
  // The memory an index keeps: three more built, between collections (V8 frees external memory — the
  // file's chunks — lazily: one index alone is measured with the noise of its garbage).
  const heap = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return m.heapUsed + m.external;
  };
  const heap0 = heap();
  const again = [0, 1, 2].map(() => new FileIndex(path, o.spacesOf));
  file.heapBytes = (heap() - heap0) / again.length;
  if (again.some((x) => x.n !== made.trajectories)) fail('an index of another size');
  const r0 = performance.now();
  const whole = readTrajectories(path, 'run');
  const wholeFileReadMs = performance.now() - r0;
  const checked = { pageRows: 0, trajectories: 0, creditColumns: 0 };
  for (const a of answers) {
    if (a.page.body.total !== whole.length) fail(`${a.run} total ${a.page.body.total}`);
    for (const [i, row] of a.page.body.items.entries()) {
      if (row.index !== i || row.id !== whole[i].id || row.turns !== whole[i].outcome.turns)
        fail(`${a.run} page row ${i}`);
      checked.pageRows++;
    }
    for (const [j, open] of a.opens.entries()) {
      if (JSON.stringify(open.body.trajectory) !== JSON.stringify(whole[picks[j]]))
        fail(`${a.run} trajectory ${picks[j]}`);
      checked.trajectories++;
    }
  }
  const wholeFileCreditMs: Record<string, number> = {};
  const wanted = new Set(picks);
  for (const spec of applyFlags(
    splitMethodList(UI_BENCH.credit, 'credit').map((m) => parseMethodSpec(m, 'credit', ['exact'])),
    {},
  )) {
    const c0 = performance.now();
    const rows = new Map<number, number[]>();
    let k = 0;
    for (const row of o.credit(new TrajectoryFile(path, 'run'), spec).rows()) {
      if (wanted.has(k)) rows.set(k, row);
      k++;
    }
    wholeFileCreditMs[spec.label] = performance.now() - c0;
    for (const a of answers)
      for (const [j, open] of a.opens.entries()) {
        if (JSON.stringify(open.body.credit[spec.label]) !== JSON.stringify(rows.get(picks[j])))
          fail(`${a.run} credit ${spec.label} of trajectory ${picks[j]}`);
        checked.creditColumns++;
      }
  }
  return {
    run: {
      env: UI_BENCH.config,
      policy: UI_BENCH.policy,
      budget: UI_BENCH.budget,
      samples: UI_BENCH.samples,
      seed: o.seed,
      ...made,
      fileBytes: statSync(path).size,
      storeBytes: statSync(join(o.dir, 'store.sqlite')).size,
      generateSeconds,
    },
    file,
    store,
    reference: { roundTrip, wholeFileReadMs, wholeFileCreditMs },
    checked,
    goalMs: UI_BENCH.goalMs,
  };
}
