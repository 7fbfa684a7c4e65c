// How the docs test reads a page: which lines are commands, which their shown output, which blocks are
// marked, which links and anchors there are.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anchorsOf, parsePage } from './pages.ts';

const page = [
  '# A page',
  '',
  'See [the other](other.md#its-heading), [a site](https://example.com) and `[not](a-link.md)`.',
  '',
  '```',
  '$ turnwise serve --port 8000 &',
  'listening on http://127.0.0.1:8000/v1',
  '$ turnwise rollout --policy x \\',
  '    --episodes 3',
  'line one',
  '',
  'line two',
  '$ turnwise demo; echo "exit $?"',
  '```',
  '',
  '<!-- docs-test: heavy bench/run.sh — slow -->',
  '```',
  '$ turnwise study budget',
  '…',
  '```',
  '',
  '<!-- docs-test: not run — needs a GPU -->',
  '```sh',
  'vllm serve some/model',
  'turnwise probe x',
  '```',
  '',
  '```',
  'turnwise rollout --shown-but-not-run',
  '```',
  '',
  '```ts',
  "const turnwise = 'code, not a command';",
  '```',
  '',
  '## `turnwise serve`: every policy as a model',
  '## The replay cache: `--cache FILE.sqlite`',
  '## Twice',
  '## Twice',
].join('\n');

test('commands, their continuation lines, their shown output and their block markers', () => {
  const p = parsePage('docs/x.md', page);
  assert.deepEqual(
    p.commands.map((c) => [c.line, c.text, c.background, c.marker.kind, p.lines.slice(c.outStart, c.outEnd)]),
    [
      [6, 'turnwise serve --port 8000', true, 'run', ['listening on http://127.0.0.1:8000/v1']],
      [8, 'turnwise rollout --policy x \\\n    --episodes 3', false, 'run', ['line one', '', 'line two']],
      [13, 'turnwise demo; echo "exit $?"', false, 'run', []],
      [18, 'turnwise study budget', false, 'heavy', ['…']],
    ],
  );
  assert.deepEqual(p.commands[3].marker, { kind: 'heavy', script: 'bench/run.sh' });
  assert.deepEqual(p.unrun, [{ line: 29, text: 'turnwise rollout --shown-but-not-run' }]);
  assert.deepEqual(p.links, [[3, 'other.md#its-heading']]);
});

test("GitHub's heading anchors: punctuation dropped, spaces to hyphens, repeats numbered", () => {
  assert.deepEqual(
    [...anchorsOf(page.split('\n'))],
    [
      'a-page',
      'turnwise-serve-every-policy-as-a-model',
      'the-replay-cache---cache-filesqlite',
      'twice',
      'twice-1',
    ],
  );
});

test('a marker the test cannot read is refused, naming its line', () => {
  assert.throws(
    () => parsePage('docs/y.md', '<!-- docs-test: skip -->\n```\n$ turnwise demo\n```\n'),
    /docs\/y\.md:1: marker "skip"/,
  );
});

test('a block whose output varies is run and shows nothing; its stray command lines still count', () => {
  const p = parsePage(
    'docs/z.md',
    '<!-- docs-test: output varies — timings -->\n```\nturnwise bench env\n$ turnwise bench cli --json\n```\n',
  );
  assert.deepEqual(
    p.commands.map((c) => [c.text, c.marker.kind]),
    [['turnwise bench cli --json', 'output varies']],
  );
  assert.deepEqual(p.unrun, [{ line: 3, text: 'turnwise bench env' }]);
});

test('a block marked chromium is read as commands to run (where chromium is); its stray command lines count', () => {
  const p = parsePage(
    'docs/w.md',
    '<!-- docs-test: chromium — browser mode -->\n```\nturnwise rollout --browser\n$ turnwise rollout --env web --browser\nok\n```\n',
  );
  assert.deepEqual(
    p.commands.map((c) => [c.text, c.marker.kind, p.lines.slice(c.outStart, c.outEnd)]),
    [['turnwise rollout --env web --browser', 'chromium', ['ok']]],
  );
  assert.deepEqual(p.unrun, [{ line: 3, text: 'turnwise rollout --browser' }]);
});
