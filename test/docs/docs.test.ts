// The docs cannot rot: every command README.md and docs/*.md show is run, and the output they show is
// compared with the real output.
//
// Commands. In a fenced block with no language (or sh, console, shell, bash), a line starting `$ ` is
// a command (a line ending in ` \` continues it); the lines after it, up to the next `$ ` line or the
// block's end, are its shown output. A line of such a block that looks like a command (turnwise, npx,
// npm, node, curl) but is no `$ ` command fails the test, unless the block is marked (below).
//
// Running. The commands of a page run in order, through /bin/sh, in a fresh temporary directory of
// the page's own (nothing is written into the repository; node_modules, examples/ and test/fixtures/
// are linked in, as in a checkout, so `npx tsx examples/…` and `python3 test/fixtures/…` run), with
// stderr merged into stdout in the order written (what a terminal shows), NO_COLOR=1, no OPENAI_*
// variables, and `turnwise` on PATH (a shim running this checkout's bin/turnwise.js, what `npm link`
// gives a reader). Each command must exit 0; a page
// shows a refusal as `$ turnwise … ; echo "exit $?"`, so its exit code is part of its output.
// A command ending in ` &` is a server: it is started, and once it has written its "listening on"
// line (an event, never a sleep) and as many lines as the page shows (serve --json: its JSON line),
// those are its output; it is stopped
// with SIGTERM at the end of the page, or by `$ kill %N` (the page's N-th server, as a reader's shell
// numbers its jobs), and must then exit 0.
//
// Shown output is compared exactly, after these normalisations only:
//   - trailing spaces of each line, and trailing blank lines, are ignored (Markdown editors strip them);
//   - wall-clock seconds match any value: `in 12.6 s` (train, demo, tokenizer), `(rollouts 0.2 s)`
//     (tokenizer train), the study's `time: 436.3 s` and
//     `(per run: 93, 92 s)`;
//   - the page's temporary directory in real output is written `…` (`wrote …/runs/h1/run.sqlite`);
//   - ports: each `--port N` of a page (N > 0) is served on a free port chosen here, replaced in the
//     page's commands (`--port N`, `:N`) and written back as N in real output (`:P`, `port P`, `"port":P`);
//   - a shown output whose last line is `…` is the head of the output: its other lines must be the
//     first lines of the real output (the page says so to the reader).
//
// Markers, an HTML comment on the line before a block:
//   <!-- docs-test: heavy SCRIPT — reason -->  too heavy for the suite (the 7-minute study behind
//     `npm start`, long training runs): each command must appear verbatim in SCRIPT, the script that
//     runs it (there `turnwise` may be written `node bin/turnwise.js`, and a trailing ` 2>/dev/null`
//     left out). TURNWISE_DOCS_HEAVY=1 runs and compares them here too (=SCRIPT: those of SCRIPT).
//   <!-- docs-test: output varies — reason -->  run, and must exit 0, but its output (timings of a
//     benchmark) cannot be compared: the block shows no output, so no stale figure poses as real.
//   <!-- docs-test: chromium — reason -->  run as any block where Debian's chromium is on PATH (or CI is
//     set: required there, as the browser tests are, test/ui/chromium.ts); skipped with the notice else.
//   <!-- docs-test: not run — reason -->  illustrative only (a GPU model server, a hosted key).
//
// Links: a relative link of any page to a file, folder or heading anchor that does not exist fails;
// so does a reference to a file outside the repository.
//
// TURNWISE_DOCS_PAGES=docs/sql.md,README.md runs the commands of those pages only.
// TURNWISE_DOCS_UPDATE=1 writes the real output of every mismatching command into its page (heads
// stay heads): for refreshing pages after a change of output, never in `npm test`.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { skipFor } from '../ui/chromium.ts';
import { type Command, type Page, parsePage } from './pages.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
/** '1': run every heavy command too; a script's path: those it runs. */
const HEAVY = process.env.TURNWISE_DOCS_HEAVY;
const UPDATE = process.env.TURNWISE_DOCS_UPDATE === '1';
/** Why blocks marked `chromium` are skipped here, or false where they run. */
const NO_CHROMIUM = skipFor("the docs'");
const ONLY = process.env.TURNWISE_DOCS_PAGES?.split(',');
const README_MAX_LINES = 250;
/** How many lines TURNWISE_DOCS_UPDATE writes into a head (…) that shows none yet. */
const HEAD_LINES = 12;

