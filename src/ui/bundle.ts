// The dashboard's front end as one ES module: src/ui/web/main.ts and what it imports (its pages, and the
// report's own chart code, report/line.ts, heatmap.ts, bars.ts …) bundled by esbuild when the server
// starts, held in memory and served at /app.js. Nothing is fetched from the network, at build or in the
// page: the bundle holds every line the page runs. Built from the tree this module runs from (src/ under
// tsx, dist/ from the CLI's precompiled copy, which mirrors src/ file by file), so an edited page is
// served fresh at the next start.
import { fileURLToPath } from 'node:url';

let built: Promise<string> | undefined;

async function bundle(): Promise<string> {
  // Imported here, not at the top: esbuild is loaded only by the command that serves pages.
  const { build } = await import('esbuild');
  const entry = fileURLToPath(new URL('./web/main.ts', import.meta.url));
  const { outputFiles } = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  return outputFiles[0].text;
}

/** The front end's code (built once per process). */
export function frontEnd(): Promise<string> {
  built ??= bundle();
  return built;
}
