// Peak memory (and time) of the CLI at the issue's sizes, measured from outside: each case runs
// `node bin/turnwise.js …` under GNU time (`/usr/bin/time -v`), whose "Maximum resident set size" is
// the kernel's peak RSS of the process. One JSON object per case; machine-dependent, never asserted.
//   node --import tsx bench/memory.ts [--case NAME]… [--scale F] [--dir DIR]
// eval-in-300k and credit-in-300k read the file rollout-300k-out writes (written first when missing).
// --scale multiplies every episode count (0.1 for a quick look); --dir holds the files written.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchArgs } from './args.ts';

const BIN = fileURLToPath(new URL('../bin/turnwise.js', import.meta.url));

const { values } = benchArgs('bench/memory.ts', {
  options: {
    case: { type: 'string', multiple: true },
    scale: { type: 'string', default: '1' },
    dir: { type: 'string' },
  },
});
const scale = Number(values.scale);
const dir = values.dir ?? mkdtempSync(join(tmpdir(), 'turnwise-bench-memory-'));
const n = (x: number) => Math.max(1, Math.round(x * scale));

interface Case {
  name: string;
  episodes: number;
  args: string[];
  file?: string;
  /** A file the case reads: written first by the case that writes it when missing (not measured). */
  reads?: string;
  /** The issue's limit on the peak RSS, in MB. */
  limitMB: number;
}

const ORACLE = ['--map', '8x8', '--slippery', '--policy', 'oracle'];
const CASES: Case[] = [
  {
    name: 'rollout-5M',
    episodes: n(5_000_000),
    args: ['rollout', ...ORACLE, '--episodes', String(n(5_000_000)), '--json'],
    limitMB: 600,
  },
  {
    name: 'rollout-300k-out',
    episodes: n(300_000),
    args: ['rollout', ...ORACLE, '--episodes', String(n(300_000)), '--out', join(dir, 'f.jsonl'), '--json'],
    file: join(dir, 'f.jsonl'),
    limitMB: 600,
  },
  {
    name: 'eval-100k-x8',
    episodes: n(100_000) * 8,
    args: [
      'eval',
      ...ORACLE,
      '--tasks',
      String(n(100_000)),
      '--samples',
      '8',
      '--K',
      '1,2,4,8',
      '--resamples',
      '200',
      '--json',
    ],
    limitMB: 1024,
  },
  // The readers of that file (streaming: memory must not grow with it). No limit in the issue; the
  // rollout's 600 MB is given for scale.
  {
    name: 'eval-in-300k',
    episodes: n(300_000),
    args: ['eval', '--in', join(dir, 'f.jsonl'), '--K', '1', '--T', '100', '--json'],
    reads: join(dir, 'f.jsonl'),
    limitMB: 600,
  },
  {
    name: 'credit-in-300k',
    episodes: n(300_000),
    args: ['credit', '--in', join(dir, 'f.jsonl'), '--method', 'grpo', '--task-norm', '--json'],
    reads: join(dir, 'f.jsonl'),
    limitMB: 600,
  },
];

/** Peak RSS (MB) and wall time (s) of one run of the CLI, from GNU time's report on stderr. */
function measure(args: string[]): {
  maxRssMB: number;
  seconds: number;
  cpuSeconds: number;
  exit: number;
} {
  const r = spawnSync('/usr/bin/time', ['-v', process.execPath, BIN, ...args], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr);
  const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)/.exec(r.stderr);
  if (rss === null || wall === null) throw new Error(`no report from /usr/bin/time: ${r.stderr.slice(-500)}`);
  const seconds = Number(wall[1] ?? 0) * 3600 + Number(wall[2]) * 60 + Number(wall[3]);
  // CPU time (user + system) is the fairer per-episode figure on a shared machine.
  const cpu = (what: string) =>
    Number(new RegExp(`${what} time \\(seconds\\): ([\\d.]+)`).exec(r.stderr)?.[1] ?? NaN);
  const cpuSeconds = cpu('User') + cpu('System');
  return { maxRssMB: Math.round(Number(rss[1]) / 1024), seconds, cpuSeconds, exit: r.status ?? -1 };
}

const chosen = values.case === undefined ? CASES : CASES.filter((c) => values.case!.includes(c.name));
if (chosen.length === 0) throw new Error(`--case: expected one of ${CASES.map((c) => c.name).join(', ')}`);
for (const c of chosen) {
  if (c.reads !== undefined && !existsSync(c.reads)) {
    const writer = CASES.find((w) => w.file === c.reads)!;
    spawnSync(process.execPath, [BIN, ...writer.args], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const m = measure(c.args);
  const f = c.file ?? c.reads;
  const fileMB = f === undefined ? undefined : Math.round(statSync(f).size / 2 ** 20);
  process.stdout.write(
    `${JSON.stringify({
      bench: 'memory',
      case: c.name,
      command: `turnwise ${c.args.join(' ')}`,
      episodes: c.episodes,
      exit: m.exit,
      maxRssMB: m.maxRssMB,
      limitMB: c.limitMB,
      withinLimit: m.maxRssMB <= c.limitMB,
      seconds: m.seconds,
      cpuSeconds: Math.round(m.cpuSeconds * 100) / 100,
      usPerEpisode: Math.round((m.seconds / c.episodes) * 1e7) / 10,
      cpuUsPerEpisode: Math.round((m.cpuSeconds / c.episodes) * 1e7) / 10,
      ...(fileMB === undefined ? {} : { fileMB }),
    })}\n`,
  );
  // A file no later case reads is deleted at once (unless --dir keeps it).
  const later = chosen.slice(chosen.indexOf(c) + 1).some((x) => x.reads === c.file);
  if (c.file !== undefined && values.dir === undefined && !later) rmSync(c.file, { force: true });
}
if (values.dir === undefined) rmSync(dir, { recursive: true, force: true });
