// Every command, in the order `turnwise --help` lists them, with the modules that register it. A
// module is imported only when its command runs (start-up is part of every command's time: docs/cli.md).
import type { Command } from 'commander';
import type { CommandName } from './about.ts';

type Register = (program: Command) => void;

export const COMMANDS: { name: CommandName; load: () => Promise<Register[]> }[] = [
  { name: 'env', load: async () => [(await import('./env.ts')).registerEnv] },
  { name: 'rollout', load: async () => [(await import('./rollout.ts')).registerRollout] },
  { name: 'summary', load: async () => [(await import('./summary.ts')).registerSummary] },
  { name: 'eval', load: async () => [(await import('./eval.ts')).registerEval] },
  { name: 'compare', load: async () => [(await import('./compare.ts')).registerCompare] },
  { name: 'credit', load: async () => [(await import('./credit.ts')).registerCredit] },
  { name: 'judge', load: async () => [(await import('./judge.ts')).registerJudge] },
  { name: 'calc', load: async () => [(await import('./calc.ts')).registerCalc] },
  { name: 'tokenizer', load: async () => [(await import('./tokenizer.ts')).registerTokenizer] },
  { name: 'bc', load: async () => [(await import('./bc.ts')).registerBc] },
  { name: 'train', load: async () => [(await import('./train.ts')).registerTrain] },
  { name: 'train-pair', load: async () => [(await import('./train-pair.ts')).registerTrainPair] },
  { name: 'adapt', load: async () => [(await import('./adapt.ts')).registerAdapt] },
  {
    name: 'bench',
    // `bench proxy` lives with the proxy it measures.
    load: async () => [
      (await import('./bench.ts')).registerBench,
      (await import('./proxy.ts')).registerBenchProxy,
    ],
  },
  { name: 'demo', load: async () => [(await import('./demo.ts')).registerDemo] },
  { name: 'study', load: async () => [(await import('./study.ts')).registerStudy] },
  { name: 'report', load: async () => [(await import('./report.ts')).registerReport] },
  { name: 'schema', load: async () => [(await import('./schema.ts')).registerSchema] },
  { name: 'serve', load: async () => [(await import('./serve.ts')).registerServe] },
  { name: 'serve-env', load: async () => [(await import('./serve-env.ts')).registerServeEnv] },
  { name: 'ui', load: async () => [(await import('./ui.ts')).registerUi] },
  { name: 'probe', load: async () => [(await import('./probe.ts')).registerProbe] },
  { name: 'mcp', load: async () => [(await import('./mcp.ts')).registerMcp] },
  { name: 'proxy', load: async () => [(await import('./proxy.ts')).registerProxy] },
  { name: 'harness', load: async () => [(await import('./harness.ts')).registerHarness] },
  { name: 'export', load: async () => [(await import('./export.ts')).registerExport] },
  { name: 'worker', load: async () => [(await import('./worker.ts')).registerWorker] },
  { name: 'queue', load: async () => [(await import('./queue.ts')).registerQueue] },
];
