// The stylesheet of every report page (report/html.ts inlines it): light and dark palettes, print,
// and the container queries that stack a table too wide for its box (report/table.ts names the width).
import { ON_WHITE } from './color.ts';

const CSS = `
:root{color-scheme:light dark;--bg:#ffffff;--fg:#1b1f24;--muted:#57606a;--rule:#d0d7de;--panel:#f6f8fa;
--link:#0a5ea8;--held-bg:#d8f0e4;--held-fg:#00573a;--not-bg:#fde3d6;--not-fg:#8a2d00;
--part-bg:#fbf0c4;--part-fg:#5c4500;--na-bg:#eaeef2;--na-fg:#57606a}
@media (prefers-color-scheme:dark){:root{--bg:#0f1419;--fg:#e6e9ed;--muted:#9aa5b1;--rule:#343b44;
--panel:#161b22;--link:#7cc4f2;--held-bg:#0d3b29;--held-fg:#8fe3bd;--not-bg:#4a1d08;--not-fg:#ffb892;
--part-bg:#3b3003;--part-fg:#f3e27a;--na-bg:#262c33;--na-fg:#9aa5b1}}
html{background:var(--bg);color:var(--fg)}
body{margin:0 auto;max-width:64rem;padding:2rem 1.25rem 4rem;overflow-wrap:break-word;
font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
h1{font-size:1.85rem;line-height:1.2;margin:0 0 .35rem}
h2{font-size:1.35rem;line-height:1.25;margin:2.5rem 0 .75rem;padding-bottom:.3rem;border-bottom:1px solid var(--rule)}
h3{font-size:1.1rem;margin:1.75rem 0 .5rem}
h4{font-size:1rem;margin:1.25rem 0 .4rem}
p,ul,ol{max-width:46rem}
a{color:var(--link)}
.subtitle{color:var(--muted);margin:0 0 1.5rem;font-size:1.05rem}
figure{margin:1.75rem 0;break-inside:avoid}
figure .chart{overflow-x:auto}
svg{display:block;max-width:100%;height:auto}
svg.turnwise-chart{max-width:none}
figcaption{color:var(--muted);font-size:.92rem;margin-top:.5rem;max-width:46rem}
figcaption strong{color:var(--fg)}
.grid{display:flex;flex-wrap:wrap;gap:1rem 1.5rem;align-items:flex-start}
.grid>div{max-width:100%}
.table-wrap{overflow-x:auto;container-type:inline-size}
table{border-collapse:collapse;margin:1rem 0;font-size:.95rem;font-variant-numeric:tabular-nums}
caption{caption-side:top;text-align:left;color:var(--muted);padding-bottom:.4rem}
th,td{padding:.35rem .75rem;border-bottom:1px solid var(--rule);text-align:left;vertical-align:top}
thead th{border-bottom:2px solid var(--fg);font-weight:600}
.num,.right{text-align:right}
td.num{white-space:nowrap}
td.long{min-width:10em}
.center{text-align:center}
tr.highlight td{background:var(--panel)}
.na{color:var(--muted)}
.badge{display:inline-block;padding:.05rem .55rem;border-radius:999px;font-size:.85em;font-weight:600;
white-space:nowrap;-webkit-print-color-adjust:exact;print-color-adjust:exact}
.badge.held{background:var(--held-bg);color:var(--held-fg)}
.badge.not-held{background:var(--not-bg);color:var(--not-fg)}
.badge.partial{background:var(--part-bg);color:var(--part-fg)}
.badge.na{background:var(--na-bg);color:var(--na-fg)}
dl.kv{display:grid;grid-template-columns:fit-content(40%) minmax(0,1fr);gap:.3rem 1.5rem;margin:1rem 0}
dl.kv>div{display:contents}
dl.kv dt{color:var(--muted)}
dl.kv dd{margin:0;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
details{margin:1rem 0;border:1px solid var(--rule);border-radius:6px;padding:.5rem .75rem;background:var(--panel)}
summary{cursor:pointer;font-weight:600}
pre{overflow:auto;max-height:36rem;margin:.5rem 0 0;
font:.82rem/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
footer{margin-top:3rem;padding-top:.75rem;border-top:1px solid var(--rule);color:var(--muted);font-size:.85rem}
@media print{:root{--bg:#fff;--fg:#000;--muted:#333;--rule:#999;--panel:#f2f2f2;--link:#000;
--held-bg:#d8f0e4;--held-fg:#00573a;--not-bg:#fde3d6;--not-fg:#8a2d00;--part-bg:#fbf0c4;--part-fg:#5c4500;
--na-bg:#eee;--na-fg:#333}
body{max-width:none;padding:0;font-size:10.5pt}
h2,h3{break-after:avoid}
figure,table,dl,details{break-inside:avoid}
pre{max-height:none;white-space:pre-wrap}
figure .chart,.table-wrap{overflow:visible}}
`
  .trim()
  .replace(/\n/g, '');

// A table that cannot fit its box shows one card per row instead (the cells as label: value pairs,
// the header's labels repeated in each), so no column is cut off in print or pushed off-screen on a
// phone, and no text column is squeezed to a word per line. CSS cannot measure a table's natural
// width, so table() estimates it and names the container width below which to stack (STACK_AT, rem):
// the container queries below then switch each table by the width of its own box.
export const STACK_AT = [30, 40, 48, 56, 64] as const;
function stackRules(s: string): string {
  return (
    `${s},${s} tbody,${s} tr,${s} caption{display:block}${s} thead{display:none}` +
    `${s} tr{display:grid;grid-template-columns:repeat(auto-fill,minmax(10rem,1fr));gap:.25rem 1.25rem;` +
    `padding:.5rem .25rem;border-bottom:1px solid var(--rule)}${s} tr:first-child{border-top:2px solid var(--fg)}` +
    `${s} tr.highlight{background:var(--panel)}${s} td{display:block;padding:0;border:0;text-align:left;` +
    `white-space:normal;min-width:0}${s} td::before{content:attr(data-label);display:block;color:var(--muted);` +
    `font-size:.85em}${s} td.long{grid-column:1/-1}`
  );
}
// Light page and print: the palette's lightest colours darkened (ON_WHITE); attribute selectors,
// because the charts write their colours as presentation attributes, which CSS overrides.
const PALETTE_CSS = `@media print,not all and (prefers-color-scheme:dark){${Object.entries(ON_WHITE)
  .map(
    ([from, to]) =>
      `svg.turnwise-chart [stroke="${from}" i]{stroke:${to}}svg.turnwise-chart [fill="${from}" i]{fill:${to}}`,
  )
  .join('')}}`;

const STACK_CSS =
  STACK_AT.map((b) => `@container (width < ${b}rem){${stackRules(`table.stack-${b}`)}}`).join('') +
  stackRules('table.stack-all');

/** The whole stylesheet, minified. */
export const PAGE_CSS = `${CSS}${STACK_CSS}${PALETTE_CSS}`;
