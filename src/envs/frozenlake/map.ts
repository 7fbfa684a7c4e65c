// FrozenLake maps: Gymnasium's two built-ins, custom maps, and random valid maps (docs/methods.md §6).
import { InputError } from '../../core/errors.ts';
import { Rng, STREAM } from '../../core/rng.ts';

export const MAPS: Readonly<Record<'4x4' | '8x8', readonly string[]>> = {
  '4x4': ['SFFF', 'FHFH', 'FFFH', 'HFFG'],
  '8x8': ['SFFFFFFF', 'FFFFFFFF', 'FFFHFFFF', 'FFFFFHFF', 'FFFHFFFF', 'FHHFFFHF', 'FHFFHFHF', 'FFFHFFFG'],
};

const CELL = /^[SFHG]+$/;

/** Gymnasium's is_valid: DFS from (0,0) over the four neighbours, never through H, until a G is seen. */
export function isValid(board: readonly string[]): boolean {
  return reachesGoal(board, 0, 0);
}

function reachesGoal(board: readonly string[], r0: number, c0: number): boolean {
  const nrow = board.length;
  const ncol = board[0].length;
  const seen = new Uint8Array(nrow * ncol);
  const frontier: number[] = [r0 * ncol + c0];
  const dirs = [
    [1, 0],
    [0, 1],
    [-1, 0],
    [0, -1],
  ];
  while (frontier.length > 0) {
    const cur = frontier.pop()!;
    if (seen[cur]) continue;
    seen[cur] = 1;
    const r = Math.floor(cur / ncol);
    const c = cur % ncol;
    for (const [dr, dc] of dirs) {
      const rn = r + dr;
      const cn = c + dc;
      if (rn < 0 || rn >= nrow || cn < 0 || cn >= ncol) continue;
      const cell = board[rn][cn];
      if (cell === 'G') return true;
      if (cell !== 'H') frontier.push(rn * ncol + cn);
    }
  }
  return false;
}

/**
 * Parses and validates a map: `4x4`, `8x8`, or rows of S/F/H/G separated by `,` `/` or newlines
 * (e.g. `SFFF,FHFH,FFFH,HFFG`). Refuses ragged rows, unknown letters, a map without S or G, and a
 * map where some S has no path to a G that avoids holes.
 */
export function parseMap(value: string, field = '--map'): string[] {
  if (value === '4x4' || value === '8x8') return [...MAPS[value]];
  const rows = value
    .trim()
    .split(/[,/\n]+/)
    .map((r) => r.trim())
    .filter((r) => r.length > 0);
  return validateDesc(rows, field, value);
}

export function validateDesc(rows: readonly string[], field = 'desc', shown: unknown = rows): string[] {
  const allowed = 'expected 4x4, 8x8 or rows of S/F/H/G such as SFFF,FHFH,FFFH,HFFG';
  if (rows.length === 0) throw new InputError(field, shown, allowed);
  const ncol = rows[0].length;
  for (const row of rows) {
    if (!CELL.test(row)) throw new InputError(field, shown, `${allowed} (row ${JSON.stringify(row)})`);
    if (row.length !== ncol) throw new InputError(field, shown, 'every row must have the same length');
  }
  if (rows.length * ncol < 2) throw new InputError(field, shown, 'a map needs at least two cells');
  let starts = 0;
  let goals = 0;
  for (const row of rows) {
    for (const ch of row) {
      if (ch === 'S') starts++;
      else if (ch === 'G') goals++;
    }
  }
  if (starts === 0) throw new InputError(field, shown, 'a map needs a start cell S');
  if (goals === 0) throw new InputError(field, shown, 'a map needs a goal cell G');
  for (let r = 0; r < rows.length; r++) {
    for (let c = 0; c < ncol; c++) {
      if (rows[r][c] === 'S' && !reachesGoal(rows, r, c)) {
        throw new InputError(
          field,
          shown,
          `no path from S at row ${r}, column ${c} to a G that avoids holes`,
        );
      }
    }
  }
  return [...rows];
}

/** Attempts before giving up on a (size, p) that almost never yields a valid map. */
const MAX_ATTEMPTS = 100_000;

/**
 * Gymnasium's generate_random_map with our RNG: each cell F with probability p else H, S at (0,0),
 * G at the far corner, redrawn until is_valid. The map is a pure function of (size, p, seed).
 */
export function generateRandomMap(size: number, p: number, seed: number): string[] {
  if (!Number.isInteger(size) || size < 2 || size > 64) {
    throw new InputError('--size', size, 'expected an integer from 2 to 64');
  }
  if (!(p > 0 && p <= 1)) throw new InputError('--p', p, 'expected a probability in (0, 1]');
  const rng = Rng.derive(seed, STREAM.map);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const board: string[] = [];
    for (let r = 0; r < size; r++) {
      let row = '';
      for (let c = 0; c < size; c++) row += rng.float() < p ? 'F' : 'H';
      board.push(row);
    }
    board[0] = `S${board[0].slice(1)}`;
    board[size - 1] = `${board[size - 1].slice(0, size - 1)}G`;
    if (isValid(board)) return board;
  }
  throw new InputError('--p', p, `no valid ${size}x${size} map found in ${MAX_ATTEMPTS} draws; raise --p`);
}
