// Whole-file writes that a crash cannot leave half-done: the text goes to a private file in the same
// directory, is synced, and is renamed over the target (rename is atomic on POSIX file systems), so a
// reader sees the old file or the new one, never a prefix of it.
import { closeSync, fsyncSync, openSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';

export function writeFileAtomic(path: string, text: string | Uint8Array): void {
  const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  const fd = openSync(tmp, 'wx');
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    unlinkSync(tmp);
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, path);
}
