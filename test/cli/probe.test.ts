// turnwise probe URL#MODEL against `turnwise serve`: what it supports (everything, prompt log-probs by
// echo on /v1/completions) as the eight booleans, and bad input as one line, exit 2.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { EVERY_CAPABILITY } from '../fixtures/capabilities.ts';
import { turnwise } from './run.ts';

const BIN = fileURLToPath(new URL('../../bin/turnwise.js', import.meta.url));

test('probe of turnwise serve: the capabilities as JSON booleans; an unlisted model exits 2', async () => {
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--port', '0', '--json', '--policy', 'oracle:eps=0.2'],
    {
      env: { ...process.env, NO_COLOR: '1' },
    },
  );
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      if (stdout.includes('\n')) resolve((JSON.parse(stdout.split('\n')[0]) as { url: string }).url);
    });
    child.on('close', () => reject(new Error('serve exited')));
  });
  test.after(() => child.kill('SIGKILL'));
  const r = await turnwise(['probe', `${url}#oracle`, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), EVERY_CAPABILITY);
  const text = await turnwise(['probe', `openai:${url}#oracle`]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^chat {12}yes\n/);
  assert.match(text.stdout, /promptLogprobs {2}yes\n/);
  const bad = await turnwise(['probe', `${url}#gpt-4`, '--json']);
  assert.equal(bad.code, 2);
  assert.equal(bad.stdout, '');
  assert.match(bad.stderr, /^turnwise: probe URL#MODEL: got "gpt-4"; the server does not list this model/);
  assert.equal(bad.stderr.trim().split('\n').length, 1);
  child.kill('SIGTERM');
  assert.equal(await exited, 0);
});
