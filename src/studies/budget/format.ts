// Numbers as the budget study prints them, in the terminal summary, the report and the findings' notes:
// fixed decimals (report/html formatNumber), n/a for a missing one, a sign where a difference is meant.
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
