// `turnwise bench serve`: turns/s through the whole LLM path on loopback — an openai: policy (prompt
// building, fetch, parsing) against `turnwise serve` (parsing the conversation back, the policy, the
// answer) with the env stepping in between — beside the references measured in the same run: a bare
// node:http server giving a real answer to the requests of real episodes, posted by a fetch loop and by
// a node:http keep-alive loop at the same concurrency, the three in alternating rounds.
// The ratio says whether the HTTP path, not the model, could be the bottleneck of an LLM run.
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Rng } from '../core/rng.ts';
import type { Action, Env, EnvView, Policy, Task, Turn, TurnContext } from '../core/types.ts';
import type { OpenAIPolicy } from '../policies/openai.ts';
import { startServer } from './openai.ts';

export interface ServeBench {
  concurrency: number;
  /** Seconds each figure was timed in all (after a warm-up), split over `rounds`. */
  seconds: number;
  /** Rounds of served, fetch, node:http in turn: a load that comes and goes falls on all three alike. */
  rounds: number;
  served: { turns: number; turnsPerSecond: number; cpuMicrosPerTurn: number };
  /** The bare loop with the client's own HTTP stack (fetch). */
  bare: { roundTrips: number; roundTripsPerSecond: number; cpuMicrosPerRoundTrip: number };
  /** The bare loop with node:http's client and a keep-alive agent — on some machines several times
   * faster than fetch, so the stricter reference. */
  bareNodeHttp: { roundTrips: number; roundTripsPerSecond: number; cpuMicrosPerRoundTrip: number };
  /** Mean bytes of the bare loops' request bodies: the served episodes' own requests, turn by turn. */
  requestBytes: number;
  /** served turns/s ÷ the faster bare loop's round trips/s (the goal is ≥ 0.3). */
  ratio: number;
  /** served turns/s ÷ the fetch loop's round trips/s. */
  ratioFetch: number;
  /** The same as `ratio` from process CPU time per unit (client and server share this process): the
   * figure a busy machine disturbs least. */
  ratioCpu: number;
}

/** A timed figure: units done, wall seconds, process CPU seconds. */
interface Timed {
  done: number;
  seconds: number;
  cpu: number;
}

/** `one` at `concurrency` until `seconds` have passed: the units done, and the seconds until the last
 * worker finished (a worker ends the unit it is in: an episode may run over). */
async function loop(
  concurrency: number,
  seconds: number,
  one: (worker: number) => Promise<number>,
): Promise<Timed> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (performance.now() < end) {
        const n = await one(w); // not `done += await …`: that reads done before the await
        done += n;
      }
    }),
  );
  const c = process.cpuUsage(c0);
  return { done, seconds: (performance.now() - t0) / 1000, cpu: (c.user + c.system) / 1e6 };
}

const add = (a: Timed, b: Timed): Timed => ({
  done: a.done + b.done,
  seconds: a.seconds + b.seconds,
  cpu: a.cpu + b.cpu,
});
const ZERO: Timed = { done: 0, seconds: 0, cpu: 0 };

/** The bare reference: a node:http server answering `answer` to POSTs, and a loop posting `bodies`
 * (one after another, round robin) with fetch or node:http's client. */
