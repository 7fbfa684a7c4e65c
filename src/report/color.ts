// Colours that survive colour-vision deficiency and black-and-white print.
// Series: Okabe & Ito (2008), "Color Universal Design". Sequential: viridis (van der Walt & Smith,
// matplotlib), perceptually uniform and monotone in lightness. Diverging: ColorBrewer RdBu (Brewer),
// whose two arms have matching lightness, so +x and −x look equally strong.

/**
 * Okabe–Ito without its black: black vanishes on a dark-mode page, and the seven others stay
 * distinguishable for deuteranopes, protanopes and tritanopes. Ordered so the first two (the usual
 * base vs RL pair) are the most distinct: blue and vermillion.
 */
export const OKABE_ITO: readonly string[] = [
  '#0072B2', // blue
  '#D55E00', // vermillion
  '#009E73', // bluish green
  '#CC79A7', // reddish purple
  '#E69F00', // orange
  '#56B4E9', // sky blue
  '#F0E442', // yellow
];

/**
 * On a white page (light mode, print) the three lightest Okabe–Ito colours have a contrast below
 * WCAG's 3:1 for graphics (orange 2.3, sky blue 2.3, yellow 1.3): a thin line in them is hard to
 * see. The page's CSS swaps them there for darker shades of the same hue (3.8–3.9:1 on white);
 * dark mode keeps the originals, which stand out on the dark page (8–14:1). A chart saved as a
 * standalone SVG keeps the originals.
 */
export const ON_WHITE: Readonly<Record<string, string>> = {
  '#E69F00': '#B07800',
  '#56B4E9': '#3388C4',
  '#F0E442': '#8F8500',
};

/** The colour of the i-th series (cycles after seven). */
export function seriesColor(i: number): string {
  const n = OKABE_ITO.length;
  return OKABE_ITO[((Math.trunc(i) % n) + n) % n];
}

/** viridis sampled at 0, 1/8, …, 1. */
export const VIRIDIS: readonly string[] = [
  '#440154',
  '#472d7b',
  '#3b528b',
  '#2c728e',
  '#21918c',
  '#28ae80',
  '#5ec962',
  '#addc30',
  '#fde725',
];

/** ColorBrewer RdBu (11 classes), from the negative end (dark red) to the positive end (dark blue). */
export const RDBU: readonly string[] = [
  '#67001f',
  '#b2182b',
  '#d6604d',
  '#f4a582',
  '#fddbc7',
  '#f7f7f7',
  '#d1e5f0',
  '#92c5de',
  '#4393c3',
  '#2166ac',
  '#053061',
];

/** The colour of 0 on the diverging scale. */
export const DIVERGING_NEUTRAL = RDBU[5];

export function parseHex(hex: string): [number, number, number] {
  const h = hex.replace('#', '');
  return [0, 2, 4].map((i) => Number.parseInt(h.slice(i, i + 2), 16)) as [number, number, number];
}

function toHex(rgb: readonly number[]): string {
  return `#${rgb
    .map((c) =>
      Math.round(Math.min(255, Math.max(0, c)))
        .toString(16)
        .padStart(2, '0'),
    )
    .join('')}`;
}

/** Piecewise-linear interpolation through evenly spaced anchors; t is clamped to [0, 1]. */
export function interpolate(anchors: readonly string[], t: number): string {
  const u = Number.isFinite(t) ? Math.min(1, Math.max(0, t)) : 0;
  const pos = u * (anchors.length - 1);
  const i = Math.min(anchors.length - 2, Math.floor(pos));
  const f = pos - i;
  // Exactly on an anchor: return it unchanged, so 0 on the diverging scale is exactly the neutral.
  if (f === 0) return anchors[i].toLowerCase();
  if (f === 1) return anchors[i + 1].toLowerCase();
  const a = parseHex(anchors[i]);
  const b = parseHex(anchors[i + 1]);
  return toHex(a.map((c, k) => c + (b[k] - c) * f));
}

/** Sequential colour for t in [0, 1] (probabilities): dark purple at 0, yellow at 1. */
export function sequential(t: number): string {
  return interpolate(VIRIDIS, t);
}

/**
 * Diverging colour for a difference v on the symmetric domain [−limit, limit]: the neutral
 * near-white at 0, red for negative, blue for positive, clamped beyond ±limit.
 */
export function diverging(v: number, limit: number): string {
  const m = Number.isFinite(limit) && limit > 0 ? limit : 1;
  const r = Number.isFinite(v) ? Math.min(1, Math.max(-1, v / m)) : 0;
  return interpolate(RDBU, 0.5 + 0.5 * r);
}

/** WCAG relative luminance of an sRGB hex colour, in [0, 1]. */
export function relativeLuminance(hex: string): number {
  const [r, g, b] = parseHex(hex).map((c) => {
    const s = c / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/**
 * Black or white, whichever contrasts more with the background (the crossover of the WCAG contrast
 * ratios of black and white is at luminance ≈ 0.179).
 */
export function contrastText(background: string): string {
  return relativeLuminance(background) > 0.179 ? '#000000' : '#ffffff';
}
