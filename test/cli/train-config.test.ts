// `train --config FILE` with env flags: the file's env is the base and each env flag sets its parameter
// over it (precedence file < flags), as for every other field; --env naming another env starts from that
// env's defaults. Before, an env flag outside FrozenLake's own (--level, --domain, --env-params, …) was
// dropped without a word when a config file named the env.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { configFromFlags } from '../../src/cli/commands/train.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-train-config-'));
function file(name: string, config: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(config));
  return path;
}

test('env flags set their parameters over the config file’s env', () => {
  const sql = file('sql.json', { env: { env: 'sql', params: { level: 1, domain: 'shop' } }, iters: 3 });
  // No env flag: the file's env as it is.
  assert.deepEqual(configFromFlags({ config: sql }).env, {
    env: 'sql',
    params: { level: 1, domain: 'shop' },
  });
  // --level alone: the file's domain stays, the level is the flag's.
  const leveled = configFromFlags({ config: sql, level: '2' });
  assert.equal(leveled.env.env, 'sql');
  assert.deepEqual(leveled.env.params, { level: 2, domain: 'shop', rows: 20, reward: 'intercode' });
  // --env-params under a flag: the flag wins over the JSON, the JSON over the file.
  const both = configFromFlags({ config: sql, envParams: '{"level":3,"rows":12}', level: '2' });
  assert.deepEqual(both.env.params, { level: 2, domain: 'shop', rows: 12, reward: 'intercode' });
  assert.equal(both.iters, 3);

  const lake = file('lake.json', { env: { env: 'frozenlake', params: { random: true, size: 5, p: 0.7 } } });
  const slippery = configFromFlags({ config: lake, slippery: true }).env.params as Record<string, unknown>;
  assert.deepEqual([slippery.random, slippery.size, slippery.p, slippery.slippery], [true, 5, 0.7, true]);
});

test('--env naming another env than the file’s starts from that env’s defaults', () => {
  const sql = file('sql2.json', { env: { env: 'sql', params: { level: 1, domain: 'shop' } } });
  const lake = configFromFlags({ config: sql, env: 'frozenlake', map: '4x4' });
  assert.equal(lake.env.env, 'frozenlake');
  assert.equal((lake.env.params as { domain?: string }).domain, undefined);
});