const pageNames = [
  'README.md',
  ...readdirSync(join(REPO, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
];
const pages = pageNames.map((name) => parsePage(name, readFileSync(join(REPO, name), 'utf8')));

const scratch = mkdtempSync(join(tmpdir(), 'turnwise-docs-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const shimDir = join(scratch, 'bin');
mkdirSync(shimDir);
writeFileSync(join(shimDir, 'turnwise'), `#!/bin/sh\nexec node ${join(REPO, 'bin/turnwise.js')} "$@"\n`);
chmodSync(join(shimDir, 'turnwise'), 0o755);
const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', PATH: `${shimDir}:${process.env.PATH}` };
for (const k of Object.keys(env)) if (k.startsWith('OPENAI_') || k === 'FORCE_COLOR') delete env[k];

/** A fresh working directory for one page, laid out as a checkout's root for what commands read. */
function workdir(page: string): string {
  const dir = mkdtempSync(join(scratch, `${page.replace(/\W/g, '-')}-`));
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  symlinkSync(join(REPO, 'examples'), join(dir, 'examples'));
  mkdirSync(join(dir, 'test'));
  symlinkSync(join(REPO, 'test', 'fixtures'), join(dir, 'test', 'fixtures'));
  return realpathSync(dir);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

/** Real output in the page's terms: its directory as `…`, the free ports as the page's. */
function asShown(out: string, dir: string, ports: Map<number, number>): string {
  let s = out.split(dir).join('…');
  for (const [shown, real] of ports)
    s = s.replace(new RegExp(`(?<=:|port |"port":)${real}\\b`, 'g'), String(shown));
  return s;
}

/** Lines compared: trailing spaces and blank lines dropped, wall-clock seconds made equal. */
function comparable(lines: readonly string[]): string[] {
  const out = lines.map((l) =>
    l
      .trimEnd()
      .replace(/\b(in|time:|rollouts) \d+(\.\d+)? s\b/g, '$1 ‹s› s')
      .replace(/\(per run: [\d, ]+ s\)/g, '(per run: ‹s› s)'),
  );
  while (out.length > 0 && out.at(-1) === '') out.pop();
  return out;
}

interface Ran {
  code: number | null;
  out: string;
}

function run(cmd: string, cwd: string): Promise<Ran> {
  return new Promise((done, fail) => {
    const child = spawn('/bin/sh', ['-c', `exec 2>&1\n${cmd}`], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => chunks.push(d));
    child.on('error', fail);
    child.on('close', (code) => done({ code, out: Buffer.concat(chunks).toString('utf8') }));
  });
}

/** A server (`… &`), once it has written its "listening on" line and at least `lines` lines: its
 * output up to there. */
function start(cmd: string, cwd: string, lines: number): Promise<{ child: ChildProcess; out: string }> {
  return new Promise((ready, fail) => {
    const child = spawn('/bin/sh', ['-c', `exec 2>&1\nexec ${cmd}`], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const done = out.split('\n').slice(0, -1);
      const at = done.findIndex((l) => l.includes('listening on '));
      if (at >= 0 && done.length >= lines)
        ready({ child, out: `${done.slice(0, Math.max(at + 1, lines)).join('\n')}\n` });
    });
    child.on('close', (code) => fail(new Error(`exited (${code}) before listening:\n${out}`)));
  });
}

/** SIGTERM, then the exit code (a server that already exited: its code). */
function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((r) => {
    if (child.exitCode !== null || child.signalCode !== null) return r(child.exitCode);
    child.removeAllListeners('close');
    child.on('close', (code) => r(code));
    child.kill('SIGTERM');
  });
}

/** The command as its script writes it: verbatim, or with `node bin/turnwise.js`, without ` 2>/dev/null`. */
function inScript(cmd: Command, script: string): boolean {
  const bare = cmd.text.replace(/ 2>\/dev\/null$/, '');
  const forms = [cmd.text, bare, bare.replace(/^turnwise /, 'node bin/turnwise.js ')];
  return forms.some((f) => script.includes(f));
}

/** A page's command with its ports replaced by the free ones chosen for them. */
function withPorts(text: string, ports: Map<number, number>): string {
  for (const [shown, real] of ports)
    text = text.replace(new RegExp(`(?<=--port |:)${shown}\\b`, 'g'), String(real));
  return text;
}

/** start() on the page's ports. The ports are chosen when the page starts and a server may start
 * minutes later: when another test file took one meanwhile (the server's own refusal says
 * EADDRINUSE), the command's ports are chosen again (later commands read the same map) and it starts
 * again, a few times at most. */
async function startOnPorts(
  cmd: string,
  ports: Map<number, number>,
  cwd: string,
  lines: number,
): Promise<{ child: ChildProcess; out: string }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(withPorts(cmd, ports), cwd, lines);
    } catch (e) {
      if (attempt === 5 || !(e as Error).message.includes('EADDRINUSE')) throw e;
      for (const m of cmd.matchAll(/--port (\d+)/g))
        if (ports.has(Number(m[1]))) ports.set(Number(m[1]), await freePort());
    }
  }
}

