// The command-line adapter: parse flags, call a library function, print. Bad input → one line on
// stderr and exit code 2; a bug → one line too (the stack with TURNWISE_DEBUG=1) and exit code 1.
import type { Command } from 'commander';
import { COMMANDS } from './commands/index.ts';
import { baseProgram, runProgram } from './entry.ts';

export function program(): Command {
  const p = baseProgram();
  for (const register of COMMANDS) register(p);
  return p;
}

export async function main(argv: string[]): Promise<number> {
  return runProgram(program(), argv);
}
