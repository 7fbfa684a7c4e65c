#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader: no build step, `npx turnwise …` works after `npm ci`.
import { register } from 'tsx/esm/api';

register();
const argv = process.argv.slice(2);
// `summary` (reading a file, possibly GBs) skips loading every other command (src/cli/summary-main.ts).
const entry = argv[0] === 'summary' ? '../src/cli/summary-main.ts' : '../src/cli/main.ts';
const { main } = await import(entry);
process.exitCode = await main(argv);
