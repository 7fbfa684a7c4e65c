#!/usr/bin/env node
// The CLI. It runs the precompiled copy of src/ in dist/ (bin/precompile.js: rebuilt here from any source
// that changed since, so an edit is never run stale), and the TypeScript sources through tsx's loader
// when dist/ cannot be written or TURNWISE_SOURCE=1 asks for it. Either way `npx turnwise …` works right
// after `npm ci`, with no build step to remember.
const argv = process.argv.slice(2);
// `summary` (reading a file, possibly GBs) skips loading every other command (src/cli/summary-main.ts).
const entry = argv[0] === 'summary' ? 'cli/summary-main' : 'cli/main';
let main;
if (process.env.TURNWISE_SOURCE !== '1') {
  try {
    const { precompile } = await import('./precompile.js');
    await precompile();
    if (process.env.TURNWISE_DEBUG) process.setSourceMapsEnabled(true);
    ({ main } = await import(`../dist/${entry}.js`));
  } catch (e) {
    if (process.env.TURNWISE_DEBUG) process.stderr.write(`turnwise: running the sources (dist/: ${e})\n`);
  }
}
if (main === undefined) {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import(`../src/${entry}.ts`));
}
process.exitCode = await main(argv);
