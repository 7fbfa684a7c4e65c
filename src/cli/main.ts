// The command-line adapter: parse flags, call a library function, print. Bad input → one line on
// stderr and exit code 2; a bug → one line too (the stack with TURNWISE_DEBUG=1) and exit code 1.
import { Command, CommanderError } from 'commander';
import { InputError } from '../core/errors.ts';
import { COMMANDS } from './commands/index.ts';

export function program(): Command {
  const p = new Command('turnwise')
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
  for (const register of COMMANDS) register(p);
  return p;
}

export async function main(argv: string[]): Promise<number> {
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
  try {
    await program().parseAsync(argv, { from: 'user' });
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
