// `turnwise bench serve`: turns/s through the whole LLM path on loopback — an openai: policy (prompt
// building, fetch, parsing) against `turnwise serve` (parsing the conversation back, the policy, the
// answer) with the env stepping in between — beside the reference measured in the same run: a bare
// node:http server answering a fixed body of the same size to a fetch loop at the same concurrency.
// The ratio says whether the HTTP path, not the model, could be the bottleneck of an LLM run.
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Rng } from '../core/rng.ts';
import type { Env, EnvView, Policy, Task, Turn, TurnContext } from '../core/types.ts';
import type { OpenAIPolicy } from '../policies/openai.ts';
import { startServer } from './openai.ts';

export interface ServeBench {
  concurrency: number;
  /** Seconds each figure was timed (after a warm-up). */
  seconds: number;
  served: { turns: number; turnsPerSecond: number };
  /** The bare loop with the client's own HTTP stack (fetch). */
  bare: { roundTrips: number; roundTripsPerSecond: number };
  /** The bare loop with node:http's client and a keep-alive agent — on some machines several times
   * faster than fetch, so the stricter reference. */
  bareNodeHttp: { roundTrips: number; roundTripsPerSecond: number };
  /** served turns/s ÷ the faster bare loop's round trips/s (the goal is ≥ 0.3). */
  ratio: number;
  /** served turns/s ÷ the fetch loop's round trips/s. */
  ratioFetch: number;
}

/** `one` at `concurrency` until `seconds` have passed: the units done, and the seconds until the last
 * worker finished (a worker ends the unit it is in: an episode may run over). */
async function loop(
  concurrency: number,
  seconds: number,
  one: (worker: number) => Promise<number>,
): Promise<{ done: number; seconds: number }> {
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
  return { done, seconds: (performance.now() - t0) / 1000 };
}

/** The bare reference: a node:http server answering `answer` to POSTs of `body`. */
export async function bareRoundTrips(
  concurrency: number,
  seconds: number,
  body: string,
  answer: string,
  client: 'fetch' | 'node:http' = 'fetch',
) {
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
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const viaFetch = async () => {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    await r.text();
    return 1;
  };
  const viaNodeHttp = () =>
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
  const post = client === 'fetch' ? viaFetch : viaNodeHttp;
  try {
    await loop(concurrency, Math.min(0.5, seconds), post); // warm-up
    return await loop(concurrency, seconds, post);
  } finally {
    agent.destroy();
    server.closeAllConnections();
    server.close();
  }
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
export async function serveBench(o: ServeBenchInput): Promise<ServeBench> {
  const server = await startServer({ policy: o.policy, env: o.env });
  const client = o.client(server.url);
  await client.connect();
  let sample = 0;
  const episodeTurns = async (): Promise<number> => {
    const env = o.makeEnv(o.task);
    const rng = Rng.derive(0, o.task.seed, sample++);
    let observation = await env.reset(o.task.seed);
    const history: Turn[] = [];
    for (let t = 0; t < o.budget; t++) {
      const ctx: TurnContext<unknown> = { observation, history, turn: t, turnsLeft: o.budget - t, rng, env };
      const { action, logp, trace } = await client.act(ctx);
      const step = await env.step(action);
      history.push({ t, observation, action, reward: step.reward, logp, info: step.info, trace });
      observation = step.observation;
      if (step.terminated) return t + 1;
    }
    return o.budget;
  };
  try {
    // One request's size, for the bare reference's body and answer (the same bytes on the wire).
    const body = JSON.stringify(firstBody(o, client));
    const probe = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const answer = await probe.text();
    await loop(o.concurrency, Math.min(0.5, o.seconds), episodeTurns); // warm-up
    const served = await loop(o.concurrency, o.seconds, episodeTurns);
    const bare = await bareRoundTrips(o.concurrency, o.seconds, body, answer, 'fetch');
    const bareNode = await bareRoundTrips(o.concurrency, o.seconds, body, answer, 'node:http');
    const servedRate = served.done / served.seconds;
    const bareRate = bare.done / bare.seconds;
    const bareNodeRate = bareNode.done / bareNode.seconds;
    return {
      concurrency: o.concurrency,
      seconds: o.seconds,
      served: { turns: served.done, turnsPerSecond: servedRate },
      bare: { roundTrips: bare.done, roundTripsPerSecond: bareRate },
      bareNodeHttp: { roundTrips: bareNode.done, roundTripsPerSecond: bareNodeRate },
      ratio: servedRate / Math.max(bareRate, bareNodeRate),
      ratioFetch: servedRate / bareRate,
    };
  } finally {
    await server.close();
  }
}

/** A first-turn chat body like the client's (for the reference's byte sizes). */
function firstBody(o: ServeBenchInput, client: OpenAIPolicy): Record<string, unknown> {
  return client.requestBody({
    observation: 0,
    history: [],
    turn: 0,
    turnsLeft: o.budget,
    rng: Rng.fromSeed(0),
    env: o.env,
  });
}
