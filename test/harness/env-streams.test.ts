// Each (task, sample) of `harness run` has its own env stream, the one an in-process rollout of the same
// run seed, tasks and samples gives it: an agent replaying the in-process actions through the harness's
// MCP server on slippery FrozenLake meets the same slips, so the env's records are the in-process
// trajectories turn for turn. (With one stream per task, the samples of a task replay identical slips
// and Pass@K from harness runs is biased.)
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { envConfig, envs, makePolicy, makeTasks, rollout, type Trajectory } from '../../src/index.ts';
import { startUpstream, type Upstream } from '../fixtures/chat-upstream.ts';
import { harnessRun } from './run-cli.ts';

const AGENT = resolve('test/fixtures/agent.py');
const root = mkdtempSync(join(tmpdir(), 'turnwise-env-streams-'));
let up: Upstream;
before(async () => {
  up = await startUpstream();
});
after(async () => {
  await up.close();
});

const seed = 5;
const tasks = 2;
const samples = 3;
const budget = 12;
const config = envConfig('frozenlake', { map: '4x4', slippery: true });

/** What the env decides of a turn and an episode (ids, policies and log-probs differ by design). */
const played = (t: Trajectory) => ({
  turns: t.turns.map(({ observation, action, reward, info }) => ({ observation, action, reward, info })),
  outcome: t.outcome,
});

test('replaying the in-process actions through the harness gives the in-process trajectories, sample by sample', async () => {
  assert.equal(config.params.slippery, true, 'a slippery map: the env stream decides where a move goes');
  const spec = envs.make({ ...config, seed: 0 }).spec;
  const inProcess = await rollout({
    tasks: makeTasks(config, tasks, seed),
    samples,
    budget,
    runSeed: seed,
    policy: makePolicy('random', spec),
    makeEnv: envs.make,
  });
  const actions: Record<string, unknown[]> = {};
  inProcess.forEach((t, i) => {
    actions[`${t.task.seed}-${i % samples}`] = t.turns.map((u) => u.action);
  });
  const out = join(root, 'replay');
  const harness = await harnessRun(
    out,
    [
      '--cmd',
      `python3 ${AGENT}`,
      '--env',
      'frozenlake',
      '--map',
      '4x4',
      '--slippery',
      '--tasks',
      String(tasks),
      '--samples',
      String(samples),
      '--budget',
      String(budget),
      '--seed',
      String(seed),
      '--upstream',
      up.url,
    ],
    { AGENT_MODE: 'replay', AGENT_ACTIONS: JSON.stringify(actions) },
  );
  assert.equal(harness.length, tasks * samples);
  inProcess.forEach((t, idx) => {
    const env = JSON.parse(readFileSync(join(out, 'episodes', `e${idx}-a0.mcp.jsonl`), 'utf8')) as Trajectory;
    assert.deepEqual(played(env), played(t), `task ${t.task.seed}, sample ${idx % samples}`);
    assert.equal(env.id, `mcp${seed}-${t.task.seed}-${idx % samples}`);
    // The harness's trajectory: one turn per model call, the env's verdict.
    assert.equal(harness[idx].turns.length, t.turns.length);
    assert.deepEqual(
      [harness[idx].outcome.success, harness[idx].outcome.return],
      [t.outcome.success, t.outcome.return],
    );
  });
  // Not one stream per task: some task's samples ended differently.
  assert.ok(
    inProcess.some((t, i) => i % samples > 0 && t.outcome.turns !== inProcess[i - 1].outcome.turns),
    'the samples of a task differ',
  );
});
