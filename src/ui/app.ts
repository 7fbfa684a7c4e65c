// The dashboard over the runs under one directory, read-only (docs/ui.md): its pages (GET / and
// /app.js: page.ts, bundle.ts, web/) and the JSON API they read, usable by scripts as it is:
//   GET /api/runs                                   every run (runs.ts)
//   GET /api/events                                 the same list as server-sent events, when it changes
//   GET /api/runs/:id                               one run, with its config and final figures
//   GET /api/runs/:id/events                        its state as server-sent events, when it changes
//   GET /api/runs/:id/metrics                       its per-iteration metrics as stored
//   GET /api/runs/:id/trajectories?offset&limit&…   a page of its trajectories (trajectories.ts)
//   GET /api/runs/:id/groups/:task?credit=…         the samples of one task side by side (groups.ts)
//   GET /api/trajectories/:runId/:index?credit=…    one trajectory, with a column of advantages per method
//   GET /api/compare?a=&b=&K=&T=                    two runs' Pass@(K,T), failures, tasks (compare.ts)
//   GET /api/compare/diagnostics?a=&b=&…            their saved policies measured by `turnwise compare`'s
//                                                   library call: step quality, recovery, likelihood
//                                                   (diagnostics.ts; on a worker thread, kept)
//   GET /api/methods                                the credit methods of the registry
// A run id is its path under the directory (`/` in it written %2F), FILE#RUN for a run of a store file.
// An id that leaves the directory (`..`, an absolute path, a link out of it) is refused with 400 before
// any file is touched, and nothing outside the directory is ever read.
import { serve } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { InputError } from '../core/errors.ts';
import { applyFlags, METHODS, type MethodSpec, parseMethodSpec, splitMethodList } from '../credit/index.ts';
import type { SpacesOf } from '../store/outcomes.ts';
import { RunStore } from '../store/sqlite.ts';
import { frontEnd } from './bundle.ts';
import { compareRuns } from './compare.ts';
import { type CreditOf, creditColumns } from './credit.ts';
import { DIAGNOSTICS_PARAMS, Diagnostics, type PolicyDiagnostics } from './diagnostics.ts';
import { divergence } from './groups.ts';
import { changes } from './live.ts';
import { CONTENT_SECURITY_POLICY, indexPage } from './page.ts';
import { type FoundRun, findRun, findRuns, readJson, storeMetrics } from './runs.ts';
import { tokenTextOf, type VocabularyOf } from './tokens.ts';
import {
  FAILURE_KINDS,
  MAX_LIMIT,
  NO_SPACES,
  OUTCOMES,
  runTrajectories,
  SORTS,
  type TrajectoryQuery,
  trajectoryAt,
  trajectoryPage,
} from './trajectories.ts';
import { type EnvOf, viewCache } from './views.ts';

export type { CreditOf, PolicyDiagnostics, VocabularyOf };

export interface UiOptions {
  /** The directory whose runs are served. */
  runs: string;
  credit: CreditOf;
  /** How trajectories' envs are drawn; absent: pages show observations as data. */
  envOf?: EnvOf;
  /** The integer spaces of a registered env's task (cli/options.ts spacesOfRegistered): a trajectory
   * file's lines are then indexed without building their turns (run-index.ts). */
  spacesOf?: SpacesOf;
  /** How two runs' saved policies are measured (studies/ui-policies.ts); absent: compare says it cannot. */
  diagnostics?: PolicyDiagnostics;
  /** The tokenizer of a run's saved transformer policy (studies/ui-policies.ts); absent: chips show ids. */
  vocabularyOf?: VocabularyOf;
  /** How often live streams read their run again, ms (default 500). */
  pollMs?: number;
}

class NotFound extends Error {}

const QUERY_PARAMS = [
  'offset',
  'limit',
  'task',
  'outcome',
  'failure',
  'policy',
  'minTurns',
  'maxTurns',
  'sort',
];
/** The most samples a group shows side by side. */
export const MAX_LANES = 64;
const MAX = Number.MAX_SAFE_INTEGER;

function integer(name: string, raw: string | undefined, min: number, max: number, fallback?: number) {
  if (raw === undefined && fallback !== undefined) return fallback;
  if (raw === undefined || !/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max)
    throw new InputError(name, raw, `expected an integer from ${min} to ${max}`);
  return Number(raw);
}

