// The command-line adapter: parse flags, call a library function, print. Bad input → one line on
// stderr and exit code 2; a bug → one line too (the stack with TURNWISE_DEBUG=1) and exit code 1.
import { type Command, Help } from 'commander';
import { ABOUT, type CommandName } from './commands/about.ts';
import { COMMANDS } from './commands/index.ts';
import { baseProgram, runProgram } from './entry.ts';

/**
 * The program for `argv`: the command it names (or, after `help`, the one it asks about) registered in
 * full, every other command only by its name and description (what `--help` lists and what an unknown
 * command is matched against). `argv` undefined: every command in full (tests walk the whole program).
 */
export async function program(argv?: string[]): Promise<Command> {
  const p = baseProgram();
  const wanted = argv === undefined ? undefined : argv[0] === 'help' ? argv[1] : argv[0];
  for (const c of COMMANDS) {
    if (argv === undefined || c.name === wanted) for (const register of await c.load()) register(p);
    else p.command(c.name).description(ABOUT[c.name].description);
  }
  // An OpenEnv server given as --env openenv:URL is read before the command runs: its env's spec (the
  // action space, the tools) is what the command's synchronous checks and policies need.
  // `env describe openenv:URL` names it as an argument.
  p.hook('preAction', async (_p, action) => {
    const named = [action.opts().env, ...action.args];
    const env = named.find((x): x is string => typeof x === 'string' && x.startsWith('openenv:'));
    if (env !== undefined) await (await import('../envs/index.ts')).prepareEnv(env);
  });
  const help = new Help();
  p.configureHelp({
    // A command listed by name has no options yet: its term is the one the full command would show.
    subcommandTerm: (cmd) =>
      cmd.parent === p && Object.hasOwn(ABOUT, cmd.name())
        ? ABOUT[cmd.name() as CommandName].term
        : help.subcommandTerm(cmd),
  });
  return p;
}

export async function main(argv: string[]): Promise<number> {
  return runProgram(await program(argv), argv);
}
