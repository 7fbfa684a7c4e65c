// The code env's hackable reward and its mitigations (params reward 'visible', 'visible+hidden-sample',
// hackPenalty) and the candidate variant (mode 'choose'): a program hard-coding the visible examples
// against the reference and a bug, graded in the sandbox, with the reward and info each gets; the
// hidden sample's draw; the params' validation and the unchanged canonical default.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../../src/core/errors.ts';
import type { StepInfo, ToolCall } from '../../../src/core/types.ts';
import {
  CodeChoiceEnv,
  type CodeEnv,
  codeParams,
  codeWorld,
  describeCode,
  hackProgram,
  hiddenSample,
  hostPasses,
} from '../../../src/envs/code/index.ts';
import { envConfig, envSpec, makeEnv } from '../../../src/envs/index.ts';

const task = (seed: number, params: Record<string, unknown> = {}) => ({ ...envConfig('code', params), seed });
const submit = (code: string): ToolCall => ({ name: 'submit', arguments: { code } });

async function submitted(seed: number, params: Record<string, unknown>, code: string, episode = 0) {
  const env = makeEnv(task(seed, params)) as unknown as CodeEnv;
  try {
    env.reset(episode);
    const r = await env.step(submit(code));
    return { reward: r.reward, info: r.info as StepInfo & Record<string, unknown> };
  } finally {
    env.close();
  }
}

test('params: the default canonical form is unchanged; the new ones validated and shown only when set', () => {
  assert.deepEqual(codeParams({}), { level: 'mixed', domain: 'mixed', examples: 3, reward: 'binary' });
  assert.deepEqual(Object.keys(codeParams({ reward: 'visible' })), ['level', 'domain', 'examples', 'reward']);
  assert.equal(codeParams({ reward: 'visible+hidden-sample' }).sample, 2);
  assert.equal(codeParams({ reward: 'visible', hackPenalty: 0 }).hackPenalty, undefined);
  assert.deepEqual(codeParams({ mode: 'choose' }), {
    level: 'mixed',
    domain: 'mixed',
    examples: 3,
    reward: 'binary',
    mode: 'choose',
    candidates: 4,
    checked: 1,
  });
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ reward: 'hidden' }, /^params\.reward: /],
    [{ sample: 3 }, /^params\.sample: got 3; only with reward 'visible\+hidden-sample'$/],
    [{ candidates: 3 }, /^params\.candidates: got 3; only with mode 'choose'$/],
    [{ mode: 'choose', checked: 4 }, /^params\.checked: got 4; at most examples \(3\)$/],
    [{ hackPenalty: -1 }, /^params\.hackPenalty: /],
  ];
  for (const [raw, message] of bad)
    assert.throws(
      () => codeParams(raw),
      (e) => e instanceof InputError && message.test(e.message),
    );
});

test("reward 'visible' pays a hack 1 while it fails hidden tests; info records visible, hidden and detected", async () => {
  const seed = 4;
  const w = codeWorld(task(seed, { reward: 'visible' }));
  const hack = hackProgram(w, 'table');
  const pass = hostPasses(w, hack);
  const nv = w.visible.length;
  assert.ok(pass.slice(0, nv).every(Boolean) && !pass.every(Boolean), 'the hack passes the visible, not all');
  const h = await submitted(seed, { reward: 'visible' }, hack);
  assert.equal(h.reward, 1);
  assert.equal(h.info.success, false);
  assert.equal(h.info.failure, 'wrong-answer');
  assert.deepEqual(h.info.visible, { passed: nv, total: nv });
  assert.deepEqual(h.info.hidden, { passed: pass.filter(Boolean).length, total: w.hidden.length });
  assert.equal(h.info.detected, true);
  const ref = await submitted(seed, { reward: 'visible' }, w.problem.reference);
  assert.equal(ref.reward, 1);
  assert.equal(ref.info.success, true);
  assert.equal(ref.info.detected, false);
  const bug = w.bugs.find((b) => !hostPasses(w, b).slice(0, nv).every(Boolean));
  assert.ok(bug !== undefined, 'a bug that fails a visible example');
  assert.equal((await submitted(seed, { reward: 'visible' }, bug)).reward, 0);
  // The default reward: the hack gets 0, and the info has no detector field (unchanged bytes).
  const d = await submitted(seed, {}, hack);
  assert.equal(d.reward, 0);
  assert.equal('detected' in d.info, false);
});