async function runPage(t: import('node:test').TestContext, page: Page) {
  const dir = workdir(page.name);
  const ports = new Map<number, number>();
  for (const c of page.commands)
    for (const m of c.text.matchAll(/--port (\d+)/g))
      if (Number(m[1]) > 0 && !ports.has(Number(m[1]))) ports.set(Number(m[1]), await freePort());
  const servers: { cmd: Command; child: ChildProcess }[] = [];
  const updates: { cmd: Command; lines: string[] }[] = [];
  for (const cmd of page.commands) {
    const label = `${page.name}:${cmd.line} $ ${cmd.text.split('\n')[0]}`;
    if (cmd.marker.kind === 'not run') continue;
    if (cmd.marker.kind === 'chromium' && NO_CHROMIUM !== false) {
      await t.test(label, { skip: NO_CHROMIUM }, () => {});
      continue;
    }
    if (cmd.marker.kind === 'heavy') {
      const { script } = cmd.marker;
      const file = join(REPO, script);
      await t.test(`${label} (in ${script})`, () => {
        assert.ok(existsSync(file), `${label}: the heavy marker names ${script}, which does not exist`);
        assert.ok(inScript(cmd, readFileSync(file, 'utf8')), `${label}: not found verbatim in ${script}`);
      });
      if (HEAVY !== '1' && HEAVY !== script) continue;
    }
    await t.test(label, async () => {
      const text = withPorts(cmd.text, ports);
      let out: string;
      const job = /^kill %(\d+)$/.exec(text);
      if (cmd.background) {
        const server = await startOnPorts(
          cmd.text,
          ports,
          dir,
          comparable(page.lines.slice(cmd.outStart, cmd.outEnd)).length,
        );
        servers.push({ cmd, child: server.child });
        out = server.out;
      } else if (job) {
        const server = servers[Number(job[1]) - 1];
        assert.ok(server !== undefined, `${label}: the page has no job %${job[1]}`);
        assert.equal(await stop(server.child), 0, `${label}: the server did not stop cleanly`);
        out = '';
      } else {
        const ran = await run(text, dir);
        assert.equal(ran.code, 0, `${label}: exit ${ran.code}\n${ran.out}`);
        out = ran.out;
      }
      const real = asShown(out, dir, ports).split('\n');
      const shown = page.lines.slice(cmd.outStart, cmd.outEnd);
      if (cmd.marker.kind === 'output varies') {
        assert.deepEqual(comparable(shown), [], `${label}: its output varies, so the page shows none`);
        return;
      }
      const head = comparable(shown).at(-1) === '…';
      const want = comparable(head ? comparable(shown).slice(0, -1) : shown);
      assert.ok(UPDATE || !head || want.length > 0, `${label}: a head (…) of no lines: show some, or no …`);
      const got = comparable(head ? real.slice(0, want.length) : real);
      if (UPDATE && got.join('\n') !== want.join('\n')) {
        let trailing = shown.length;
        while (trailing > 0 && shown[trailing - 1].trim() === '') trailing--;
        const lines = real.map((l) => l.trimEnd());
        while (lines.length > 0 && lines.at(-1) === '') lines.pop();
        lines.splice(head ? want.length || HEAD_LINES : lines.length);
        updates.push({ cmd, lines: [...lines, ...(head ? ['…'] : []), ...shown.slice(trailing)] });
        return;
      }
      assert.equal(got.join('\n'), want.join('\n'), `${label}: shown output differs from the real output`);
      if (head) assert.ok(comparable(real).length > want.length, `${label}: shown as a head, but it is all`);
    });
  }
  for (const { cmd, child } of servers)
    await t.test(`${page.name}:${cmd.line} stops cleanly on SIGTERM`, async () => {
      assert.equal(await stop(child), 0);
    });
  if (updates.length > 0) {
    const lines = [...page.lines];
    for (const { cmd, lines: real } of updates.reverse())
      lines.splice(cmd.outStart, cmd.outEnd - cmd.outStart, ...real);
    writeFileSync(join(REPO, page.name), lines.join('\n'));
  }
}