export async function bareServer(answer: string) {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}/v1/chat/completions`;
  const agent = new Agent({ keepAlive: true });
  const viaFetch = async (body: string) => {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    await r.text();
    return 1;
  };
  const viaNodeHttp = (body: string) =>
    new Promise<number>((resolve, reject) => {
      const q = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/v1/chat/completions',
          agent,
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(1));
        },
      );
      q.on('error', reject);
      q.end(body);
    });
  return {
    post: (client: 'fetch' | 'node:http', body: string) =>
      client === 'fetch' ? viaFetch(body) : viaNodeHttp(body),
    close: () => {
      agent.destroy();
      server.closeAllConnections();
      server.close();
    },
  };
}

export interface ServeBenchInput {
  /** The in-process policy served, and the env it acts in (one fixed configuration). */
  policy: Policy<unknown, unknown>;
  env: EnvView<unknown>;
  task: Task;
  makeEnv: (task: Task) => Env<unknown, unknown>;
  /** The client policy for a base URL (an openai: policy built by the caller). */
  client: (url: string) => OpenAIPolicy;
  concurrency: number;
  seconds: number;
  budget: number;
}

/** Turns through client + server: each worker plays episodes (reset, act over HTTP, step). */
export async function serveBench(o: ServeBenchInput & { rounds?: number }): Promise<ServeBench> {
  const rounds = o.rounds ?? 6;
  const server = await startServer({ policy: o.policy, env: o.env });
  const client = o.client(server.url);
  await client.connect();
  let sample = 0;
  /** A fresh episode's state: its env, observation, history and seed stream. */
  const begin = async () => {
    const env = o.makeEnv(o.task);
    const rng = Rng.derive(0, o.task.seed, sample++);
    return { env, rng, observation: await env.reset(o.task.seed), history: [] as Turn[] };
  };
  type Episode = Awaited<ReturnType<typeof begin>>;
  /** One turn of `e`, its action chosen by `act`; true when the episode is over. */
  const turn = async (e: Episode, act: (ctx: TurnContext<unknown>) => Promise<Action<unknown>>) => {
    const t = e.history.length;
    const ctx: TurnContext<unknown> = {
      observation: e.observation,
      history: e.history,
      turn: t,
      turnsLeft: o.budget - t,
      rng: e.rng,
      env: e.env,
    };
    const { action, logp, trace } = await act(ctx);
    const step = await e.env.step(action);
    e.history.push({
      t,
      observation: e.observation,
      action,
      reward: step.reward,
      logp,
      info: step.info,
      trace,
    });
    e.observation = step.observation;
    return step.terminated || t + 1 >= o.budget;
  };
  // The served loop's unit is a turn: each worker carries its episode on across rounds, so that a round
  // ends between two turns, as the bare loops' rounds end between two round trips.
  const playing: (Episode | undefined)[] = Array(o.concurrency).fill(undefined);
  const served = async (w: number) => {
    playing[w] ??= await begin();
    if (await turn(playing[w], (ctx) => client.act(ctx))) playing[w] = undefined;
    return 1;
  };
  let bare: Awaited<ReturnType<typeof bareServer>> | undefined;
  try {
    // The bare loops post the requests of real episodes, turn by turn (so later turns' longer prompts
    // weigh as they do in the served loop), and get a real answer back.
    const bodies: string[] = [];
    for (let i = 0; i < 32; i++) {
      const e = await begin();
      while (
        !(await turn(e, async (ctx) => {
          bodies.push(JSON.stringify(client.requestBody({ ...ctx, rng: Rng.fromSeed(bodies.length) })));
          return o.policy.act(ctx);
        }))
      );
    }
    const probe = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: bodies[0],
    });
    bare = await bareServer(await probe.text());
    const b = bare;
    const next = Array(o.concurrency).fill(0);
    const posting = (kind: 'fetch' | 'node:http') => (w: number) => {
      next[w] = (next[w] + 1) % bodies.length;
      return b.post(kind, bodies[(next[w] + w * 131) % bodies.length]);
    };
    const warm = Math.min(0.5, o.seconds);
    await loop(o.concurrency, warm, served);
    await loop(o.concurrency, warm, posting('fetch'));
    await loop(o.concurrency, warm, posting('node:http'));
    let s = ZERO;
    let f = ZERO;
    let h = ZERO;
    const each = o.seconds / rounds;
    for (let r = 0; r < rounds; r++) {
      s = add(s, await loop(o.concurrency, each, served));
      f = add(f, await loop(o.concurrency, each, posting('fetch')));
      h = add(h, await loop(o.concurrency, each, posting('node:http')));
    }
    const rate = (x: Timed) => x.done / x.seconds;
    const cpuEach = (x: Timed) => (x.cpu / x.done) * 1e6;
    return {
      concurrency: o.concurrency,
      seconds: o.seconds,
      rounds,
      served: { turns: s.done, turnsPerSecond: rate(s), cpuMicrosPerTurn: cpuEach(s) },
      bare: { roundTrips: f.done, roundTripsPerSecond: rate(f), cpuMicrosPerRoundTrip: cpuEach(f) },
      bareNodeHttp: { roundTrips: h.done, roundTripsPerSecond: rate(h), cpuMicrosPerRoundTrip: cpuEach(h) },
      requestBytes: Math.round(bodies.reduce((n, x) => n + Buffer.byteLength(x), 0) / bodies.length),
      ratio: rate(s) / Math.max(rate(f), rate(h)),
      ratioFetch: rate(s) / rate(f),
      ratioCpu: Math.min(cpuEach(f), cpuEach(h)) / cpuEach(s),
    };
  } finally {
    bare?.close();
    await server.close();
  }
}
