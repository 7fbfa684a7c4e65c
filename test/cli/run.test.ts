// test/cli/run.ts's inProcess(): a case in the shared worker answers what a process of bin/turnwise.js
// answers for it — the same code, stdout and stderr, nothing more — with the environment of the moment
// of the call, as a process started then would see it (the worker itself started earlier).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inProcess, turnwise } from './run.ts';

test('inProcess sees the environment of the call: a variable set, then removed, since the worker started', async () => {
  const args = ['rollout', '--episodes', '1', '--policy', 'openai:env#m'];
  const saved = process.env.OPENAI_BASE_URL;
  delete process.env.OPENAI_BASE_URL;
  try {
    const unset = await inProcess(args); // the worker starts here, without the variable
    assert.deepEqual(unset, await turnwise(args));
    assert.equal(
      unset.stderr,
      'turnwise: --policy: got "openai:env#m"; openai:env#MODEL takes the URL from OPENAI_BASE_URL, which is not set\n',
    );
    process.env.OPENAI_BASE_URL = 'not a url';
    const set = await inProcess(args);
    assert.deepEqual(set, await turnwise(args));
    assert.deepEqual(set, {
      code: 2,
      stdout: '',
      stderr:
        'turnwise: --policy openai URL: got "not a url"; expected an http(s) URL such as http://127.0.0.1:8000/v1\n',
    });
    delete process.env.OPENAI_BASE_URL;
    assert.deepEqual(await inProcess(args), unset);
  } finally {
    if (saved === undefined) delete process.env.OPENAI_BASE_URL;
    else process.env.OPENAI_BASE_URL = saved;
  }
});
