// Output paths checked before any work starts: a run that trains for minutes and then fails to write
// (or spins on a special file system) has lost the user's time. `checkOutput` refuses, in well under a
// second, a path whose parent is missing or not a directory, a path of the wrong kind, an unwritable
// location, the kernel's virtual file systems (/proc, /sys, /dev, where writes are not files), and any
// input of the same command under whatever name (writing it would replace what the command reads).
import { accessSync, constants, existsSync, realpathSync, statSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import { InputError } from '../core/errors.ts';

const SPECIAL = ['/proc', '/sys', '/dev'];

/** The nearest existing ancestor of a path (the path itself when it exists). */
function existingAncestor(path: string): string {
  let p = resolve(path);
  while (!existsSync(p)) {
    const up = dirname(p);
    if (up === p) break;
    p = up;
  }
  return p;
}

/** The inputs of a command, each by its flag and path (undefined: not given). */
export type Inputs = readonly (readonly [field: string, path: string | undefined])[];

/**
 * Refuses an output path that cannot be written: `kind` file (a file written whole or appended) or dir
 * (a directory created with its parents). Directories that do not exist yet are fine when their nearest
 * existing ancestor is a writable directory. An output that is one of `inputs` — the same file, by
 * path, hard link or symbolic link — is refused too.
 */
export function checkOutput(path: string, field: string, kind: 'file' | 'dir', inputs: Inputs = []): void {
  if (path.length === 0) throw new InputError(field, path, 'expected a path');
  const abs = resolve(path);
  const real = existsSync(abs) ? realpathSync(abs) : abs;
  // /dev/null is the one special file a user may mean: "discard it".
  if (kind === 'file' && real === '/dev/null') return;
  refuseInput(path, field, inputs);
  const special = SPECIAL.find((s) => real === s || real.startsWith(s + sep));
  if (special !== undefined) {
    throw new InputError(
      field,
      path,
      `is under ${special}, a virtual file system; give a path on a real disk`,
    );
  }
  if (existsSync(abs)) {
    const st = statSync(abs);
    if (kind === 'dir' && !st.isDirectory())
      throw new InputError(field, path, 'is a file; expected a directory');
    if (kind === 'file' && st.isDirectory())
      throw new InputError(field, path, 'is a directory; expected a file');
  }
  if (kind === 'file') {
    const parent = dirname(abs);
    if (!existsSync(parent))
      throw new InputError(field, path, `its directory ${dirname(path)} does not exist`);
    if (!statSync(parent).isDirectory())
      throw new InputError(field, path, `${parent} is a file, not a directory`);
    writable(existsSync(abs) ? abs : parent, field, path);
    return;
  }
  const anc = existingAncestor(abs);
  if (!statSync(anc).isDirectory()) throw new InputError(field, path, `${anc} is a file, not a directory`);
  writable(anc, field, path);
}

function writable(target: string, field: string, path: string): void {
  try {
    accessSync(target, constants.W_OK);
  } catch {
    throw new InputError(field, path, `${target} is not writable`);
  }
}

/** The device and inode of a path (links followed), or undefined when there is nothing there. */
function identity(path: string): string | undefined {
  try {
    const st = statSync(path, { bigint: true });
    return `${st.dev}:${st.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * Refuses two outputs of one command that are the same file — the same path, or (once it exists) a hard
 * or symbolic link to it: the second writer would replace what the first wrote.
 */
export function checkDistinctOutputs(outputs: Inputs): void {
  const given = outputs.filter((o): o is readonly [string, string] => o[1] !== undefined);
  for (let j = 1; j < given.length; j++) {
    const [field, path] = given[j];
    for (const [other, otherPath] of given.slice(0, j)) {
      const id = identity(path);
      if (resolve(path) !== resolve(otherPath) && (id === undefined || id !== identity(otherPath))) continue;
      const link = resolve(path) === resolve(otherPath) ? '' : ` (${otherPath}, by a link)`;
      throw new InputError(
        field,
        path,
        `is also the file ${other} writes${link}: one would replace the other; give two paths`,
      );
    }
  }
}

/** An output that is an input (same device and inode: the same path, a hard or a symbolic link). */
function refuseInput(path: string, field: string, inputs: Inputs): void {
  const out = identity(path);
  if (out === undefined) return; // nothing there yet: no input can be it
  for (const [inField, inPath] of inputs) {
    if (inPath === undefined || identity(inPath) !== out) continue;
    const same = resolve(inPath) === resolve(path) ? '' : ` (${inPath}, the same file by a link)`;
    throw new InputError(
      field,
      path,
      `is the file ${inField} reads${same}: writing it would replace the input; give another path`,
    );
  }
}
