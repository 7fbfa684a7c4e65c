// Every command registers itself on the program; one line per command file.
import type { Command } from 'commander';
import { registerBc } from './bc.ts';
import { registerBench } from './bench.ts';
import { registerCalc } from './calc.ts';
import { registerCompare } from './compare.ts';
import { registerCredit } from './credit.ts';
import { registerDemo } from './demo.ts';
import { registerEnv } from './env.ts';
import { registerEval } from './eval.ts';
import { registerExport } from './export.ts';
import { registerHarness } from './harness.ts';
import { registerMcp } from './mcp.ts';
import { registerProbe } from './probe.ts';
import { registerBenchProxy, registerProxy } from './proxy.ts';
import { registerReport } from './report.ts';
import { registerRollout } from './rollout.ts';
import { registerSchema } from './schema.ts';
import { registerServe } from './serve.ts';
import { registerStudy } from './study.ts';
import { registerSummary } from './summary.ts';
import { registerTrain } from './train.ts';

export const COMMANDS: ((program: Command) => void)[] = [
  registerEnv,
  registerRollout,
  registerSummary,
  registerEval,
  registerCompare,
  registerCredit,
  registerCalc,
  registerBc,
  registerTrain,
  registerBench,
  registerDemo,
  registerStudy,
  registerReport,
  registerSchema,
  registerServe,
  registerProbe,
  registerMcp,
  registerProxy,
  registerBenchProxy,
  registerHarness,
  registerExport,
];
