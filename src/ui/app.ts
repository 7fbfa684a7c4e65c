// The dashboard's JSON API over the runs under one directory, read-only (docs/ui.md):
//   GET /api/runs                                   every run (runs.ts)
//   GET /api/runs/:id                               one run, with its config and final figures
//   GET /api/runs/:id/metrics                       its per-iteration metrics as stored
//   GET /api/runs/:id/trajectories?offset&limit&…   a page of its trajectories (trajectories.ts)
//   GET /api/trajectories/:runId/:index?credit=…    one trajectory, with a column of advantages per method
// A run id is its path under the directory (`/` in it written %2F), FILE#RUN for a run of a store file.
// An id that leaves the directory (`..`, an absolute path, a link out of it) is refused with 400 before
// any file is touched, and nothing outside the directory is ever read.
import { serve } from '@hono/node-server';
import { type Context, Hono } from 'hono';
import { InputError } from '../core/errors.ts';
import { applyFlags, type MethodSpec, parseMethodSpec, splitMethodList } from '../credit/index.ts';
import type { SpacesOf } from '../store/outcomes.ts';
import { RunStore } from '../store/sqlite.ts';
import { type CreditOf, creditColumns } from './credit.ts';
import { indexPage } from './page.ts';
import { type FoundRun, findRun, findRuns, readJson, storeMetrics } from './runs.ts';
import {
  FAILURE_KINDS,
  MAX_LIMIT,
  NO_SPACES,
  OUTCOMES,
  SORTS,
  type TrajectoryQuery,
  trajectoryAt,
  trajectoryPage,
} from './trajectories.ts';

export type { CreditOf };

export interface UiOptions {
  /** The directory whose runs are served. */
  runs: string;
  credit: CreditOf;
  /** The integer spaces of a registered env's task (cli/options.ts spacesOfRegistered): a trajectory
   * file's lines are then indexed without building their turns (run-index.ts). */
  spacesOf?: SpacesOf;
}

class NotFound extends Error {}

const QUERY_PARAMS = ['offset', 'limit', 'task', 'outcome', 'failure', 'policy', 'sort'];

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
    task: q.task === undefined ? undefined : integer('task', q.task, 0, Number.MAX_SAFE_INTEGER),
    outcome: oneOf('outcome', q.outcome, OUTCOMES),
    failure: oneOf('failure', q.failure, FAILURE_KINDS),
    policy: q.policy,
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

function handle(c: Context, f: () => unknown) {
  try {
    return c.json(f() as object);
  } catch (e) {
    if (e instanceof InputError) return c.json({ error: e.message, field: e.field }, 400);
    if (e instanceof NotFound) return c.json({ error: e.message }, 404);
    return c.json({ error: (e as Error).message }, 500);
  }
}

export function uiApp(o: UiOptions): Hono {
  const app = new Hono();
  const root = o.runs;
  const spacesOf = o.spacesOf ?? NO_SPACES;
  app.get('/', (c) => c.html(indexPage()));
  app.get('/api/runs', (c) => handle(c, () => ({ runs: findRuns(root).map((r) => r.info) })));
  app.get('/api/runs/:id', (c) =>
    handle(c, () => {
      const found = run(root, c.req.param('id'));
      return { ...found.info, ...details(found) };
    }),
  );
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
  app.get('/api/trajectories/:runId/:index', (c) =>
    handle(c, () => {
      const found = run(root, c.req.param('runId'));
      const index = integer('index', c.req.param('index'), 0, Number.MAX_SAFE_INTEGER);
      const query = c.req.query();
      for (const k of Object.keys(query))
        if (k !== 'credit') throw new InputError(k, query[k], 'not a parameter; expected: credit');
      const specs = creditSpecs(query.credit);
      const source = withTrajectories(found);
      const trajectory = trajectoryAt(source, index, spacesOf);
      if (trajectory === undefined)
        throw new NotFound(`run ${JSON.stringify(found.info.id)} has no trajectory ${index}`);
      // As `turnwise credit --in FILE` gives the whole run's rows, from the trajectory's group (credit.ts).
      const credit = creditColumns(source, index, specs, o.credit, spacesOf);
      return { run: found.info.id, index, trajectory, credit };
    }),
  );
  app.notFound((c) => c.json({ error: `no route ${c.req.method} ${c.req.path}; see GET /` }, 404));
  return app;
}

export interface RunningUi {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Listens on host:port (0: a free port); resolves once bound, rejects when it cannot bind. */
export function startUi(o: UiOptions & { port: number; host: string }): Promise<RunningUi> {
  const app = uiApp(o);
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, port: o.port, hostname: o.host }, (info) => {
      const host = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      resolve({
        url: `http://${host}:${info.port}`,
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            if ('closeAllConnections' in server) server.closeAllConnections();
          }),
      });
    });
    server.once('error', reject);
  });
}
