// The tool envs' rollout contract through the real CLI: `rollout --env ENV --policy P --tasks 50
// --budget 20 --json`, exit 0, its summary.
import assert from 'node:assert/strict';
import { turnwise } from '../cli/run.ts';

export interface RolloutSummary {
  success: number;
  episodes: number;
  failures: Record<string, number>;
}

export async function rolloutContract(env: string, policy: string): Promise<RolloutSummary> {
  const r = await turnwise([
    'rollout',
    '--env',
    env,
    '--policy',
    policy,
    '--tasks',
    '50',
    '--budget',
    '20',
    '--json',
  ]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as RolloutSummary;
}
