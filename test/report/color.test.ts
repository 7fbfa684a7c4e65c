import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  contrastText,
  DIVERGING_NEUTRAL,
  diverging,
  OKABE_ITO,
  ON_WHITE,
  parseHex,
  relativeLuminance,
  sequential,
  seriesColor,
} from '../../src/report/color.ts';

test('diverging scale: 0 is exactly the neutral, ±v are mirror images, beyond ±limit clamps', () => {
  for (const limit of [0.05, 0.3, 1, 7]) assert.equal(diverging(0, limit), DIVERGING_NEUTRAL);
  assert.equal(diverging(Number.NaN, 1), DIVERGING_NEUTRAL);
  assert.equal(diverging(0.5, 0), diverging(0.5, 1), 'a broken limit falls back to 1');
  let prev = relativeLuminance(DIVERGING_NEUTRAL);
  for (let k = 1; k <= 20; k++) {
    const v = (k / 20) * 0.3;
    const pos = diverging(v, 0.3);
    const neg = diverging(-v, 0.3);
    const [lp, ln] = [relativeLuminance(pos), relativeLuminance(neg)];
    // RdBu's arms match in lightness: equal |v| reads as equally strong on either side.
    assert.ok(Math.abs(lp - ln) < 0.06, `|v|=${v}: luminance ${lp} vs ${ln}`);
    // Stronger with |v|, monotonically.
    assert.ok((lp + ln) / 2 < prev, `not darker at ${v}`);
    prev = (lp + ln) / 2;
    const [rp, , bp] = parseHex(pos);
    const [rn, , bn] = parseHex(neg);
    assert.ok(bp > rp, `positive ${pos} should be blue`);
    assert.ok(rn > bn, `negative ${neg} should be red`);
  }
  assert.equal(diverging(5, 0.3), diverging(0.3, 0.3));
  assert.equal(diverging(-5, 0.3), diverging(-0.3, 0.3));
});

test('sequential scale: lightness rises monotonically from 0 to 1, clamped outside', () => {
  let prev = -1;
  for (let k = 0; k <= 100; k++) {
    const l = relativeLuminance(sequential(k / 100));
    assert.ok(l > prev, `not monotone at ${k / 100}`);
    prev = l;
  }
  assert.equal(sequential(0), '#440154');
  assert.equal(sequential(1), '#fde725');
  assert.equal(sequential(-3), sequential(0));
  assert.equal(sequential(Number.NaN), sequential(0));
});

test('palette and text contrast', () => {
  assert.equal(new Set(OKABE_ITO).size, 7);
  assert.ok(!OKABE_ITO.includes('#000000'), 'no black: it disappears in dark mode');
  assert.equal(seriesColor(7), seriesColor(0));
  assert.equal(seriesColor(-1), OKABE_ITO[6]);
  assert.equal(contrastText('#440154'), '#ffffff');
  assert.equal(contrastText('#fde725'), '#000000');
  assert.equal(contrastText(DIVERGING_NEUTRAL), '#000000');
});

test('on a white page every series colour has WCAG 3:1 contrast once ON_WHITE swaps the light three', () => {
  const ratio = (a: string, b: string) => {
    const [x, y] = [relativeLuminance(a), relativeLuminance(b)];
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  };
  const low = OKABE_ITO.filter((c) => ratio(c, '#ffffff') < 3);
  assert.deepEqual(low, Object.keys(ON_WHITE), 'exactly the colours below 3:1 are swapped');
  for (const c of OKABE_ITO) assert.ok(ratio(ON_WHITE[c] ?? c, '#ffffff') >= 3, c);
  // The swaps stay readable under labels drawn in the original's contrast colour (stacked bars).
  for (const [from, to] of Object.entries(ON_WHITE)) assert.ok(ratio(to, contrastText(from)) >= 4.5, from);
});
