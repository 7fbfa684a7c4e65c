// Rubric files: what they may say (zod, and the published JSON Schema agreeing with it), how each bad
// one is refused (one line naming the file and the field), and how scores combine (weighted sum,
// gates) with numbers a wrong combination would miss.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import Ajv2020 from 'ajv/dist/2020.js';
import { z } from 'zod';
import { InputError } from '../../src/core/errors.ts';
import { loadRubric, parseRubric, RubricSchema } from '../../src/rewards/rubric.ts';
import { type CriterionResult, combine } from '../../src/rewards/score.ts';

const dir = mkdtempSync(join(tmpdir(), 'turnwise-rubric-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const JUDGE = 'openai:http://127.0.0.1:9/v1#judge-1';

test('a rubric file read: defaults filled in (ids, weights, gates, the judge mode, prompt, scale, parser)', () => {
  const r = parseRubric(
    {
      name: 'lake',
      criteria: [
        { kind: 'success', weight: 0.5 },
        { kind: 'max-turns', n: 12, gate: true },
        {
          id: 'no-up',
          kind: 'never-called',
          tool: 'move',
          arguments: { direction: 'Up' },
          weight: 0,
          gate: { floor: 0.1 },
        },
        { kind: 'judge', judge: `${JUDGE},temperature=0.5,max_tokens=64` },
        { id: 'pairs', kind: 'judge', judge: JUDGE, mode: 'pairwise', weight: 0.25 },
      ],
    },
    'lake.json',
  );
  assert.deepEqual(
    r.criteria.map((c) => [c.id, c.kind, c.weight, c.gate, c.at]),
    [
      ['success', 'success', 0.5, undefined, 'criteria[0]'],
      ['max-turns', 'max-turns', 1, { floor: 0, pass: 0.5 }, 'criteria[1]'],
      ['no-up', 'never-called', 0, { floor: 0.1, pass: 0.5 }, 'criteria[2]'],
      ['judge', 'judge', 1, undefined, 'criteria[3]'],
      ['pairs', 'judge', 0.25, undefined, 'criteria[4]'],
    ],
  );
  const j = r.criteria[3];
  assert.ok(j.kind === 'judge');
  assert.equal(j.mode, 'pointwise');
  assert.deepEqual(j.scale, { min: 1, max: 10 });
  assert.equal(j.parser.kind, 'number');
  assert.equal(j.options.baseUrl, 'http://127.0.0.1:9/v1');
  assert.equal(j.options.model, 'judge-1');
  assert.equal(j.options.temperature, 0.5);
  assert.equal(j.options.maxTokens, 64);
  assert.equal(j.options.logprobs, false);
  const p = r.criteria[4];
  assert.ok(p.kind === 'judge');
  assert.equal(p.options.temperature, 0, 'a judge is greedy unless its spec says');
  assert.equal(p.parser.kind, 'choice');
  assert.match(p.prompt[1].content, /\{\{transcript_a\}\}[\s\S]*\{\{transcript_b\}\}/);
});

/** The one line a bad rubric is refused with. */
function refusal(value: unknown): string {
  try {
    parseRubric(value, 'r.json');
  } catch (e) {
    assert.ok(e instanceof InputError, String(e));
    return e.message;
  }
  assert.fail('accepted');
}

test('bad rubrics refused in one line naming the field inside the file', () => {
  const ok = { kind: 'success' };
  const cases: [unknown, string][] = [
    [{ criteria: [] }, 'r.json criteria: got []'],
    [{ criteria: [ok], bogus: 1 }, 'r.json: unknown field(s) "bogus"'],
    [
      { criteria: [ok, { kind: 'vibes' }] },
      'r.json criteria[1].kind: got "vibes"; expected one of success, max-turns',
    ],
    [{ criteria: [ok, ok, { kind: 'success', weight: -1 }] }, 'r.json criteria[2].weight: got -1'],
    [{ criteria: [{ kind: 'success', weight: '2' }] }, 'r.json criteria[0].weight: got "2"'],
    [{ criteria: [{ kind: 'max-turns', n: 1.5 }] }, 'r.json criteria[0].n: got 1.5'],
    [{ criteria: [{ kind: 'success', wieght: 1 }] }, 'r.json criteria[0]: unknown field(s) "wieght"'],
    [{ criteria: [{ kind: 'success', weight: 0 }] }, 'r.json criteria: every weight is 0'],
    [{ criteria: [ok, ok] }, 'r.json criteria[1].id: got "success"; criteria[0] has this id too'],
    [{ criteria: [{ kind: 'success', gate: { floor: 0, pass: 0 } }] }, 'r.json criteria[0].gate'],
    [
      { criteria: [{ kind: 'final-regex', pattern: '(' }] },
      'r.json criteria[0].pattern: got "("; not a regular expression',
    ],
    [
      { criteria: [{ kind: 'judge', judge: 'openai:http://x/v1' }] },
      'r.json criteria[0].judge: got "openai:http://x/v1"',
    ],
    [{ criteria: [{ kind: 'judge', judge: 'openai:ftp://x/v1#m' }] }, 'r.json criteria[0].judge openai URL'],
    [{ criteria: [{ kind: 'judge', judge: `${JUDGE},mode=text` }] }, 'openai takes temperature, max_tokens'],
    [
      { criteria: [{ kind: 'judge', judge: `${JUDGE},temperature=9` }] },
      'r.json criteria[0].judge openai.temperature: got "9"',
    ],
    [
      { criteria: [{ kind: 'judge', judge: JUDGE, prompt: 'rate {{transcript_a}}' }] },
      'r.json criteria[0].prompt: got "{{transcript_a}}"; the pointwise mode\'s placeholders are',
    ],
    [
      {
        criteria: [
          {
            kind: 'judge',
            judge: JUDGE,
            prompt: [
              { role: 'user', content: 'x' },
              { role: 'user', content: '{{k}}' },
            ],
          },
        ],
      },
      'r.json criteria[0].prompt[1].content: got "{{k}}"',
    ],
    [
      { criteria: [{ kind: 'judge', judge: JUDGE, mode: 'pairwise', scale: 'yes-no' }] },
      'r.json criteria[0].scale: got "yes-no"; a pairwise judge',
    ],
    [
      { criteria: [{ kind: 'judge', judge: JUDGE, scale: { min: 5, max: 5 } }] },
      'r.json criteria[0].scale: got {"min":5,"max":5}; expected min < max',
    ],
    [
      { criteria: [{ kind: 'judge', judge: JUDGE, mode: 'group', parser: { kind: 'number' } }] },
      'r.json criteria[0].parser.kind: got "number"; a group judge takes json',
    ],
    [
      { criteria: [{ kind: 'judge', judge: JUDGE, scale: 'yes-no', parser: { kind: 'number' } }] },
      'on a yes-no scale takes yes-no, regex, json',
    ],
    [
      {
        criteria: [
          { kind: 'judge', judge: JUDGE, parser: { kind: 'regex', pattern: '(\\d)', map: { a: 11 } } },
        ],
      },
      'r.json criteria[0].parser.map.a: got 11; expected a value on the scale (1 to 10)',
    ],
    [
      { criteria: [{ kind: 'judge', judge: JUDGE, parser: { kind: 'bogus' } }] },
      'r.json criteria[0].parser.kind',
    ],
  ];
  for (const [value, want] of cases) {
    const line = refusal(value);
    assert.ok(line.includes(want), `${JSON.stringify(value)}\n  got:  ${line}\n  want: ${want}`);
    assert.ok(!line.includes('\n'), line);
  }
});

test('a rubric file: missing, not JSON, YAML refused naming the file', () => {
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, '{"criteria": [');
  const yaml = join(dir, 'r.yaml');
  writeFileSync(yaml, 'criteria: []');
  const message = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      return (e as Error).message;
    }
    return 'accepted';
  };
  assert.match(
    message(() => loadRubric(join(dir, 'none.json'))),
    /^--rubric: got ".*none\.json"; cannot read the file \(ENOENT\)$/,
  );
  assert.match(
    message(() => loadRubric(bad)),
    /^--rubric: got ".*bad\.json"; not valid JSON \(/,
  );
  assert.match(
    message(() => loadRubric(yaml)),
    /--rubric: got ".*r\.yaml"; a rubric is a JSON file \(YAML is not read/,
  );
});

test('`turnwise schema rubric`: the JSON Schema accepts what the loader accepts and refuses what it refuses', () => {
  const schema = z.toJSONSchema(RubricSchema, {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
  });
  const validate = new Ajv2020({ strict: false }).compile(schema);
  const good = {
    criteria: [
      { kind: 'success', weight: 0.6 },
      { kind: 'judge', judge: JUDGE, weight: 0.4, scale: 'yes-no', parser: { kind: 'yes-no' } },
      { kind: 'side-effects', max: 2, gate: true },
      { kind: 'preference', by: ['turns', 'side-effects'] },
    ],
  };
  assert.ok(validate(good), JSON.stringify(validate.errors));
  parseRubric(good, 'good.json');
  for (const bad of [
    { criteria: [{ kind: 'vibes' }] },
    { criteria: [{ kind: 'success', weight: -1 }] },
    { criteria: [{ kind: 'success', extra: 1 }] },
    { criteria: [{ kind: 'judge', judge: JUDGE, mode: 'sideways' }] },
  ]) {
    assert.equal(validate(bad), false, JSON.stringify(bad));
    assert.throws(() => parseRubric(bad, 'bad.json'), InputError);
  }
});

const result = (scores: (number | null)[], errors: boolean[] = []): CriterionResult[] =>
  scores.map((score, i) => ({
    id: `c${i}`,
    kind: 'success',
    weight: 0,
    score,
    ...(score === null ? (errors[i] ? { error: 'unparseable' } : { missing: 'no count' }) : {}),
  }));

test('combination: Σ w·s with the weights as given; a failed gate sets the floor; a missing score is no 0', () => {
  const r = parseRubric(
    {
      criteria: [
        { id: 'a', kind: 'success', weight: 0.5 },
        { id: 'b', kind: 'max-turns', n: 3, weight: 0.3 },
        { id: 'j', kind: 'judge', judge: JUDGE, weight: 0.2, gate: { floor: 0.05, pass: 0.6 } },
        { id: 'v', kind: 'no-invalid', weight: 0, gate: { floor: 0.1 } },
        { id: 'x', kind: 'final-regex', pattern: 'x', weight: 0 },
      ],
    },
    'c.json',
  );
  const score = (xs: (number | null)[], errors?: boolean[]) => combine(r, result(xs, errors));
  // 0.5·1 + 0.3·0 + 0.2·(7/9) = 0.6555…
  assert.ok(Math.abs((score([1, 0, 7 / 9, 1, 0]).score as number) - (0.5 + 0.2 * (7 / 9))) < 1e-15);
  assert.deepEqual(score([1, 1, 1, 1, 1]), { score: 1, gates: [], judgeErrors: 0 });
  // The judge at 5/9 < pass 0.6: its gate sets 0.05, whatever the others.
  assert.deepEqual(score([1, 1, 5 / 9, 1, 1]), { score: 0.05, gates: ['j'], judgeErrors: 0 });
  // Two gates failed: the lower floor.
  assert.deepEqual(score([1, 1, 0.5, 0, 1]), { score: 0.05, gates: ['j', 'v'], judgeErrors: 0 });
  assert.deepEqual(score([1, 1, 0.9, 0, 1]), { score: 0.1, gates: ['v'], judgeErrors: 0 });
  // A judge error: the score is missing — not 0.5·1 + 0.3·1 = 0.8, not a 0 for the judge.
  assert.deepEqual(score([1, 1, null, 1, 1], [false, false, true]), {
    score: null,
    gates: [],
    judgeErrors: 1,
  });
  // … unless a gate decides it anyway.
  assert.deepEqual(score([1, 1, null, 0, 1], [false, false, true]), {
    score: 0.1,
    gates: ['v'],
    judgeErrors: 1,
  });
  // A weight-0, ungated criterion missing does not matter.
  assert.deepEqual(score([0, 1, 1, 1, null]), { score: 0.5, gates: [], judgeErrors: 0 });
});
