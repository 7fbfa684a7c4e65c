// `train --resume` says the run was resumed and times the whole run (the part before the resume from
// the checkpoint, the resumed part measured).
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { envs } from '../../src/envs/index.ts';
import { readCheckpointFile } from '../../src/nn/checkpoint.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';
import { turnwise } from './run.ts';

test('train --resume: "… s in all, of which … s after resuming from the checkpoint of iteration N"', async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'turnwise-resume-line-')), 'run');
  const config = parseTrainConfig({
    env: { env: 'frozenlake', params: { map: '4x4', slippery: true } },
    iters: 5,
    groups: 2,
    checkpointEvery: 2,
    eval: { episodes: 50 },
    seed: 3,
  });
  // Stopped after iteration 2 (0-based): the checkpoint is that of iteration 2 (1-based), the third
  // iteration's rows are recomputed.
  await trainPolicyGradient({ config, envs, out, stopAfter: 2 });
  const ck = readCheckpointFile(join(out, 'checkpoint.safetensors')).config as {
    iter: number;
    seconds: number;
  };
  assert.equal(ck.iter, 1);
  const r = await turnwise(['train', '--resume', out]);
  assert.equal(r.code, 0, r.stderr);
  const m = r.stdout.match(
    /^trained tabular with grpo for 5 iterations in (\d+\.\d) s in all, of which (\d+\.\d) s after resuming from the checkpoint of iteration 2 → /m,
  );
  assert.ok(m, r.stdout);
  const [all, after] = [Number(m[1]), Number(m[2])];
  assert.ok(all >= ck.seconds - 0.05, `${all} s in all, checkpoint ${ck.seconds} s`);
  assert.ok(Math.abs(all - after - ck.seconds) <= 0.1 + 1e-9, `${all} − ${after} vs ${ck.seconds}`);
});
