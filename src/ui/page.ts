// The page at `/`: the shell every dashboard page is drawn in (web/main.ts routes on the URL's hash:
// #/ runs, #/run/ID, #/run/ID/trajectories, #/run/ID/t/INDEX, #/run/ID/group/TASK, #/compare). The
// stylesheet is the report's (report/css.ts: light and dark palettes, tables that stack on a narrow
// screen) and the dashboard's own (web/style.ts); the one script is the bundle at /app.js. The
// Content-Security-Policy allows this origin only: nothing on a page can reach the network.
import { PAGE_CSS } from '../report/css.ts';
import { UI_CSS } from './web/style.ts';

export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function indexPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>turnwise ui</title>
<style>${PAGE_CSS}${UI_CSS}</style>
<script type="module" src="/app.js"></script>
</head>
<body>
<header class="top"><a href="#/" class="brand">turnwise ui</a><nav><a href="#/">runs</a> <a href="#/compare">compare</a></nav><span id="status" role="status"></span></header>
<main id="app"><noscript>The dashboard's pages need JavaScript; its JSON API (GET /api/runs …, docs/ui.md) does not.</noscript></main>
</body>
</html>
`;
}
