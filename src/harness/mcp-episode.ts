// The episode `turnwise mcp` serves to an outside agent: serve/mcp.ts's McpEpisode driven by the
// rollout's own episode machine (rollout/episode.ts), so that an MCP session's trajectory is byte for byte
// the in-process rollout's with the same actions. Composed here, where both stages are in reach (serve/
// may not import rollout/); the env arrives from the caller (only composition layers reach the registry).
import type { Env, MaybePromise, Policy, Task, TurnContext } from '../core/types.ts';
import { createEpisode, DONE, episodeSeeds } from '../rollout/episode.ts';
import { McpEpisode, type McpEpisodeOptions } from '../serve/mcp.ts';
import { watchPolicy } from '../serve/tool-serve.ts';

/**
 * The episode `turnwise mcp` serves for `task` in `env`: the rollout's machine with episode id
 * mcp{runSeed}-{task seed}-{sample} and the seeds of (runSeed, task seed, sample; sample 0 unless given).
 * `wrap` sees the policy the machine acts with (serve's tool env watches its contexts through it).
 */
export function mcpEpisode(
  env: Env<unknown, unknown>,
  task: Task,
  o: Pick<McpEpisodeOptions, 'budget' | 'revealBudget' | 'onEnd' | 'log'> & {
    runSeed: number;
    sample?: number;
    wrap?: (p: Policy<unknown, unknown>) => Policy<unknown, unknown>;
  },
): McpEpisode {
  const sample = o.sample ?? 0;
  const { envSeed, rng } = episodeSeeds(o.runSeed, task.seed, sample);
  const revealBudget = o.revealBudget === true;
  return new McpEpisode({
    env,
    budget: o.budget,
    revealBudget,
    machine: (e, p) =>
      createEpisode(e, o.wrap === undefined ? p : o.wrap(p), {
        id: `mcp${o.runSeed}-${task.seed}-${sample}`,
        task,
        budget: o.budget,
        revealBudget,
        envSeed,
        rng,
      }),
    done: DONE,
    onEnd: o.onEnd,
    log: o.log,
  });
}

/** Opens a task's episode as `turnwise mcp --env … --task-seed S --budget B [--reveal-budget]` serves it
 * (run seed = task seed, sample 0) in an env from `makeEnv`, the machine's policy contexts told to
 * `watch`: what `turnwise serve` of a tool env replays conversations on (serve/tool-serve.ts `open`). */
export function mcpEpisodeOpener(
  makeEnv: (task: Task) => MaybePromise<Env<unknown, unknown>>,
  budget: number,
  revealBudget: boolean,
) {
  return async (task: Task, watch: (ctx: TurnContext<unknown>) => void): Promise<McpEpisode> => {
    const env = await makeEnv(task);
    return mcpEpisode(env, task, {
      runSeed: task.seed,
      budget,
      revealBudget,
      wrap: (p) => watchPolicy(p, watch),
    });
  };
}