function oneOf<T extends string>(
  name: string,
  raw: string | undefined,
  allowed: readonly T[],
): T | undefined {
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw))
    throw new InputError(name, raw, `expected one of: ${allowed.join(', ')}`);
  return raw as T;
}

/** The query of a trajectory page, every parameter checked (unknown ones refused, not ignored). */
function pageQuery(q: Record<string, string>): TrajectoryQuery {
  for (const k of Object.keys(q))
    if (!QUERY_PARAMS.includes(k))
      throw new InputError(k, q[k], `not a parameter; expected: ${QUERY_PARAMS.join(', ')}`);
  if (q.policy === '') throw new InputError('policy', '', 'expected a policy id');
  return {
    offset: integer('offset', q.offset, 0, Number.MAX_SAFE_INTEGER, 0),
    limit: integer('limit', q.limit, 1, MAX_LIMIT, 50),
    task: q.task === undefined ? undefined : integer('task', q.task, 0, MAX),
    outcome: oneOf('outcome', q.outcome, OUTCOMES),
    failure: oneOf('failure', q.failure, FAILURE_KINDS),
    policy: q.policy,
    minTurns: q.minTurns === undefined ? undefined : integer('minTurns', q.minTurns, 0, MAX),
    maxTurns: q.maxTurns === undefined ? undefined : integer('maxTurns', q.maxTurns, 0, MAX),
    sort: oneOf('sort', q.sort, SORTS) ?? 'index',
  };
}

/** The methods of `?credit=grpo,gigpo:omega=0.5,exact`, parsed as `credit --method` parses one. */
function creditSpecs(raw: string | undefined): MethodSpec[] {
  if (raw === undefined) return [];
  const specs = applyFlags(
    splitMethodList(raw, 'credit').map((m) => parseMethodSpec(m, 'credit', ['exact'])),
    {},
  );
  const labels = new Set<string>();
  for (const s of specs) {
    if (labels.has(s.label)) throw new InputError('credit', s.label, 'each method once');
    labels.add(s.label);
  }
  return specs;
}

/** The run of an id, or NotFound; a run with no trajectories is NotFound where they are asked for. */
function run(root: string, id: string): FoundRun {
  const found = findRun(root, id);
  if (found === undefined) throw new NotFound(`no run ${JSON.stringify(id)} under the runs directory`);
  return found;
}

function withTrajectories(found: FoundRun) {
  if (found.source === null)
    throw new NotFound(`run ${JSON.stringify(found.info.id)} (${found.info.kind}) records no trajectories`);
  return found.source;
}

/** A run's config and final figures: what the command wrote beside its store (or in it). */
function details(found: FoundRun): { config: unknown; final: unknown } {
  const { dir, source } = found;
  const at = (f: string) => (dir === null ? undefined : readJson(`${dir}/${f}`));
  switch (found.info.kind) {
    case 'train':
      return { config: at('config.json') ?? null, final: at('summary.json') ?? null };
    case 'bc':
      return { config: null, final: at('bc.json') ?? null };
    case 'study': {
      const s = at('summary.json');
      return { config: { profile: s?.profile, seeds: s?.seeds, worlds: s?.worlds }, final: s ?? null };
    }
    default: {
      if (source === null || !('store' in source)) return { config: null, final: null };
      const store = new RunStore(source.store, 'run', true);
      try {
        return { config: store.run(source.run)?.config ?? null, final: null };
      } finally {
        store.close();
      }
    }
  }
}

/** The metrics of a store run (runs.ts storeMetrics); none for other runs. */
function metrics(found: FoundRun): { iter: number; [key: string]: number | null }[] {
  const source = found.source;
  return source === null || !('store' in source) ? [] : storeMetrics(source.store, source.run);
}

/** Only these query parameters (others refused, not ignored). */
function only(q: Record<string, string>, allowed: readonly string[]): void {
  for (const k of Object.keys(q))
    if (!allowed.includes(k))
      throw new InputError(k, q[k], `not a parameter; expected: ${allowed.join(', ') || 'none'}`);
}

