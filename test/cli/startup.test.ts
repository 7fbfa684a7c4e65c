// The CLI's start-up machinery (docs/cli.md): commands listed without loading their modules, and the
// precompiled copy of src/ in dist/ (bin/precompile.js) that bin/turnwise.js runs and keeps fresh.
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ABOUT } from '../../src/cli/commands/about.ts';
import { COMMANDS } from '../../src/cli/commands/index.ts';
import { program } from '../../src/cli/main.ts';
import { STARTUP_COMMANDS } from '../../src/cli/startup-bench.ts';
import { node } from './run.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(REPO, 'bin', 'turnwise.js');
const tmp = mkdtempSync(join(tmpdir(), 'turnwise-startup-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

const run = (args: string[], env: Record<string, string> = {}) => node(args, { env });

test('--help lists every command as the fully registered program does, without loading them', async () => {
  const full = await program();
  const lazy = await program(['--help']);
  assert.equal(lazy.helpInformation(), full.helpInformation());
  // Each listed term and description is the real command's (ABOUT is their one declaration).
  const names = full.commands.map((c) => c.name());
  assert.deepEqual(names, [...COMMANDS.map((c) => c.name)]);
  const help = full.createHelp();
  for (const c of full.commands) {
    const about = ABOUT[c.name() as keyof typeof ABOUT];
    assert.equal(help.subcommandTerm(c), about.term, c.name());
    assert.equal(c.description(), about.description, c.name());
  }
  // The lazy program registered no command in full: none has an option or a subcommand yet.
  assert.ok(lazy.commands.every((c) => c.options.length === 0 && c.commands.length === 0));
});

test('a command is registered in full alone; `help CMD` registers CMD', async () => {
  const p = await program(['calc', 'compound', '--q', '0.9', '--n', '3']);
  const full = p.commands.filter((c) => c.commands.length > 0 || c.options.length > 0).map((c) => c.name());
  assert.deepEqual(full, ['calc']);
  const h = await program(['help', 'rollout']);
  assert.deepEqual(
    h.commands.filter((c) => c.options.length > 0).map((c) => c.name()),
    ['rollout'],
  );
});

test('bin/turnwise.js prints the same from dist/ as from the sources, for help, a command and a refusal', async () => {
  for (const args of Object.values(STARTUP_COMMANDS)) {
    const compiled = await run([BIN, ...args]);
    const sources = await run([BIN, ...args], { TURNWISE_SOURCE: '1' });
    assert.deepEqual(compiled, sources, args.join(' '));
  }
  const refusal = await run([BIN, ...STARTUP_COMMANDS.refusal!]);
  assert.equal(refusal.code, 2);
  assert.match(refusal.stderr, /^turnwise: --budget: got "x"/);
});

// ── bin/precompile.js on a tree of its own ──────────────────────────────────────────────────────────

interface Precompile {
  precompile(root: string): Promise<{ compiled: number; removed: number }>;
}
const { precompile } = (await import(pathToFileURL(join(REPO, 'bin', 'precompile.js')).href)) as Precompile;

function tree(): string {
  const root = mkdtempSync(join(tmp, 'tree-'));
  mkdirSync(join(root, 'src', 'sub'), { recursive: true });
  symlinkSync(join(REPO, 'node_modules'), join(root, 'node_modules'));
  writeFileSync(
    join(root, 'src', 'a.ts'),
    [
      "import { b } from './sub/b.ts';",
      "import { z } from 'zod';",
      "export const worker = new URL('./sub/w.ts', import.meta.url).pathname;",
      'export const value: number = b + z.number().parse(1);',
      "export const later = async () => (await import('./sub/b.ts')).b;",
    ].join('\n'),
  );
  writeFileSync(join(root, 'src', 'sub', 'b.ts'), 'export const b: number = 41;\n');
  writeFileSync(join(root, 'src', 'sub', 'w.ts'), 'export {};\n');
  writeFileSync(join(root, 'src', 'sub', 'boot.mjs'), 'export const boot = 1;\n');
  return root;
}

/** Imports dist/a.js in a fresh process (the module cache of this one would hide a rebuild). */
async function builtValues(root: string): Promise<unknown> {
  const url = pathToFileURL(join(root, 'dist', 'a.js')).href;
  const r = await run([
    '--input-type=module',
    '-e',
    `const m = await import(${JSON.stringify(url)}); console.log(JSON.stringify([m.value, m.worker, await m.later()]));`,
  ]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('precompile: dist/ mirrors src/ (.ts → .js, specifiers rewritten, other files copied, zod vendored)', async () => {
  const root = tree();
  assert.deepEqual(await precompile(root), { compiled: 4, removed: 0 });
  assert.deepEqual(await builtValues(root), [42, join(root, 'dist', 'sub', 'w.js'), 41]);
  assert.equal(readFileSync(join(root, 'dist', 'sub', 'boot.mjs'), 'utf8'), 'export const boot = 1;\n');
  const a = readFileSync(join(root, 'dist', 'a.js'), 'utf8');
  assert.match(a, /from\s*"\.\/vendor\/zod\.js"/);
  assert.match(a, /\/\/# sourceMappingURL=a\.js\.map\n$/);
  assert.ok(existsSync(join(root, 'dist', 'a.js.map')));
  assert.doesNotMatch(a, /\.ts["']/);
  assert.ok(existsSync(join(root, 'dist', 'vendor', 'zod.js')));
  // Current: nothing to do.
  assert.deepEqual(await precompile(root), { compiled: 0, removed: 0 });
});

test('precompile: an edited source is rebuilt, a removed one removed, and nothing else touched', async () => {
  const root = tree();
  await precompile(root);
  writeFileSync(join(root, 'src', 'sub', 'b.ts'), 'export const b: number = 99;\n');
  const future = new Date(Date.now() + 5000);
  utimesSync(join(root, 'src', 'sub', 'b.ts'), future, future);
  rmSync(join(root, 'src', 'sub', 'boot.mjs'));
  assert.deepEqual(await precompile(root), { compiled: 1, removed: 1 });
  assert.deepEqual(await builtValues(root), [100, join(root, 'dist', 'sub', 'w.js'), 99]);
  assert.equal(existsSync(join(root, 'dist', 'sub', 'boot.mjs')), false);
});

test('precompile: two builds at once of a stale copy leave a whole, current copy', async () => {
  const root = tree();
  const script = `import(${JSON.stringify(pathToFileURL(join(REPO, 'bin', 'precompile.js')).href)}).then((m) => m.precompile(${JSON.stringify(root)}))`;
  const both = await Promise.all([run(['-e', script]), run(['-e', script])]);
  for (const r of both) assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(await builtValues(root), [42, join(root, 'dist', 'sub', 'w.js'), 41]);
  assert.deepEqual(await precompile(root), { compiled: 0, removed: 0 });
});
