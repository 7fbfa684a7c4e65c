// eval and compare report the reward-hacking figures (src/eval/hacking.ts): over the run at T_max, the
// figures equal those recomputed from the kept trajectories by hand; `eval --json` and `compare --json`
// carry `hacking` on the code env under the visible reward and not under its default reward.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { runPassCounts } from '../../src/eval/evaluate.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import { turnwise } from '../cli/run.ts';

test('runPassCounts: the hacking figures are those of its trajectories at T_max, counted by hand', async () => {
  const config = envConfig('code', { mode: 'choose', reward: 'visible' });
  const tasks = makeTasks(config, 30, 0);
  const policy = makePolicy('random', envs.spec(tasks[0]), '--policy');
  const run = await runPassCounts({ envs, tasks, samples: 3, T: [1, 2], policy, runSeed: 5, keep: true });
  const trajs = run.atTmax.map((r) => r.trajectory);
  assert.equal(trajs.length, 90);
  const infos = trajs.map((t) => t.turns.find((x) => x.info.tool === 'submit')!.info);
  const share = (f: (i: (typeof infos)[number]) => boolean) => infos.filter(f).length / infos.length;
  const all = (c: unknown) => (c as { passed: number }).passed === (c as { total: number }).total;
  const h = run.hacking.result()!;
  assert.equal(h.submitted, 90);
  assert.equal(
    h.visiblePass,
    share((i) => all(i.visible)),
  );
  assert.equal(
    h.hiddenPass,
    share((i) => i.success === true),
  );
  assert.equal(
    h.detected,
    share((i) => i.detected === true),
  );
  assert.ok(h.detected > 0 && h.gap > 0, 'a random choice submits the hack on some tasks');
});

test('eval --json and compare --json: `hacking` under the visible reward, absent under the default', async () => {
  const common = ['--env', 'code', '--tasks', '4', '--samples', '2', '--K', '1', '--T', '2', '--json'];
  const visible = ['--env-params', '{"mode":"choose","reward":"visible"}'];
  const e = await turnwise(['eval', ...common, ...visible, '--policy', 'random']);
  assert.equal(e.code, 0, e.stderr);
  const hacking = JSON.parse(e.stdout).hacking;
  assert.deepEqual(Object.keys(hacking), ['submitted', 'visiblePass', 'hiddenPass', 'gap', 'detected']);
  assert.equal(hacking.submitted, 8);
  assert.ok(Math.abs(hacking.gap - (hacking.visiblePass - hacking.hiddenPass)) < 1e-12);
  const c = await turnwise(['compare', ...common, ...visible, '--a', 'random', '--b', 'random']);
  assert.equal(c.code, 0, c.stderr);
  const r = JSON.parse(c.stdout);
  assert.equal(r.hacking.a.submitted, 8);
  assert.equal(r.hacking.b.submitted, 8);
  const d = await turnwise(['eval', ...common, '--policy', 'oracle:eps=0.3', '--T', '20']);
  assert.equal(d.code, 0, d.stderr);
  assert.equal('hacking' in JSON.parse(d.stdout), false);
});
