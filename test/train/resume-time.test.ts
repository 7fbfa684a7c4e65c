// The seconds a resumed run reports are the whole run's: the checkpoint records the run's time so far
// and a resume adds its own to it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { envs } from '../../src/envs/index.ts';
import { encodeCheckpoint, readCheckpointFile } from '../../src/nn/checkpoint.ts';
import { decodeSafetensors } from '../../src/nn/safetensors.ts';
import { parseTrainConfig } from '../../src/train/config.ts';
import { trainEs } from '../../src/train/es-train.ts';
import { trainPolicyGradient } from '../../src/train/loop.ts';

const slippery4 = { env: 'frozenlake', params: { map: '4x4', slippery: true } };

/** The `seconds` a training checkpoint records. */
const recorded = (path: string) => (readCheckpointFile(path).config as { seconds?: number }).seconds;

/** Rewrites the run state in a checkpoint's metadata, resealed with a fresh checksum (as a writer
 * that recorded these seconds would have: the file is edited, not damaged). */
function setSeconds(path: string, seconds: number): void {
  const { tensors, metadata } = decodeSafetensors(readFileSync(path));
  const state = JSON.parse(metadata.turnwise);
  metadata.turnwise = JSON.stringify({ ...state, seconds });
  writeFileSync(path, encodeCheckpoint(tensors, metadata));
}

test('a run interrupted and resumed reports the seconds of the whole run, not of the resumed part', async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'turnwise-resume-time-')), 'run');
  const config = parseTrainConfig({
    env: slippery4,
    iters: 6,
    groups: 4,
    checkpointEvery: 1,
    eval: { episodes: 50 },
    seed: 1,
  });
  const first = await trainPolicyGradient({ config, envs, out, stopAfter: 2 });
  assert.equal(first.resumed, undefined);
  const ck = join(out, 'checkpoint.safetensors');
  const before = recorded(ck)!;
  assert.ok(before > 0 && before <= first.seconds, `checkpoint ${before} s, first part ${first.seconds} s`);
  // As if the first part had taken 1000 s: the resumed run must count them.
  setSeconds(ck, 1000);
  const t = performance.now();
  const second = await trainPolicyGradient({ config, envs, out, resume: true });
  const wall = (performance.now() - t) / 1000;
  assert.deepEqual(second.resumed, { iterations: 3, seconds: 1000 });
  assert.deepEqual(
    second.metrics.map((m) => m.iter),
    [3, 4, 5],
  );
  assert.ok(second.seconds >= 1000 && second.seconds - 1000 <= wall, `${second.seconds} s, wall ${wall} s`);
  // The last checkpoint carries the whole run's time on, for a further resume.
  const last = recorded(ck)!;
  assert.ok(last > 1000 && last <= second.seconds, `last checkpoint ${last} s`);
});

test('a checkpoint whose seconds are not a finite number ≥ 0 is refused on resume, naming it', async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'turnwise-resume-time-')), 'run');
  const config = parseTrainConfig({ env: slippery4, iters: 4, groups: 2, checkpointEvery: 1, seed: 2 });
  await trainPolicyGradient({ config, envs, out, stopAfter: 0 });
  const ck = join(out, 'checkpoint.safetensors');
  setSeconds(ck, -5);
  await assert.rejects(trainPolicyGradient({ config, envs, out, resume: true }), {
    name: 'InputError',
    message: new RegExp(
      `^${ck.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: seconds -5 is not a finite number ≥ 0`,
    ),
  });
});

test('ES: a resumed run counts the seconds its checkpoint recorded too', async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'turnwise-resume-time-')), 'run');
  const config = parseTrainConfig({
    env: slippery4,
    algo: 'es',
    iters: 3,
    groups: 2,
    groupSize: 2,
    checkpointEvery: 1,
    es: { pairs: 2, sigma: 0.5, lr: 0.5, shaping: 'rank', workers: 1 },
    eval: { episodes: 20 },
    seed: 4,
  });
  const first = await trainEs({ config, envs, out, stopAfter: 0 });
  const ck = join(out, 'checkpoint.safetensors');
  const before = recorded(ck)!;
  assert.ok(before > 0 && before <= first.seconds, `checkpoint ${before} s, first part ${first.seconds} s`);
  setSeconds(ck, 500);
  const t = performance.now();
  const second = await trainEs({ config, envs, out, resume: true });
  const wall = (performance.now() - t) / 1000;
  assert.deepEqual(second.resumed, { iterations: 1, seconds: 500 });
  assert.ok(second.seconds >= 500 && second.seconds - 500 <= wall, `${second.seconds} s, wall ${wall} s`);
});
