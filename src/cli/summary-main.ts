// `turnwise summary …` alone (bin/turnwise.js picks it when the first word is `summary`): the same
// program configuration and exit codes as main.ts, with only this command registered.
import { registerSummary } from './commands/summary.ts';
import { baseProgram, runProgram } from './entry.ts';

export async function main(argv: string[]): Promise<number> {
  const p = baseProgram();
  registerSummary(p);
  return runProgram(p, argv);
}