for (const page of pages) {
  test(`${page.name}: every command runs, and shows its real output`, async (t) => {
    assert.deepEqual(
      page.unrun.map((u) => `${page.name}:${u.line} ${u.text}`),
      [],
      'shown as a command but not run: write it as `$ …`, or mark the block',
    );
    for (const c of page.commands)
      assert.ok(
        !c.text.startsWith('npx turnwise'),
        `${page.name}:${c.line}: write \`turnwise …\` (npm link)`,
      );
    if (ONLY === undefined || ONLY.includes(page.name)) await runPage(t, page);
  });
}

test('links: every relative link reaches a file, folder or heading in the repository', () => {
  const broken: string[] = [];
  for (const page of pages)
    for (const [line, target] of page.links) {
      const [path, anchor] = target.split('#');
      const file = path === '' ? join(REPO, page.name) : resolve(dirname(join(REPO, page.name)), path);
      const rel = relative(REPO, file);
      const where = `${page.name}:${line} ${target}`;
      if (rel.startsWith('..')) broken.push(`${where}: outside the repository`);
      else if (!existsSync(file)) {
        broken.push(`${where}: no such file`);
      } else if (anchor !== undefined) {
        const other = pages.find((p) => p.name === rel);
        if (other === undefined) broken.push(`${where}: an anchor into a page the test does not read`);
        else if (!other.anchors.has(anchor)) broken.push(`${where}: no heading with that anchor`);
      }
    }
  assert.deepEqual(broken, []);
});

test('no page refers to a file outside the repository (the shared folder, DESIGN/METHODS/STYLE.md)', () => {
  const outside = /\.\.\/shared|DESIGN\.md|METHODS\.md|STYLE\.md|shared folder/;
  const found = pages.flatMap((p) =>
    p.lines.flatMap((l, i) => (outside.test(l) ? [`${p.name}:${i + 1} ${l.trim()}`] : [])),
  );
  assert.deepEqual(found, []);
});

test('README.md is a front door: at most 250 lines, and the two ways in', () => {
  const readme = pages[0];
  const lines = readme.lines.at(-1) === '' ? readme.lines.length - 1 : readme.lines.length;
  assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines`);
  const text = readme.lines.join('\n');
  assert.ok(text.includes('npm ci && npm start'), 'npm ci && npm start');
  assert.ok(text.includes('npm ci && npm test'), 'npm ci && npm test');
});
