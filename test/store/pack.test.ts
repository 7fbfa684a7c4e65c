// The packed store form reads back exactly what JSONL reads back — for real rollouts (packed) and for
// fast-check generated trajectories of every shape (packed or stored as JSON) — and a FrozenLake turn
// costs a few bytes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { FAILURE_KINDS, type Trajectory } from '../../src/core/types.ts';
import { readTrajectories } from '../../src/store/jsonl.ts';
import { packTrajectory } from '../../src/store/pack.ts';
import { asTrajectory, TrajectorySchema } from '../../src/store/schema.ts';
import { RunStore } from '../../src/store/sqlite.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'turnwise-pack-'));

function rollout(name: string, args: string[]): Trajectory[] {
  const path = join(dir, name);
  const r = spawnSync(process.execPath, [BIN, 'rollout', ...args, '--out', path]);
  assert.equal(r.status, 0, r.stderr.toString());
  return readTrajectories(path);
}

/** −∞ spelled out, so that text comparison sees it. */
const text = (v: unknown) => JSON.stringify(v, (_k, x) => (x === Number.NEGATIVE_INFINITY ? '-inf' : x));

test('real rollouts: the store reads back the JSONL trajectories exactly; a turn costs a few bytes', () => {
  const sets = [
    rollout('oracle.jsonl', ['--map', '8x8', '--slippery', '--policy', 'oracle', '--episodes', '60']),
    rollout('random.jsonl', ['--map', '4x4', '--slippery', '--policy', 'random', '--episodes', '60']),
    rollout('maps.jsonl', [
      '--random',
      '--size',
      '6',
      '--policy',
      'oracle:eps=0.2,temp=0.5',
      '--episodes',
      '40',
    ]),
  ];
  const store = new RunStore(':memory:');
  sets.forEach((ts, i) => {
    store.createRun(`r${i}`, 'rollout', {});
    store.addTrajectories(`r${i}`, 0, ts);
    const back = store.trajectories(`r${i}`);
    assert.deepEqual(back, ts);
    assert.equal(text(back), text(ts));
    const turns = ts.reduce((n, t) => n + t.turns.length, 0);
    const bytes = ts.reduce((n, t) => n + packTrajectory(t).length, 0);
    // The turns' share: what a trajectory costs beyond the same one without turns.
    const fixed = ts.reduce((n, t) => n + packTrajectory({ ...t, turns: [] }).length, 0);
    const perTurn = (bytes - fixed) / turns;
    process.stderr.write(
      `# ${ts.length} trajectories, ${turns} turns: ${(bytes / ts.length).toFixed(1)} B a trajectory, ${perTurn.toFixed(2)} B a turn\n`,
    );
    // Long episodes show the cost of a turn (short ones pay for their tables of distinct values).
    if (i === 0) assert.ok(perTurn > 0 && perTurn < 4, `${perTurn.toFixed(2)} bytes a turn`);
    const json = ts.reduce((n, t) => n + JSON.stringify(t).length, 0);
    assert.ok(bytes * 5 < json, `${bytes} packed bytes against ${json} of JSON`);
    assert.ok(
      ts.every((t) => packTrajectory(t)[0] === 1),
      'FrozenLake trajectories take the packed form',
    );
  });
  store.close();
});

const num = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0, -0, 1, -1.3862943611198906, 0.5),
);
const trajectory = fc
  .record({
    id: fc.string(),
    policy: fc.string(),
    params: fc.dictionary(fc.string(), fc.jsonValue()),
    seed: fc.integer(),
    revealBudget: fc.boolean(),
    packable: fc.boolean(),
    turns: fc.array(
      fc.record(
        {
          observation: fc.oneof(fc.nat(70), fc.nat(), fc.jsonValue()),
          action: fc.oneof(fc.nat(4), fc.string()),
          reward: num,
          logp: fc.oneof(num, fc.constant(Number.NEGATIVE_INFINITY)),
          info: fc.record(
            { success: fc.boolean(), failure: fc.constantFrom(...FAILURE_KINDS), valid: fc.boolean() },
            { requiredKeys: [] },
          ),
          forced: fc.boolean(),
          trace: fc.record({ text: fc.string() }),
        },
        { requiredKeys: ['observation', 'action', 'reward', 'logp', 'info'] },
      ),
      { maxLength: 8 },
    ),
    end: fc.constantFrom('terminated', 'truncated', 'error'),
  })
  .map(
    (r): Trajectory => ({
      id: r.id,
      task: { env: 'x', params: r.params, seed: r.seed },
      policy: r.policy,
      budget: Math.max(1, r.turns.length),
      revealBudget: r.revealBudget,
      turns: r.turns.map((t, i) => {
        const { observation, action, reward, logp, info, forced, trace } = t;
        return {
          t: i,
          observation,
          action,
          reward,
          logp,
          info,
          ...(forced === undefined ? {} : { forced }),
          ...(trace === undefined || r.packable ? {} : { trace }),
        };
      }),
      outcome: {
        success: false,
        return: 0,
        turns: r.turns.length,
        firstSuccessTurn: null,
        end: r.end,
        failure: null,
      },
    }),
  );

test('generated trajectories of every shape: the store reads back what a JSONL line reads back', () => {
  const store = new RunStore(':memory:');
  let n = 0;
  fc.assert(
    fc.property(fc.array(trajectory, { minLength: 1, maxLength: 4 }), (ts) => {
      const run = `g${n++}`;
      store.createRun(run, 'rollout', {});
      store.addTrajectories(run, 0, ts);
      const viaJsonl = ts.map((t) => asTrajectory(TrajectorySchema.parse(JSON.parse(JSON.stringify(t)))));
      const back = store.trajectories(run);
      assert.deepEqual(back, viaJsonl);
      assert.equal(text(back), text(viaJsonl));
    }),
    { numRuns: 300 },
  );
  store.close();
});

test('an outcome-only row reads back as such; a damaged blob is refused naming the row', () => {
  const ts = rollout('few.jsonl', ['--map', '4x4', '--policy', 'random', '--episodes', '3']);
  const store = new RunStore(':memory:');
  store.createRun('o', 'train', {});
  store.addTrajectories('o', 0, ts, 0, false);
  assert.throws(() => store.trajectories('o'), /run o row 0: holds the outcome only/);
  store.createRun('d', 'rollout', {});
  store.addTrajectories('d', 0, ts);
  store.db.prepare("UPDATE trajectories SET data = x'01ffff' WHERE run = 'd' AND idx = 1").run();
  assert.throws(() => store.trajectories('d'), /run d row 1: cannot be read/);
  store.close();
});
