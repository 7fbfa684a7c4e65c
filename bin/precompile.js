// The CLI's precompiled copy of src/: every src/X.ts transpiled by esbuild to dist/X.js, every other
// file of src/ copied to dist/X as it is. dist/ mirrors src/ at the same depth, so a path a module builds
// from its own location (`new URL('../../bin/turnwise.js', import.meta.url)`) reaches the same file from
// either tree. Relative specifiers `./x.ts` become `./x.js` (imports, dynamic imports and the
// `new URL('./worker.ts', import.meta.url)` that name worker modules).
//
// Why: loading tsx and transpiling on every start cost ~0.6 s of a light command's ~0.7 s (docs/cli.md).
// `npm ci` builds the copy (the `prepare` script); bin/turnwise.js checks it against src/ on every start
// (one stat per file, ~2 ms) and rebuilds the files that changed, so an edited source is never run stale.
// A rebuild writes each file through a temporary name and a rename and the manifest last, so two CLIs
// starting at once both see either the old copy or a whole new one.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Bumped when the transform below changes, so that every file is rebuilt once. */
const VERSION = 6;
/**
 * Packages loaded as one bundled file each (dist/vendor/NAME.js) instead of their own many files: zod's
 * ESM build is ~95 modules, ~70 ms of every command's start-up; bundled, ~30 ms. The bundle is the
 * package's own code, rebuilt when its installed version or the members src/ uses change. Only packages
 * imported by their bare name alone belong here (a second entry point would be a second copy of the
 * package's classes).
 */
const VENDOR = ['zod'];

/**
 * The members of NAME that src/ uses: `z.MEMBER` for zod's namespace `z` and the names imported beside it
 * (`import { z, X } from 'zod'`). The bundle holds these and what they need, so that esbuild drops the
 * rest: zod's namespace object alone keeps all of it (its ~40 locales and more, 586 KB against 152 KB,
 * ~35 ms of CPU at every start). Type-only names are kept out by the package's own list of exports.
 */
async function usedMembers(src, files, name) {
  const exported = new Set(Object.keys(await import(name)));
  const used = new Set();
  const named = new RegExp(`import\\s*\\{([^}]*)\\}\\s*from\\s*'${name}'`, 'g');
  for (const rel of files) {
    if (!rel.endsWith('.ts')) continue;
    const text = readFileSync(join(src, rel), 'utf8');
    for (const m of text.matchAll(/\bz\.([A-Za-z_$][\w$]*)/g)) used.add(m[1]);
    for (const m of text.matchAll(named))
      for (const spec of m[1].split(',')) {
        const id = spec.trim().split(/\s+as\s+/)[0];
        if (id !== '' && !id.startsWith('type ')) used.add(id);
      }
  }
  return [...used].filter((m) => exported.has(m) && m !== 'z').sort();
}

/** The bundle's entry: each member imported by name (what lets esbuild shake the rest), exported by
 * name and as the members of `z`. */
function vendorEntry(name, members) {
  const local = members.map((m, i) => [m, `m${i}`]);
  return [
    `import { ${local.map(([m, l]) => `${m} as ${l}`).join(', ')} } from '${name}';`,
    `export const z = { ${local.map(([m, l]) => `${JSON.stringify(m)}: ${l}`).join(', ')} };`,
    `export { ${local.map(([m, l]) => `${l} as ${m}`).join(', ')} };`,
  ].join('\n');
}

/** Every file of src/ with its size and modification time: what the copy was made from. (A walk of
 * dirents, not readdirSync's recursive mode and a join per file: this runs at every start.) */
