// rollout/invalid_rate: the fraction of the batch's own turns whose output did not parse. A fresh tiny
// transformer writes garbage (near 1), a policy that writes no text never is invalid (0), and the value
// equals a count over the iteration's stored trajectories made from the env's side (FrozenLake refuses
// an unparsed output: info.valid = false), expert-prefix turns left out.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { envConfig, envs, makeTasks } from '../../src/envs/index.ts';
import { makePolicy } from '../../src/policies/spec.ts';
import type { TransformerPolicy } from '../../src/policies/transformer.ts';
import { RunStore } from '../../src/store/sqlite.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { RUN_ID } from '../../src/train/run-dir.ts';
import { TransformerLearner } from '../../src/train/transformer-learner.ts';
import { lakeTokenizerFile } from '../fixtures/lake-tokenizer.ts';

const lake = envConfig('frozenlake', { random: true, size: 4, slippery: false });
const spec = envs.spec(makeTasks(lake, 1, 0)[0]);
const dir = mkdtempSync(join(tmpdir(), 'tw-invalid-rate-'));
const tok = await lakeTokenizerFile(lake, 380);
const base = {
  env: lake,
  iters: 2,
  groups: 2,
  groupSize: 4,
  budget: { kind: 'fixed', budget: 4 },
  trainSeeds: [0, 3],
  testSeeds: [1000, 1003],
  eval: { episodes: 4 },
  ppo: { epochs: 1, minibatches: 1, entCoef: 0.01 },
  storeTrajectories: true,
  seed: 7,
};

test('a fresh transformer: rollout/invalid_rate near 1, the count of refused own turns in the stored batch', async () => {
  const out = join(dir, 'transformer');
  // Expert prefixes put forced (valid, not the policy's) turns in the batch: they are not counted.
  const config = parseTrainConfig({ ...base, guidance: { mode: 'gaussian', maxPrefix: 3 } });
  const policy = makePolicy(
    `transformer:layers=1,d=16,heads=2,ctx=256,mode=text,seed=2,tokenizer=${tok}`,
    spec,
  ) as TransformerPolicy;
  const r = await trainPolicyGradient({ config, envs, out, learner: new TransformerLearner(policy) });
  const store = new RunStore(join(out, 'run.sqlite'));
  const stored = store.trajectories(RUN_ID);
  store.close();
  let first = 0;
  let forced = 0;
  for (const m of r.metrics) {
    const batch = stored.slice(first, first + m.values['rollout/episodes']);
    first += batch.length;
    const own = batch.flatMap((t) => t.turns.filter((u) => u.forced !== true));
    forced += batch.reduce((n, t) => n + t.turns.length, 0) - own.length;
    const refused = own.filter((u) => u.info.valid === false).length;
    assert.ok(own.length > 0);
    assert.equal(m.values['rollout/invalid_rate'], refused / own.length);
    assert.ok(m.values['rollout/invalid_rate'] > 0.8, `garbage: ${m.values['rollout/invalid_rate']}`);
  }
  assert.equal(first, stored.length);
  assert.ok(forced > 0, 'the batch held expert turns');
});

test('a policy that writes no text: rollout/invalid_rate is 0', async () => {
  const config = parseTrainConfig({ ...base, iters: 1, policy: { kind: 'mlp' } });
  const r = await trainPolicyGradient({ config, envs });
  assert.equal(r.metrics[0].values['rollout/invalid_rate'], 0);
});