/** Increasing integers ≥ 1 written `1,2,4`; undefined when absent. */
function intList(name: string, raw: string | undefined): number[] | undefined {
  if (raw === undefined) return undefined;
  const xs = raw.split(',').map((x) => integer(name, x, 1, 1_000_000));
  if (xs.some((x, i) => i > 0 && x <= xs[i - 1]))
    throw new InputError(name, raw, 'expected increasing integers');
  return xs;
}

/** The samples of one task (its seed) in index order, as many as a group shows; the run's other tasks
 * that share the seed (another configuration) are left out, named by `task`. */
function groupOf(
  credit: CreditOf,
  source: Exclude<FoundRun['source'], null>,
  runId: string,
  seed: number,
  specs: readonly MethodSpec[],
  spacesOf: SpacesOf,
) {
  const page = trajectoryPage(source, { offset: 0, limit: MAX_LIMIT, task: seed, sort: 'index' }, spacesOf);
  if (page.items.length === 0)
    throw new NotFound(`run ${JSON.stringify(runId)} has no task with seed ${seed}`);
  const key = JSON.stringify(page.items[0].task);
  const rows = page.items.filter((r) => JSON.stringify(r.task) === key);
  const lanes = rows.slice(0, MAX_LANES);
  const samples = lanes.map((r) => {
    const t = trajectoryAt(source, r.index, spacesOf);
    if (t === undefined) throw new NotFound(`run ${JSON.stringify(runId)} has no trajectory ${r.index}`);
    return t;
  });
  // Each lane's columns as `turnwise credit --in FILE` gives its row (credit.ts: from the task's group).
  const columns: Record<string, number[][]> = {};
  for (const spec of specs) columns[spec.label] = [];
  for (const r of lanes) {
    const one = creditColumns(source, r.index, specs, credit, spacesOf);
    for (const spec of specs) columns[spec.label].push(one[spec.label]);
  }
  return {
    task: samples[0].task,
    samples: rows.length,
    indices: lanes.map((r) => r.index),
    trajectories: samples,
    credit: columns,
    ...divergence(samples),
  };
}

function handle(c: Context, f: () => unknown) {
  try {
    return c.json(f() as object);
  } catch (e) {
    return failed(c, e);
  }
}

function failed(c: Context, e: unknown) {
  if (e instanceof InputError) return c.json({ error: e.message, field: e.field }, 400);
  if (e instanceof NotFound) return c.json({ error: e.message }, 404);
  return c.json({ error: (e as Error).message }, 500);
}

