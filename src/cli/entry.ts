// What every entry to the CLI shares: the program's configuration (name, one-line errors) and the run
// that turns its outcome into an exit code — bad input one line and 2, a bug one line and 1. main.ts
// registers every command; summary-main.ts only `summary`, so that reading a large file does not
// first load every other command's modules (start-up is part of that command's time).
import { Command, CommanderError } from 'commander';
import { InputError } from '../core/errors.ts';

export function baseProgram(): Command {
  return new Command('turnwise')
    .description(
      'multi-turn agent RL: rollouts under turn budgets, exact oracles, credit, training, diagnostics',
    )
    .version('0.1.0')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => process.stdout.write(s),
      writeErr: (s) => process.stderr.write(s),
      // One line, so commander's "(Did you mean --seed?)" joins the error instead of a line of its own.
      outputError: (s, write) =>
        write(
          `turnwise: ${s
            .replace(/^error: /, '')
            .trim()
            .replace(/\s*\n\s*/g, ' ')}\n`,
        ),
    })
    .showSuggestionAfterError(true);
}

export async function runProgram(program: Command, argv: string[]): Promise<number> {
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    if (e instanceof InputError) {
      process.stderr.write(`turnwise: ${e.message}\n`);
      return 2;
    }
    const err = e instanceof Error ? e : new Error(String(e));
    process.stderr.write(`turnwise: internal error: ${err.message}\n`);
    if (process.env.TURNWISE_DEBUG) process.stderr.write(`${err.stack}\n`);
    return 1;
  }
}
