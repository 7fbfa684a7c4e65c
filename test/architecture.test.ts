// The architecture as a test: docs/architecture.md's module table ("## Modules (src/)") says which src/
// folders each folder may depend on. This reads every import of src/ and fails on an edge the table does
// not allow, on any import cycle between files, on any import of the env registry (envs/index.ts) outside
// the composition layers, and on a row that names a folder or module src/ does not have (unless the row
// says `planned:` before it).
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DOC = join(ROOT, 'docs', 'architecture.md');
const HEADING = '## Modules (src/)';
const REGISTRY = 'envs/index.ts';
// The envs row's own words for the registry rule; if the table stops saying it, this test must change too.
const REGISTRY_RULE = '`envs/index.ts` is the registry of ids, reached only by composition layers';
// The composition layers: the CLI, the studies, the public barrel (src/index.ts, folder '') and envs/
// itself (the factory). Nothing else names an env id; it is handed an env factory instead.
const COMPOSERS = new Set(['', 'cli', 'studies', 'envs']);

// ---------------------------------------------------------------------------------------------------------
// The table.

interface Row {
  folder: string;
  what: string;
  /** The "depends on" cell as written, for messages. */
  deps: string;
  allowed: Set<string>;
}
type Table = Map<string, Row>;

/** The heading and the markdown table under it, exactly as written. */
function tableSection(markdown: string): string {
  const lines = markdown.split('\n');
  const at = lines.indexOf(HEADING);
  if (at < 0) throw new Error(`no "${HEADING}" heading`);
  let i = at + 1;
  while (lines[i]?.trim() === '') i++;
  const first = i;
  while (lines[i]?.startsWith('|')) i++;
  if (i === first) throw new Error(`no table under "${HEADING}"`);
  return lines.slice(at, i).join('\n');
}

function parseTable(markdown: string): Table {
  const cells = tableSection(markdown)
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .map((l) =>
      l
        .replace(/^\|/, '')
        .replace(/\|$/, '')
        .split('|')
        .map((c) => c.trim()),
    )
    .filter((c) => c[0] !== 'folder' && !c.every((x) => /^:?-+:?$/.test(x)));
  const rows = cells.map((c) => {
    const folder = /^`([a-z][a-z0-9-]*)\/`$/.exec(c[0] ?? '')?.[1];
    if (c.length !== 3 || folder === undefined) throw new Error(`not a table row: | ${c.join(' | ')} |`);
    return { folder, what: c[1]!, deps: c[2]! };
  });
  const folders = rows.map((r) => r.folder);
  const known = (names: string[]) => {
    for (const n of names) if (!folders.includes(n)) throw new Error(`"${n}" is not a folder of the table`);
    return names;
  };
  const list = (s: string) => s.split(',').map((x) => x.trim().replace(/^`|\/?`$/g, ''));
  const table: Table = new Map();
  for (const { folder, what, deps } of rows) {
    let allowed: string[];
    if (deps === 'nothing') allowed = [];
    else if (deps === 'all') allowed = folders;
    else if (deps.startsWith('all but ')) {
      const but = known(list(deps.slice('all but '.length)));
      allowed = folders.filter((f) => !but.includes(f));
    } else allowed = known(list(deps));
    table.set(folder, { folder, what, deps, allowed: new Set(allowed.filter((f) => f !== folder)) });
  }
  return table;
}

// ---------------------------------------------------------------------------------------------------------
// The imports.

interface SourceText {
  /** Repo-relative, with forward slashes: `src/train/learner.ts`. */
  path: string;
  text: string;
}
type Kind = 'import' | 'import type' | 'export from' | 'dynamic import' | 'new URL';
interface Reference {
  line: number;
  specifier: string;
  kind: Kind;
}

const isImportMetaUrl = (e: ts.Expression | undefined) =>
  e !== undefined &&
  ts.isPropertyAccessExpression(e) &&
  e.name.text === 'url' &&
  ts.isMetaProperty(e.expression) &&
  e.expression.keywordToken === ts.SyntaxKind.ImportKeyword;

