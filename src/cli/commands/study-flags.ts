// The flags both budget studies read (the table/MLP study, study.ts, and the language study,
// study-language.ts), parsed in one place.
import { InputError } from '../../core/errors.ts';

export interface StudyFlags {
  profile: string;
  out?: string;
  seed?: string;
  set?: string[];
  json?: boolean;
  force?: boolean;
  [flag: string]: unknown;
}

/** `--seeds 0,1,2`: distinct non-negative integers. */
export function parseSeeds(raw: string | undefined): number[] | undefined {
  if (raw === undefined) return undefined;
  const parts = raw.split(',').map((x) => x.trim());
  const seeds = parts.map(Number);
  if (parts.some((x) => !/^\d+$/.test(x)) || new Set(seeds).size !== seeds.length || seeds.length === 0)
    throw new InputError(
      '--seeds',
      raw,
      'expected distinct non-negative integers, comma-separated (e.g. 0,1,2)',
    );
  return seeds;
}

/** `--parallel n`: runs at once, a positive integer. */
export function parseParallel(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new InputError('--parallel', raw, 'expected a positive integer (runs at once)');
  return Number(raw);
}
