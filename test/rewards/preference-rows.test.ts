// Preference rows (export/preference.ts) read back as TRL reads them: trl/data_utils.py
// apply_chat_template accepts an example whose supported keys are exactly {prompt, chosen, rejected},
// is_conversational needs messages with "role" and "content", and the prompt must end with a user
// message (else add_generation_prompt is undefined and it raises); prompt + chosen must be the chosen
// conversation, prompt + rejected the rejected one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Conversation, ExportMessage } from '../../src/export/index.ts';
import { preferenceJsonl, preferenceRow } from '../../src/export/index.ts';
import { trlPreference } from './fixtures.ts';

const sys: ExportMessage = { role: 'system', content: 'Play FrozenLake.' };
const user = (content: string): ExportMessage => ({ role: 'user', content });
const move = (id: string, d: string): ExportMessage => ({
  role: 'assistant',
  tool_calls: [
    { id, type: 'function', function: { name: 'move', arguments: JSON.stringify({ direction: d }) } },
  ],
});
const tool = (id: string, content: string): ExportMessage => ({ role: 'tool', content, tool_call_id: id });
const conversation = (messages: ExportMessage[], tools = false): Conversation => ({
  messages,
  turnMessage: messages.flatMap((m, i) => (m.role === 'assistant' ? [i] : [])),
  ...(tools
    ? { tools: [{ type: 'function', function: { name: 'move', description: 'm', parameters: {} } }] }
    : {}),
});

test('a pair of multi-turn conversations: the shared prompt ends at the last shared user message', () => {
  const chosen = conversation(
    [sys, user('board 0'), move('c0', 'Down'), tool('c0', 'board 4'), move('c1', 'Right')],
    true,
  );
  const rejected = conversation(
    [sys, user('board 0'), move('c0', 'Down'), tool('c0', 'board 4'), move('c1', 'Down'), tool('c1', 'hole')],
    true,
  );
  const row = preferenceRow(chosen, rejected);
  assert.ok(!('reason' in row), JSON.stringify(row));
  // Shared: system, user, the first move and its result — but the prompt stops after the user message.
  assert.deepEqual(row.prompt, [sys, user('board 0')]);
  assert.deepEqual(row.chosen, [
    { ...move('c0', 'Down'), content: '' },
    tool('c0', 'board 4'),
    { ...move('c1', 'Right'), content: '' },
  ]);
  assert.equal(row.rejected.length, 4);
  assert.deepEqual(row.tools, chosen.tools);
  const [line] = preferenceJsonl([row]).split('\n');
  const back = JSON.parse(line) as Record<string, ExportMessage[]>;
  trlPreference(back);
  // Round trip: prompt + chosen is the chosen conversation (contents filled in), same for rejected.
  const filled = (c: Conversation) => c.messages.map((m) => ({ ...m, content: m.content ?? '' }));
  assert.deepEqual([...back.prompt, ...back.chosen], filled(chosen));
  assert.deepEqual([...back.prompt, ...back.rejected], filled(rejected));
});

test('text conversations that differ from the first answer; pairs that share no user prompt are refused', () => {
  const a = conversation([
    user('task'),
    { role: 'assistant', content: 'A' },
    user('next'),
    { role: 'assistant', content: 'B' },
  ]);
  const b = conversation([user('task'), { role: 'assistant', content: 'C' }]);
  const row = preferenceRow(a, b);
  assert.ok(!('reason' in row));
  assert.deepEqual(row.prompt, [user('task')]);
  assert.equal('tools' in row, false);
  trlPreference(row as unknown as Record<string, unknown>);
  // The same first answer and the same next user message: the prompt extends to it.
  const c = conversation([
    user('task'),
    { role: 'assistant', content: 'A' },
    user('next'),
    { role: 'assistant', content: 'D' },
  ]);
  const longer = preferenceRow(a, c);
  assert.ok(!('reason' in longer));
  assert.equal(longer.prompt.length, 3);
  assert.deepEqual(longer.chosen, [{ role: 'assistant', content: 'B' }]);
  assert.deepEqual(
    preferenceRow(
      conversation([user('x'), { role: 'assistant', content: 'A' }]),
      conversation([user('y'), { role: 'assistant', content: 'A' }]),
    ),
    {
      reason: 'the two conversations share no prompt ending with a user message',
    },
  );
  assert.deepEqual(preferenceRow(a, conversation([user('task')])), {
    reason: 'one conversation has nothing after the shared prompt',
  });
});