/**
 * Every module a file names with a string literal: static imports, `import type` (and `import('…').T`
 * types), re-exports, dynamic `import('…')` and `new URL('….ts', import.meta.url)` (how worker modules
 * are named). Read from the syntax tree, so comments and strings that merely look like imports are not
 * counted. A dynamic import of a computed name (rollout/worker-boot.mjs loads `workerData.module`) names
 * no module here; the module it loads is named by whoever builds the pool, with `new URL`.
 *
 * Type-only imports are edges like any other: a module that imports a type from another depends on that
 * module's contract (it stops compiling when the type changes), and the layering is about what a module
 * must know, not about what happens to be loaded at run time; `import type` also turns into a value
 * import by deleting one word, which should not be what stands between the code and the table.
 */
function references(file: SourceText): Reference[] {
  const kind = file.path.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const sf = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true, kind);
  const out: Reference[] = [];
  const add = (node: ts.Node, spec: ts.Node | undefined, k: Kind) => {
    if (spec === undefined || !ts.isStringLiteralLike(spec)) return;
    out.push({
      line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1,
      specifier: spec.text,
      kind: k,
    });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      add(node, node.moduleSpecifier, node.importClause?.isTypeOnly ? 'import type' : 'import');
    } else if (ts.isExportDeclaration(node)) {
      add(node, node.moduleSpecifier, 'export from');
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node, node.argument.literal, 'import type');
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0], 'dynamic import');
    } else if (
      ts.isNewExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'URL' &&
      isImportMetaUrl(node.arguments?.[1])
    ) {
      const spec = node.arguments?.[0];
      if (spec !== undefined && ts.isStringLiteralLike(spec) && /\.(ts|mts|js|mjs)$/.test(spec.text))
        add(node, spec, 'new URL');
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// The check.

interface Edge {
  file: string;
  line: number;
  /** The module reached, relative to src/ (`envs/index.ts`; `../x` when it leaves src/). */
  target: string;
  /** Folders under src/: '' for a file directly in src/ (the barrel), '..' for anything outside src/. */
  from: string;
  to: string;
}
interface Violation extends Edge {
  why: string;
}

const folderOf = (srcPath: string) => {
  if (srcPath.startsWith('../')) return '..';
  const slash = srcPath.indexOf('/');
  return slash < 0 ? '' : srcPath.slice(0, slash);
};

/** The edges between src/ modules; packages and `node:` builtins are outside the table. */
function edges(files: SourceText[]): Edge[] {
  const out: Edge[] = [];
  for (const file of files) {
    const from = folderOf(file.path.slice('src/'.length));
    for (const r of references(file)) {
      if (!r.specifier.startsWith('.')) continue;
      const target = posix.relative('src', posix.join(posix.dirname(file.path), r.specifier));
      out.push({ file: file.path, line: r.line, target, from, to: folderOf(target) });
    }
  }
  return out;
}

function tableViolations(all: Edge[], table: Table): Violation[] {
  const out: Violation[] = [];
  for (const e of all) {
    if (e.from === '' || e.to === e.from) continue; // src/index.ts is the public barrel: it may import anything
    const row = table.get(e.from);
    if (row === undefined) out.push({ ...e, why: `${e.from}/ has no row in the table` });
    else if (!row.allowed.has(e.to)) out.push({ ...e, why: `${e.from} may depend on: ${row.deps}` });
  }
  return out;
}

function registryViolations(all: Edge[]): Violation[] {
  return all
    .filter((e) => e.target === REGISTRY && !COMPOSERS.has(e.from))
    .map((e) => ({ ...e, why: `only cli, studies, src/index.ts and envs reach ${REGISTRY}` }));
}

const format = (v: Violation) => `${v.file}:${v.line} → ${v.target} (${v.why})`;

function assertNone(violations: Violation[], what: string) {
  if (violations.length > 0)
    assert.fail(`${violations.length} import(s) ${what}:\n${violations.map(format).join('\n')}`);
}

/**
 * The import cycles between files: every strongly connected component of more than one file (or a file
 * that imports itself), by Tarjan's algorithm over the edges inside src/. Each is reported as its files,
 * sorted, so a message names the knot to cut.
 */
function cycles(all: Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const e of all) {
    if (e.to === '..') continue;
    const from = e.file.slice('src/'.length);
    if (!next.has(from)) next.set(from, new Set());
    next.get(from)!.add(e.target);
    if (!next.has(e.target)) next.set(e.target, new Set());
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const connect = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || next.get(v)!.has(v)) out.push(component.sort());
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) connect(v);
  return out.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/**
 * What a row names that src/ does not have: its folder, and each module named in backticks in its "what
 * lives there" cell (a lowercase name such as `openai` or `frozenlake/`, or a path such as
 * `envs/index.ts`), unless the name comes after `planned:` in that cell. Types and functions in
 * backticks (`Env`, `contextAt`) are not module names. `exists(path)` answers for a path under src/.
 */
