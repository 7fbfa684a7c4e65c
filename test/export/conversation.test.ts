// conversationOf on hand-made recorded turns: what it refuses, and the messages it keeps as they were.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Trajectory, Turn } from '../../src/core/types.ts';
import { conversationOf, type ExportTool, openaiExample } from '../../src/export/index.ts';

const TOOLS: ExportTool[] = [
  { type: 'function', function: { name: 'look', description: 'look', parameters: { type: 'object' } } },
];
const call = (id: string, name = 'look') => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name, arguments: '{}' } }],
});
const turn = (t: number, observation: unknown[], action: unknown, info: Turn['info'] = {}): Turn => ({
  t,
  observation,
  action,
  reward: 0,
  logp: 0,
  info,
});
const traj = (turns: Turn[]): Trajectory => ({
  id: 'x',
  task: { env: 'proxy', params: {}, seed: 0 },
  policy: 'p',
  budget: 8,
  revealBudget: false,
  turns,
  outcome: {
    success: false,
    return: 0,
    turns: turns.length,
    firstSuccessTurn: null,
    end: 'terminated',
    failure: 'wrong-answer',
  },
});
const toolsOf = () => TOOLS;
const reason = (t: Trajectory, o = { toolsOf }) => {
  const r = conversationOf(t, o);
  return 'reason' in r ? r.reason : undefined;
};

test('a recorded conversation: observations then actions, content arrays as text, developer as system', () => {
  const t = traj([
    turn(
      0,
      [
        { role: 'developer', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      ],
      call('a'),
    ),
    turn(1, [{ role: 'tool', tool_call_id: 'a', content: 'seen' }], { role: 'assistant', content: 'done' }),
  ]);
  const r = conversationOf(t, { toolsOf });
  assert.ok(!('reason' in r));
  assert.deepEqual(r.turnMessage, [2, 4]);
  assert.deepEqual(openaiExample(r, [0.5, -0.5], 0), {
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
      { role: 'assistant', tool_calls: call('a').tool_calls, weight: 1 },
      { role: 'tool', content: 'seen', tool_call_id: 'a' },
      { role: 'assistant', content: 'done', weight: 0 },
    ],
    tools: TOOLS,
  });
  // Without a call, no tools: the key is left out.
  const plain = conversationOf(
    traj([turn(0, [{ role: 'user', content: 'q' }], { role: 'assistant', content: 'a' })]),
  );
  assert.ok(!('reason' in plain) && plain.tools === undefined);
});

test('refused: a merge mismatch, an unanswered tool id, an undeclared tool, unknown tools, images, no turns', () => {
  const ok0 = turn(0, [{ role: 'user', content: 'q' }], call('a'));
  assert.match(
    reason(traj([ok0, turn(1, [{ role: 'user', content: 'again' }], call('b'), { mergeMismatch: true })])) ??
      '',
    /^turn 1's prompt does not extend/,
  );
  assert.equal(
    reason(traj([ok0, turn(1, [{ role: 'tool', tool_call_id: 'zz', content: 'r' }], call('b'))])),
    'message 2 is a tool result for "zz", which no earlier assistant message called',
  );
  assert.equal(
    reason(traj([turn(0, [{ role: 'user', content: 'q' }], call('a', 'rm'))])),
    'message 1 calls the tool "rm", which the env does not declare',
  );
  assert.equal(
    reason(traj([ok0]), { toolsOf: () => undefined as never }),
    'it calls tools but the tools it was offered are unknown',
  );
  assert.match(
    reason(
      traj([
        turn(0, [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'u' } }] }], call('a')),
      ]),
    ) ?? '',
    /non-text content/,
  );
  assert.equal(reason(traj([])), 'it has no turns');
  assert.match(reason(traj([{ ...ok0, observation: 3, action: 1 }])) ?? '', /no chat encoding/);
});
