// turnwise ui — the dashboard: the runs under a directory served read-only, as pages and as a JSON API
// (src/ui/, docs/ui.md).
import { existsSync, statSync } from 'node:fs';
import type { Command } from 'commander';
import { InputError } from '../../core/errors.ts';
import { describeEnv, envSpec } from '../../envs/index.ts';
import { creditOfFile } from '../../studies/credit-file.ts';
import { uiDiagnostics, uiVocabularies } from '../../studies/ui-policies.ts';
import { startUi } from '../../ui/app.ts';
import { untilSignal } from '../io.ts';
import { int, spacesOfRegistered } from '../options.ts';
import { ABOUT } from './about.ts';

interface UiFlags {
  runs: string;
  port: string;
  host: string;
}

export function registerUi(program: Command): void {
  program
    .command('ui')
    .description(ABOUT.ui.description)
    .option('--runs <dir>', 'the directory whose runs are served (searched below it)', 'runs')
    .option('--port <n>', 'port (0 = a free port)', '8080')
    .option('--host <host>', 'interface to listen on (loopback unless told otherwise)', '127.0.0.1')
    .action(async (flags: UiFlags) => {
      const port = int('--port', flags.port, 0, 65535);
      if (!existsSync(flags.runs)) throw new InputError('--runs', flags.runs, 'no such directory');
      if (!statSync(flags.runs).isDirectory())
        throw new InputError('--runs', flags.runs, 'is a file; expected a directory of runs');
      const server = await startUi({
        runs: flags.runs,
        credit: creditOfFile,
        envOf: (task) => ({ spec: envSpec(task), describe: () => describeEnv(task) }),
        spacesOf: spacesOfRegistered,
        diagnostics: uiDiagnostics(),
        vocabularyOf: uiVocabularies(),
        port,
        host: flags.host,
      }).catch((e: NodeJS.ErrnoException) => {
        if (e.code === undefined) throw e;
        // An address this machine does not have is the host's fault; a port in use, the port's.
        const host = e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN';
        throw new InputError(
          host ? '--host' : '--port',
          host ? flags.host : flags.port,
          `cannot listen on ${flags.host}:${port} (${e.code})`,
        );
      });
      // Opens nothing: the URL is for the reader (and for scripts that wait for this line).
      process.stderr.write(`listening on ${server.url}\n`);
      await untilSignal(() => server.close());
    });
}