function missingNames(t: Table, exists: (srcPath: string) => boolean): string[] {
  const out: string[] = [];
  for (const row of t.values()) {
    const planned = row.what.indexOf('planned:');
    const current = planned < 0 ? row.what : row.what.slice(0, planned);
    if (!exists(row.folder)) {
      if (planned !== 0) out.push(`${row.folder}/: no such folder (say "planned:" first if it is planned)`);
      continue;
    }
    for (const [, name] of current.matchAll(/`([a-z][a-z0-9-]*(?:\/[a-z0-9.-]*)*\/?)`/g)) {
      const path = name!.includes('.ts') ? name! : `${row.folder}/${name!.replace(/\/$/, '')}`;
      if (!exists(path) && !exists(`${path}.ts`))
        out.push(`${row.folder}/: names \`${name}\`, which src/${path}(.ts) is not`);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// The real code.

function sources(): SourceText[] {
  const src = join(ROOT, 'src');
  return readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((p) => /\.(ts|mts|js|mjs)$/.test(p))
    .map((p) => p.split('\\').join('/'))
    .sort()
    .map((p) => ({ path: `src/${p}`, text: readFileSync(join(src, p), 'utf8') }));
}

const table = parseTable(readFileSync(DOC, 'utf8'));
const files = sources();
const srcEdges = edges(files);

test('architecture: every folder of src/ has a row; the envs row states the registry rule', () => {
  const folders = [...new Set(files.map((f) => folderOf(f.path.slice('src/'.length))))].filter(
    (f) => f !== '',
  );
  assert.deepEqual(
    folders.filter((f) => !table.has(f)),
    [],
  );
  assert.deepEqual(
    files.map((f) => f.path).filter((p) => folderOf(p.slice('src/'.length)) === ''),
    ['src/index.ts'],
  );
  assert.ok(table.get('envs')?.what.includes(REGISTRY_RULE));
  // Not vacuous: the scan sees the code's edges (a broken extractor would pass every check below).
  assert.ok(srcEdges.length > 200, `only ${srcEdges.length} edges found`);
  assert.ok(srcEdges.some((e) => e.file === 'src/train/es-train.ts' && e.target === 'train/es-worker.ts'));
});

test("architecture: every import in src/ is an edge docs/architecture.md's table allows", () => {
  assertNone(tableViolations(srcEdges, table), "break docs/architecture.md's dependency table");
});

test('architecture: only the composition layers (cli, studies, src/index.ts, envs) reach envs/index.ts', () => {
  assertNone(registryViolations(srcEdges), `reach ${REGISTRY} from outside the composition layers`);
});

test('architecture: no import cycle between the files of src/', () => {
  const knots = cycles(srcEdges);
  assert.equal(
    knots.length,
    0,
    `${knots.length} import cycle(s):\n${knots.map((c) => c.join(' ⇄ ')).join('\n')}`,
  );
});

test('architecture: every folder and module the table names is in src/, or is marked planned', () => {
  const src = join(ROOT, 'src');
  const exists = (p: string) => existsSync(join(src, p));
  assert.deepEqual(missingNames(table, exists), []);
  // Not vacuous: the rows do name modules, and the planned ones are skipped only after "planned:".
  assert.ok(table.get('policies')?.what.includes('`openai`'));
  assert.ok(statSync(join(src, 'envs', 'frozenlake')).isDirectory());
});

// ---------------------------------------------------------------------------------------------------------
// The checker itself, on files that exist only here: it must be able to fail.

const TINY = [
  '# Design',
  '',
  HEADING,
  '',
  '| folder | what lives there | depends on |',
  '|---|---|---|',
  '| `core/` | types | nothing |',
  '| `envs/` | environments; `envs/index.ts` is the registry | core |',
  '| `train/` | training | core, `envs/` |',
  '| `studies/` | experiments | all but cli |',
  '| `cli/` | commands | all |',
  '',
  'Prose after the table.',
].join('\n');

test('architecture checker: parses nothing, lists, "all" and "all but"', () => {
  const t = parseTable(TINY);
  const allowed = (f: string) => [...(t.get(f)?.allowed ?? [])].sort();
  assert.deepEqual([...t.keys()], ['core', 'envs', 'train', 'studies', 'cli']);
  assert.deepEqual(allowed('core'), []);
  assert.deepEqual(allowed('train'), ['core', 'envs']);
  assert.deepEqual(allowed('studies'), ['core', 'envs', 'train']);
  assert.deepEqual(allowed('cli'), ['core', 'envs', 'studies', 'train']);
  assert.equal(t.get('train')?.deps, 'core, `envs/`');
  assert.throws(
    () => parseTable(TINY.replace('core, `envs/`', 'core, rollout')),
    /"rollout" is not a folder/,
  );
  assert.throws(() => parseTable('# Design\n'), /no "## Modules \(src\/\)" heading/);
});

test('architecture checker: finds every kind of reference, and nothing in comments or strings', () => {
  const text = [
    "import { a } from '../core/a.ts';", // 1
    'import {', // 2
    '  b,',
    '  type C,',
    "} from '../core/b.ts';",
    "import type { D } from '../core/d.ts';", // 6
    "export { e } from './e.ts';", // 7
    "export type * from '../core/f.ts';", // 8
    "import 'node:fs';", // 9
    "// import { x } from '../cli/x.ts';", // 10
    'const s = "import { y } from \'../cli/y.ts\'";', // 11
    "const m = await import('../envs/index.ts');", // 12
    'const n = await import(s);', // 13
    "type G = import('../core/g.ts').G;", // 14
    "const w = new URL('./worker.ts', import.meta.url);", // 15
    "const d = new URL('../../runs/', import.meta.url);", // 16
  ].join('\n');
  assert.deepEqual(references({ path: 'src/train/x.ts', text }), [
    { line: 1, specifier: '../core/a.ts', kind: 'import' },
    { line: 2, specifier: '../core/b.ts', kind: 'import' },
    { line: 6, specifier: '../core/d.ts', kind: 'import type' },
    { line: 7, specifier: './e.ts', kind: 'export from' },
    { line: 8, specifier: '../core/f.ts', kind: 'export from' },
    { line: 9, specifier: 'node:fs', kind: 'import' },
    { line: 12, specifier: '../envs/index.ts', kind: 'dynamic import' },
    { line: 14, specifier: '../core/g.ts', kind: 'import type' },
    { line: 15, specifier: './worker.ts', kind: 'new URL' },
  ]);
});

test('architecture checker: reports exactly the forbidden edge, with its file and line', () => {
  const t = parseTable(TINY);
  const tiny: SourceText[] = [
    { path: 'src/core/types.ts', text: 'export type Task = { id: string };\n' },
    {
      path: 'src/envs/index.ts',
      text: "import type { Task } from '../core/types.ts';\nexport const make = 1;\n",
    },
    {
      path: 'src/train/loop.ts',
      text: "import type { Task } from '../core/types.ts';\n\nimport { make } from '../envs/index.ts';\n",
    },
    {
      path: 'src/core/rng.ts',
      text: "import { loop } from '../train/loop.ts';\nimport type { Task } from './types.ts';\n",
    },
    { path: 'src/studies/s.ts', text: "import { make } from '../envs/index.ts';\n" },
    {
      path: 'src/cli/main.ts',
      text: "import { s } from '../studies/s.ts';\nimport { make } from '../envs/index.ts';\n",
    },
    { path: 'src/index.ts', text: "export * from './cli/main.ts';\n" },
  ];
  const all = edges(tiny);
  assert.deepEqual(tableViolations(all, t), [
    {
      file: 'src/core/rng.ts',
      line: 1,
      target: 'train/loop.ts',
      from: 'core',
      to: 'train',
      why: 'core may depend on: nothing',
    },
  ]);
  assert.deepEqual(registryViolations(all).map(format), [
    'src/train/loop.ts:3 → envs/index.ts (only cli, studies, src/index.ts and envs reach envs/index.ts)',
  ]);
  assert.equal(
    format(tableViolations(all, t)[0]!),
    'src/core/rng.ts:1 → train/loop.ts (core may depend on: nothing)',
  );
  // A folder with no row, and a module outside src/, are violations too.
  const stray = edges([
    { path: 'src/ui/x.ts', text: "import '../core/types.ts';\n" },
    { path: 'src/core/v.ts', text: "import p from '../../package.json';\n" },
  ]);
  assert.deepEqual(tableViolations(stray, t).map(format), [
    'src/ui/x.ts:1 → core/types.ts (ui/ has no row in the table)',
    'src/core/v.ts:1 → ../package.json (core may depend on: nothing)',
  ]);
});

test('architecture checker: finds each import cycle between files, and none in a chain', () => {
  const tiny: SourceText[] = [
    { path: 'src/a/x.ts', text: "import '../a/y.ts';\n" },
    { path: 'src/a/y.ts', text: "import type { Z } from './z.ts';\n" },
    { path: 'src/a/z.ts', text: "import './x.ts';\nimport '../b/w.ts';\n" },
    { path: 'src/b/w.ts', text: "import '../b/v.ts';\n" },
    { path: 'src/b/v.ts', text: 'export const v = 1;\n' },
    { path: 'src/b/s.ts', text: "import './s.ts';\n" },
  ];
  assert.deepEqual(cycles(edges(tiny)), [['a/x.ts', 'a/y.ts', 'a/z.ts'], ['b/s.ts']]);
  assert.deepEqual(cycles(edges(tiny.filter((f) => f.path !== 'src/a/z.ts'))), [['b/s.ts']]);
});

test('architecture checker: a row naming what is not there fails, unless it is planned', () => {
  const t = parseTable(
    TINY.replace(
      '| environments;',
      '| `frozenlake/`, `sql` and `envs/index.ts`; `Env`, `contextAt`;',
    ).replace('| experiments |', '| planned: the studies |'),
  );
  const have = new Set(['core', 'envs', 'envs/frozenlake', 'envs/index.ts', 'train', 'cli']);
  assert.deepEqual(
    missingNames(t, (p) => have.has(p)),
    ['envs/: names `sql`, which src/envs/sql(.ts) is not'],
  );
  have.add('envs/sql.ts');
  assert.deepEqual(
    missingNames(t, (p) => have.has(p)),
    [],
  );
  have.delete('cli');
  assert.deepEqual(
    missingNames(t, (p) => have.has(p)),
    ['cli/: no such folder (say "planned:" first if it is planned)'],
  );
  const later = parseTable(TINY.replace('| types |', '| types; planned: `queue` |'));
  assert.deepEqual(
    missingNames(later, (p) => ['core', 'envs', 'envs/index.ts', 'train', 'studies', 'cli'].includes(p)),
    [],
  );
});