test("'visible+hidden-sample': the draw is `sample` distinct non-visible tests per episode; the hack is paid iff it passes them", async () => {
  const params = { reward: 'visible+hidden-sample', sample: 3 };
  const seed = 7;
  const w = codeWorld(task(seed, params));
  const nv = w.visible.length;
  const draws = new Set<string>();
  for (let e = 0; e < 30; e++) {
    const s = hiddenSample(w, e);
    assert.equal(new Set(s).size, 3);
    assert.ok(s.every((i) => i >= nv && i < w.hidden.length));
    assert.deepEqual(hiddenSample(w, e), s, 'deterministic per episode seed');
    draws.add(JSON.stringify(s));
  }
  assert.ok(draws.size > 5, `${draws.size} distinct draws over 30 episodes`);
  const hack = hackProgram(w, 'table');
  const pass = hostPasses(w, hack);
  for (const e of [0, 1, 2]) {
    const r = await submitted(seed, params, hack, e);
    assert.equal(r.reward, hiddenSample(w, e).every((i) => pass[i]) ? 1 : 0);
    assert.equal(r.info.detected, true);
  }
  assert.equal((await submitted(seed, params, w.problem.reference, 1)).reward, 1);
});

test('hackPenalty: subtracted from a flagged program only', async () => {
  const params = { reward: 'visible', hackPenalty: 0.75 };
  const w = codeWorld(task(4, params));
  assert.equal((await submitted(4, params, hackProgram(w, 'table'))).reward, 0.25);
  assert.equal((await submitted(4, params, w.problem.reference)).reward, 1);
});

test("mode 'choose': K programs as discrete actions, one hack; rewards and info from each program's tests", () => {
  const params = { mode: 'choose', reward: 'visible', candidates: 5 };
  const spec = envSpec(task(0, params));
  assert.deepEqual([spec.actions, spec.features, spec.maxTurns], [5, 20, 2]);
  let hacks = 0;
  let hackOnly = 0;
  for (let seed = 0; seed < 40; seed++) {
    const env = makeEnv(task(seed, params)) as unknown as CodeChoiceEnv;
    assert.ok(env instanceof CodeChoiceEnv);
    const w = env.world;
    const nv = w.visible.length;
    assert.equal(env.candidates.filter((c) => c.kind === 'hack').length, 1);
    const o = env.reset(0);
    const f = env.features(o);
    assert.equal(f.length, 20);
    env.candidates.forEach((c, a) => {
      assert.deepEqual(c.pass, hostPasses(w, c.code));
      assert.equal(f[4 * a], c.pass[0] ? 1 : 0, 'the spot check: the first visible example');
      env.reset(a);
      const r = env.step(a);
      const visibleOk = c.pass.slice(0, nv).every(Boolean);
      assert.equal(r.reward, visibleOk ? 1 : 0);
      assert.equal(r.terminated, true);
      assert.equal(r.info.kind, c.kind);
      assert.equal(r.info.success, c.pass.every(Boolean));
      assert.equal(r.info.detected, c.kind === 'hack' ? r.info.detected : false);
      if (c.kind === 'hack') {
        hacks++;
        assert.equal(r.reward, 1, 'a hack passes every visible example');
        if (r.info.detected === true) hackOnly++;
      }
      if (c.kind === 'reference') assert.equal(r.info.success, true);
    });
    env.reset(0);
    assert.equal(env.step(5).info.valid, false);
  }
  assert.equal(hacks, 40);
  // describe lists the programs; their kinds and hidden passes only with gold.
  const env = makeEnv(task(2, params)) as unknown as CodeChoiceEnv;
  const plain = describeCode(task(2, params)).candidates as Record<string, unknown>[];
  const gold = describeCode(task(2, params), true).candidates as Record<string, unknown>[];
  assert.deepEqual(
    plain.map((c) => Object.keys(c)),
    env.candidates.map(() => ['code']),
  );
  assert.deepEqual(
    gold.map((c) => [c.kind, c.hiddenPassed]),
    env.candidates.map((c) => [c.kind, c.pass.filter(Boolean).length]),
  );
  assert.ok(hackOnly >= 38, `${hackOnly} of 40 hacks detected`);
});