function sources(src) {
  const files = {};
  const dirs = [''];
  while (dirs.length > 0) {
    const dir = dirs.pop();
    for (const d of readdirSync(dir === '' ? src : `${src}/${dir}`, { withFileTypes: true })) {
      const rel = dir === '' ? d.name : `${dir}/${d.name}`;
      if (d.isDirectory()) dirs.push(rel);
      else {
        const st = statSync(`${src}/${rel}`);
        if (st.isFile()) files[rel] = [st.size, st.mtimeMs];
      }
    }
  }
  return Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function readManifest(path) {
  try {
    const m = JSON.parse(readFileSync(path, 'utf8'));
    return m.version === VERSION ? m : { files: {}, vendor: {} };
  } catch {
    return { files: {}, vendor: {} };
  }
}

const output = (rel) => rel.replace(/\.ts$/, '.js');
const installed = (root, name) =>
  JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;
const same = (a, b) => a !== undefined && b !== undefined && a[0] === b[0] && a[1] === b[1];

/** `./x.ts` and `../y/z.ts` as quoted in esbuild's output: relative specifiers only, never packages. */
const RELATIVE_TS = /(["'])(\.\.?\/[^"'\n]*?)\.ts\1/g;
/** `from "zod"`, `import "zod"`, `import("zod")` in esbuild's output, for each vendored package. */
const vendorImport = (name) => new RegExp(`(\\bfrom\\s*|\\bimport\\s*\\(?\\s*)"${name}"`, 'g');

/** The specifier of dist/vendor/NAME.js from dist/REL. */
function vendorPath(rel, name) {
  const up = rel.split('/').length - 1;
  return `${up === 0 ? './' : '../'.repeat(up)}vendor/${name}.js`;
}

function writeAtomic(path, data) {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

/**
 * Brings ROOT/dist/ up to date with ROOT/src/; returns what it did. Does nothing (and loads nothing) when
 * the copy is current. Throws when it cannot write dist/ or esbuild is missing: the caller runs the
 * sources through tsx instead.
 */
export async function precompile(root = ROOT) {
  const SRC = join(root, 'src');
  const DIST = join(root, 'dist');
  const MANIFEST = join(DIST, '.manifest.json');
  const now = sources(SRC);
  const manifest = readManifest(MANIFEST);
  const before = manifest.files;
  const changed = Object.keys(now).filter((rel) => !same(now[rel], before[rel]));
  const removed = Object.keys(before).filter((rel) => now[rel] === undefined);
  const versions = Object.fromEntries(VENDOR.map((name) => [name, installed(root, name)]));
  const outdated = VENDOR.filter((name) => manifest.vendor?.[name]?.version !== versions[name]);
  if (changed.length === 0 && removed.length === 0 && outdated.length === 0)
    return { compiled: 0, removed: 0 };
  const vendor = {};
  for (const name of VENDOR)
    vendor[name] = { version: versions[name], members: await usedMembers(SRC, Object.keys(now), name) };
  const stale = VENDOR.filter(
    (name) => JSON.stringify(manifest.vendor?.[name]) !== JSON.stringify(vendor[name]),
  );
  const { buildSync, transformSync } = await import('esbuild');
  for (const name of stale) {
    const { outputFiles } = buildSync({
      stdin: { contents: vendorEntry(name, vendor[name].members), resolveDir: root },
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      write: false,
      minifyWhitespace: true,
      minifySyntax: true,
    });
    writeAtomic(join(DIST, 'vendor', `${name}.js`), outputFiles[0].contents);
  }
  for (const rel of changed) {
    const text = readFileSync(join(SRC, rel));
    if (!rel.endsWith('.ts')) {
      writeAtomic(join(DIST, rel), text);
      continue;
    }
    // Whitespace and syntax minified (less to read and parse at every start); names kept, so messages
    // and stacks name what the sources name. The source map is a file beside, read only when source maps
    // are on (TURNWISE_DEBUG=1: stacks point into src/).
    const { code, map } = transformSync(text.toString('utf8'), {
      loader: 'ts',
      format: 'esm',
      target: 'node20',
      sourcefile: join(SRC, rel),
      sourcemap: 'external',
      minifyWhitespace: true,
      minifySyntax: true,
    });
    let js = code.replace(RELATIVE_TS, '$1$2.js$1');
    for (const name of VENDOR) js = js.replace(vendorImport(name), `$1"${vendorPath(rel, name)}"`);
    const out = join(DIST, output(rel));
    writeAtomic(`${out}.map`, map);
    writeAtomic(out, `${js}//# sourceMappingURL=${basename(out)}.map\n`);
  }
  for (const rel of removed) {
    rmSync(join(DIST, output(rel)), { force: true });
    rmSync(join(DIST, `${output(rel)}.map`), { force: true });
  }
  writeAtomic(MANIFEST, JSON.stringify({ version: VERSION, files: now, vendor }));
  return { compiled: changed.length, removed: removed.length };
}

// `node bin/precompile.js` (npm's prepare script, and the test script before the suite): build now.
if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { compiled, removed } = await precompile();
  process.stderr.write(`turnwise: precompiled ${compiled} file(s) of src/ into dist/ (${removed} removed)\n`);
}
