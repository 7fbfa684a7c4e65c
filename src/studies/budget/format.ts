// Numbers as the budget study prints them, in the terminal summary, the report and the findings' notes:
// fixed decimals (report/html formatNumber), n/a for a missing one, a sign where a difference is meant;
// and, for what a verdict tested, as many decimals as it takes to show what the test saw.
import { formatNumber } from '../../report/html.ts';
import type { Interval } from './figures.ts';

type Maybe = number | null | undefined;

/** x with `digits` decimals; n/a when missing or not finite. */
export const num = (x: Maybe, digits = 3): string => formatNumber(x, digits);

/** The same with a sign when positive: +0.012, -0.003, 0.000. */
export const signed = (x: Maybe, digits = 3): string => formatNumber(x, digits, { signed: true });

/** An interval: [lo, hi]. */
export const interval = (c: Interval, digits = 3, sign = false): string =>
  `[${(sign ? signed : num)(c[0], digits)}, ${(sign ? signed : num)(c[1], digits)}]`;

/** A value with its interval: value [lo, hi]. */
export const withInterval = (value: Maybe, c: Interval, digits = 3, sign = false): string =>
  `${(sign ? signed : num)(value, digits)} ${interval(c, digits, sign)}`;

/** toFixed's limit. */
const MAX_DIGITS = 100;

/**
 * The decimals that show what a test against `threshold` saw: at least `min`, and as many more as it
 * takes for every finite number of `xs` to print on the same side of the threshold as the number itself
 * (an interval above 0 never prints its lower end as 0.000; one below ½ never ends at 0.500), and for
 * none that is not 0 to print as 0. Missing numbers decide nothing.
 */
export function decisiveDigits(xs: readonly Maybe[], threshold: number, min = 3): number {
  const shows = (x: Maybe, d: number): boolean => {
    if (x === null || x === undefined || !Number.isFinite(x)) return true;
    const printed = Number(x.toFixed(d));
    return Math.sign(printed - threshold) === Math.sign(x - threshold) && (printed !== 0 || x === 0);
  };
  let d = min;
  while (d < MAX_DIGITS && !xs.every((x) => shows(x, d))) d++;
  return d;
}
