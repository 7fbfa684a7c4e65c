// Token chips as text. A trace records a text policy's tokens by id; a run whose policy is a turnwise
// transformer saved with its tokenizer (a training run's policy.safetensors holds it in its metadata)
// lets each id be shown as what it stands for: its bytes decoded, a special token by its name, and
// whitespace made visible (· space, ↵ newline, ⇥ tab; other control characters, and the bytes of a
// piece of a character, written \xNN). Reading the policy file needs the policy loaders, which this
// layer does not import: the composition layer hands in `VocabularyOf` (studies/ui-policies.ts).
// Without a tokenizer, chips keep their ids and the answer says why.
import type { Trajectory } from '../core/types.ts';
import type { FoundRun } from './runs.ts';

/** A tokenizer as far as chips need it: each id's special name or bytes (undefined: not in it). */
export interface Vocabulary {
  size: number;
  token(id: number): { special: string } | { bytes: Uint8Array } | undefined;
}

/** The vocabulary of the policy saved in a run directory, and the file it came from; or why there is
 * none, in a few words. */
export type VocabularyOf = (dir: string) => { vocabulary: Vocabulary; from: string } | { reason: string };

/** What a trajectory's chips are labelled with: `labels` by id (the ids its traces hold that the
 * vocabulary has), `special` the ids among them that are special tokens; `from` the file the tokenizer
 * was read from, or null with `reason`. */
export interface TokenText {
  from: string | null;
  reason: string | null;
  labels: Record<string, string>;
  special: number[];
}

const VISIBLE: Record<string, string> = { ' ': '·', '\n': '↵', '\t': '⇥' };
const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const hex = (b: number) => `\\x${b.toString(16).toUpperCase().padStart(2, '0')}`;

/** Text with its whitespace made visible (· space, ↵ newline, ⇥ tab) and other control characters
 * written \xNN. */
export function visible(text: string): string {
  let out = '';
  for (const c of text) {
    const code = c.charCodeAt(0);
    out += code <= 0x20 || code === 0x7f ? (VISIBLE[c] ?? hex(code)) : c;
  }
  return out;
}

/** A token's chip label: its special name, its bytes as UTF-8 (whitespace visible), or — bytes that are
 * not whole UTF-8 (a piece of a character) — each byte of 0x80 and above as \xNN, ASCII as above. */
export function tokenLabel(token: { special: string } | { bytes: Uint8Array }): string {
  if ('special' in token) return token.special;
  try {
    return visible(strict.decode(token.bytes));
  } catch {
    return [...token.bytes].map((b) => (b < 0x80 ? visible(String.fromCharCode(b)) : hex(b))).join('');
  }
}

/** The labels of a trajectory's token chips; null when no turn records tokens. */
export function tokenTextOf(
  run: FoundRun,
  trajectory: Trajectory,
  vocabularyOf: VocabularyOf | undefined,
): TokenText | null {
  const ids = new Set<number>();
  for (const turn of trajectory.turns) for (const id of turn.trace?.tokens ?? []) ids.add(id);
  if (ids.size === 0) return null;
  const none = (reason: string): TokenText => ({ from: null, reason, labels: {}, special: [] });
  if (run.dir === null)
    return none(
      `a ${run.info.kind === 'file' ? 'trajectory file' : 'run of a store file'} records token ids, not the tokenizer`,
    );
  if (vocabularyOf === undefined) return none('this server was started without the policy loaders');
  const found = vocabularyOf(run.dir);
  if ('reason' in found) return none(`the run ${found.reason}`);
  const labels: Record<string, string> = {};
  const special: number[] = [];
  for (const id of [...ids].sort((x, y) => x - y)) {
    const token = found.vocabulary.token(id);
    if (token === undefined) continue;
    labels[id] = tokenLabel(token);
    if ('special' in token) special.push(id);
  }
  return { from: found.from, reason: null, labels, special };
}
