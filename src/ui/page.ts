// The page at `/` for now: what the dashboard serves today (its JSON API) and that its pages come next.
// Self-contained (no script, no stylesheet, nothing from the network).
const ENDPOINTS: readonly [string, string][] = [
  [
    '/api/runs',
    'every run under the runs directory: kind, env, policy, status, started, duration, headline figures',
  ],
  ['/api/runs/:id', 'one run, with its config and final figures (an id is a path: / written %2F)'],
  ['/api/runs/:id/metrics', 'its per-iteration metrics as stored'],
  [
    '/api/runs/:id/trajectories?offset=&limit=&task=&outcome=&failure=&policy=&sort=',
    'a page of its trajectories, filtered and sorted',
  ],
  [
    '/api/trajectories/:runId/:index?credit=grpo,gigpo,exact',
    'one trajectory, turn by turn, with a column of advantages per credit method',
  ],
];

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function indexPage(): string {
  const items = ENDPOINTS.map(
    ([path, what]) => `<li><code>GET ${escapeHtml(path)}</code> — ${escapeHtml(what)}</li>`,
  );
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>turnwise ui</title></head>
<body>
<h1>turnwise ui</h1>
<p>The dashboard's pages (runs, curves, trajectories turn by turn, groups, compare) come next. What is served today is their read-only JSON API:</p>
<ul>
${items.join('\n')}
</ul>
<p>See docs/ui.md.</p>
</body></html>
`;
}