/** The app; `measured` keeps the policy measurements (startUi closes it with the server). */
export function uiApp(o: UiOptions, measured = new Diagnostics(o.diagnostics, o.spacesOf)): Hono {
  const app = new Hono();
  const root = o.runs;
  const pollMs = o.pollMs ?? 500;
  const viewOf = viewCache(o.envOf);
  const spacesOf = o.spacesOf ?? NO_SPACES;
  app.get('/', (c) => {
    c.header('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    return c.html(indexPage());
  });
  app.get('/app.js', async (c) => {
    c.header('Content-Type', 'text/javascript; charset=utf-8');
    c.header('Cache-Control', 'no-cache');
    return c.body(await frontEnd());
  });
  app.get('/favicon.ico', (c) => c.body(null, 204));
  app.get('/api/runs', (c) => handle(c, () => ({ runs: findRuns(root).map((r) => r.info) })));
  app.get('/api/events', (c) =>
    changes(c, 'runs', pollMs * 2, () => ({ runs: findRuns(root).map((r) => r.info) })),
  );
  app.get('/api/methods', (c) =>
    handle(c, () => ({
      methods: Object.values(METHODS).map((m) => ({ name: m.name, summary: m.summary })),
      exact: 'A^π = Q^π − V^π of the policy named in the trajectory, from the env’s exact oracle',
    })),
  );
  app.get('/api/runs/:id', (c) =>
    handle(c, () => {
      const found = run(root, c.req.param('id'));
      return { ...found.info, ...details(found) };
    }),
  );
  app.get('/api/runs/:id/events', (c) => {
    const id = c.req.param('id');
    try {
      only(c.req.query(), []);
      run(root, id); // 400 or 404 before the stream opens
    } catch (e) {
      return failed(c, e);
    }
    return changes(
      c,
      'run',
      pollMs,
      () => findRun(root, id)?.info,
      (info) => info.status === 'finished',
    );
  });
  app.get('/api/runs/:id/metrics', (c) =>
    handle(c, () => ({ run: c.req.param('id'), iterations: metrics(run(root, c.req.param('id'))) })),
  );
  app.get('/api/runs/:id/trajectories', (c) =>
    handle(c, () => {
      const found = run(root, c.req.param('id'));
      const q = pageQuery(c.req.query());
      return { run: found.info.id, ...trajectoryPage(withTrajectories(found), q, spacesOf) };
    }),
  );
  app.get('/api/runs/:id/groups/:task', (c) =>
    handle(c, () => {
      const found = run(root, c.req.param('id'));
      const seed = integer('task', c.req.param('task'), 0, MAX);
      only(c.req.query(), ['credit']);
      const specs = creditSpecs(c.req.query('credit'));
      const group = groupOf(o.credit, withTrajectories(found), found.info.id, seed, specs, spacesOf);
      return { run: found.info.id, ...group, view: viewOf(group.task) };
    }),
  );
  app.get('/api/trajectories/:runId/:index', (c) =>
    handle(c, () => {
      const found = run(root, c.req.param('runId'));
      const index = integer('index', c.req.param('index'), 0, MAX);
      only(c.req.query(), ['credit']);
      const specs = creditSpecs(c.req.query('credit'));
      const source = withTrajectories(found);
      const trajectory = trajectoryAt(source, index, spacesOf);
      if (trajectory === undefined)
        throw new NotFound(`run ${JSON.stringify(found.info.id)} has no trajectory ${index}`);
      // As `turnwise credit --in FILE` gives the whole run's rows, from the trajectory's group (credit.ts).
      const credit = creditColumns(source, index, specs, o.credit, spacesOf);
      return {
        run: found.info.id,
        index,
        trajectory,
        credit,
        view: viewOf(trajectory.task),
        tokenText: tokenTextOf(found, trajectory, o.vocabularyOf),
      };
    }),
  );
  app.get('/api/compare', (c) =>
    handle(c, () => {
      const q = c.req.query();
      only(q, ['a', 'b', 'K', 'T']);
      const side = (name: 'a' | 'b') => {
        const id = q[name];
        if (id === undefined || id === '') throw new InputError(name, id, 'expected a run id');
        const found = run(root, id);
        if (found.source === null)
          throw new InputError(name, id, `a ${found.info.kind} run records no trajectories to compare`);
        return { id: found.info.id, trajectories: runTrajectories(found.source) };
      };
      return compareRuns(side('a'), side('b'), { K: intList('K', q.K), T: intList('T', q.T) });
    }),
  );
  app.get('/api/compare/diagnostics', async (c) => {
    try {
      const q = c.req.query();
      only(q, DIAGNOSTICS_PARAMS);
      const side = (name: 'a' | 'b') => {
        const id = q[name];
        if (id === undefined || id === '') throw new InputError(name, id, 'expected a run id');
        return run(root, id);
      };
      return c.json(await measured.answer(side('a'), side('b'), q));
    } catch (e) {
      return failed(c, e);
    }
  });
  app.notFound((c) => c.json({ error: `no route ${c.req.method} ${c.req.path}; see GET /` }, 404));
  return app;
}

export interface RunningUi {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Builds the pages (bundle.ts), then listens on host:port (0: a free port); resolves once bound,
 * rejects when it cannot bind. */
export async function startUi(o: UiOptions & { port: number; host: string }): Promise<RunningUi> {
  const measured = new Diagnostics(o.diagnostics, o.spacesOf);
  const app = uiApp(o, measured);
  await frontEnd();
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: o.port, hostname: o.host }, (info) => {
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({
        url: `http://${host}:${info.port}`,
        port: info.port,
        close: () =>
          Promise.all([
            new Promise<void>((done) => {
              server.close(() => done());
              if ('closeAllConnections' in server) server.closeAllConnections();
            }),
            measured.close(),
          ]).then(() => {}),
      });
    });
    server.once('error', reject);
  });
}
