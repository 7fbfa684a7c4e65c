// Every command registers itself on the program; one line per command file.
import type { Command } from 'commander';
import { registerBc } from './bc.ts';
import { registerBench } from './bench.ts';
import { registerDemo } from './demo.ts';
import { registerEnv } from './env.ts';
import { registerRollout } from './rollout.ts';
import { registerSummary } from './summary.ts';

export const COMMANDS: ((program: Command) => void)[] = [
  registerEnv,
  registerRollout,
  registerSummary,
  registerBc,
  registerBench,
  registerDemo,
];
