// `turnwise summary --in FILE` against the floor of any line reader: a bare Node loop that reads the
// same file line by line (readline over a read stream, counting lines) — and, for scale, the same loop
// with JSON.parse of each line. Each runs as its own process, alternating, `--repeat` times; the best
// time of each is reported with their ratio. One JSON object; machine-dependent, never asserted.
//   node --import tsx bench/summary.ts --in FILE [--repeat 2]
//   node --import tsx bench/summary.ts --episodes 200000 [--keep]   (writes the file first: an 8x8
//   slippery oracle rollout, ~5 KB a line; deleted afterwards unless --keep)
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from './args.ts';

const BIN = fileURLToPath(new URL('../bin/turnwise.js', import.meta.url));
const { values } = benchArgs('bench/summary.ts', {
  options: {
    in: { type: 'string' },
    episodes: { type: 'string' },
    repeat: { type: 'string', default: '2' },
    keep: { type: 'boolean', default: false },
  },
});

/** Wall time and CPU time (user + system, from GNU time: the fairer figure on a shared machine). */
function run(args: string[]): { seconds: number; cpu: number; stdout: string } {
  const t0 = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', 'cpu %U %S', process.execPath, ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const seconds = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
  const m = /cpu ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
  return { seconds, cpu: m === null ? Number.NaN : Number(m[1]) + Number(m[2]), stdout: r.stdout };
}

let file = values.in;
let made: string | undefined;
if (file === undefined) {
  if (values.episodes === undefined) throw new Error('give --in FILE or --episodes N');
  made = mkdtempSync(join(tmpdir(), 'turnwise-bench-summary-'));
  file = join(made, 'f.jsonl');
  const args = ['rollout', '--map', '8x8', '--slippery', '--policy', 'oracle'];
  run([BIN, ...args, '--episodes', values.episodes, '--out', file, '--json']);
}

const BARE = `
const rl = require('node:readline').createInterface({ input: require('node:fs').createReadStream(process.argv[1]), crlfDelay: Infinity });
let n = 0;
rl.on('line', () => { n++; }).on('close', () => console.log(n));`;
const PARSE = `
const rl = require('node:readline').createInterface({ input: require('node:fs').createReadStream(process.argv[1]), crlfDelay: Infinity });
let n = 0;
rl.on('line', (l) => { if (JSON.parse(l).outcome.success) n++; }).on('close', () => console.log(n));`;

const best = {
  bare: Number.POSITIVE_INFINITY,
  parse: Number.POSITIVE_INFINITY,
  summary: Number.POSITIVE_INFINITY,
};
const cpu = { ...best };
let lines = 0;
let episodes = 0;
for (let i = 0; i < Number(values.repeat); i++) {
  const bare = run(['-e', BARE, file]);
  lines = Number(bare.stdout.trim());
  best.bare = Math.min(best.bare, bare.seconds);
  cpu.bare = Math.min(cpu.bare, bare.cpu);
  const parse = run(['-e', PARSE, file]);
  best.parse = Math.min(best.parse, parse.seconds);
  cpu.parse = Math.min(cpu.parse, parse.cpu);
  const s = run([BIN, 'summary', '--in', file, '--json']);
  episodes = JSON.parse(s.stdout).episodes;
  best.summary = Math.min(best.summary, s.seconds);
  cpu.summary = Math.min(cpu.summary, s.cpu);
}
const r2 = (x: number) => Math.round(x * 100) / 100;
process.stdout.write(
  `${JSON.stringify({
    bench: 'summary',
    fileMB: Math.round(statSync(file).size / 2 ** 20),
    lines,
    episodes,
    seconds: {
      bareLineLoop: r2(best.bare),
      lineLoopWithJsonParse: r2(best.parse),
      summary: r2(best.summary),
    },
    cpuSeconds: {
      bareLineLoop: r2(cpu.bare),
      lineLoopWithJsonParse: r2(cpu.parse),
      summary: r2(cpu.summary),
    },
    ratioToBareLoop: r2(best.summary / best.bare),
    cpuRatioToBareLoop: r2(cpu.summary / cpu.bare),
  })}\n`,
);
if (made !== undefined && !values.keep) rmSync(made, { recursive: true, force: true });
else if (made !== undefined) process.stderr.write(`kept ${file}\n`);
