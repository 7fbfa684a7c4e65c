// The search env's choice variant (params mode 'choose'): its params and spec, the default env left as it
// was, the useful call offered on every turn (choosing it always answers, in the gold path's turns), each
// step the call env's step, features read from what was shown (hand-checked values), determinism,
// checkEnv, and an MLP acting on it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ToolCall } from '../../../src/core/types.ts';
import { checkEnv } from '../../../src/envs/check.ts';
import { envConfig, envSpec, makeEnv } from '../../../src/envs/index.ts';
import {
  buildSearchWorld,
  goldCall,
  type SearchChoiceEnv,
  type SearchChoiceObservation,
  type SearchEnv,
  SLOT_FEATURES,
  searchParams,
  searchWorld,
} from '../../../src/envs/search/index.ts';
import { makePolicy } from '../../../src/policies/spec.ts';
import { rollout } from '../../../src/rollout/batch.ts';

const CHOOSE = { mode: 'choose' };
const task = (seed: number, params: Record<string, unknown> = CHOOSE) => ({
  ...envConfig('search', params),
  seed,
});
const choiceEnv = (seed: number, params: Record<string, unknown> = CHOOSE) =>
  makeEnv(task(seed, params)) as unknown as SearchChoiceEnv;
const key = (c: ToolCall) => JSON.stringify(c);
const slotOf = (o: SearchChoiceObservation, c: ToolCall) => o.slots.findIndex((s) => key(s) === key(c));
const feat = (o: SearchChoiceObservation, slot: number) =>
  o.features.slice(slot * SLOT_FEATURES, (slot + 1) * SLOT_FEATURES);

test('params: the default keeps its canonical form; choose adds mode and slots; slots only with it', () => {
  assert.deepEqual(searchParams({}), { level: 'mixed', misuse: 3 });
  assert.deepEqual(searchParams({ mode: 'call' }), { level: 'mixed', misuse: 3 });
  assert.deepEqual(searchParams({ mode: 'choose' }), { level: 'mixed', misuse: 3, mode: 'choose', slots: 6 });
  assert.deepEqual(searchParams({ mode: 'choose', slots: 4, level: 2 }), {
    level: 2,
    misuse: 3,
    mode: 'choose',
    slots: 4,
  });
  assert.throws(() => searchParams({ slots: 4 }), /params\.slots: got 4; only with mode 'choose'/);
  assert.throws(() => searchParams({ mode: 'choose', slots: 1 }), /params\.slots/);
  assert.throws(() => searchParams({ mode: 'pick' }), /params\.mode/);
  assert.deepEqual(envSpec(task(0)), {
    id: 'search',
    actions: 6,
    oracle: false,
    snapshots: true,
    features: 6 * SLOT_FEATURES,
    maxTurns: 20,
  });
  assert.equal(envSpec(task(0, {})).actions, 'text');
  // The same world (corpus, question, answer) as the call env's: the variant changes the interface only.
  for (const seed of [0, 5]) {
    const a = searchWorld(task(seed, {}));
    const b = searchWorld(task(seed));
    assert.deepEqual([a.question, a.answer, a.clues], [b.question, b.answer, b.clues]);
    assert.equal(b.params.mode, 'choose');
    assert.equal(a.params.mode, undefined);
    assert.equal(buildSearchWorld(searchParams({}), seed).question, a.question);
  }
});

test('the useful call is offered every turn; choosing it answers in the gold path’s turns; each step is the call env’s', () => {
  for (let seed = 0; seed < 40; seed++) {
    const env = choiceEnv(seed);
    const calls = makeEnv(task(seed, {})) as unknown as SearchEnv;
    calls.reset(0);
    let o = env.reset(1000 + seed);
    let turns = 0;
    let acquired = 0;
    for (;;) {
      assert.equal(o.slots.length, 6);
      assert.equal(new Set(o.slots.map(key)).size, 6, 'distinct calls');
      const gold = goldCall(env.world, new Set(env.clues));
      const slot = slotOf(o, gold);
      assert.ok(slot >= 0, `seed ${seed} turn ${turns}: the gold call is offered`);
      const r = env.step(slot);
      const c = calls.step(gold);
      turns++;
      acquired += (r.info.clues as string[]).length;
      // The step is the call env's, plus the slot chosen.
      assert.deepEqual(r.info, { ...c.info, slot });
      assert.equal(r.reward, c.reward);
      assert.deepEqual(
        { ...r.observation, slots: undefined, features: undefined },
        {
          ...c.observation,
          slots: undefined,
          features: undefined,
        },
      );
      o = r.observation;
      if (r.terminated) {
        assert.equal(r.info.success, true);
        assert.equal(r.reward, 1);
        break;
      }
    }
    // Every clue of the chain, at most one call per clue (a search may show a fact in its snippet), then
    // the answer.
    assert.equal(acquired, env.world.clues.length);
    assert.ok(turns <= env.world.clues.length + 1, `seed ${seed}`);
  }
});

test('features: hand-checked on the gold path of a known task', () => {
  const env = choiceEnv(3);
  const w = env.world;
  assert.equal(w.question.includes('hot springs founded in 1450'), true);
  let o = env.reset(7);
  // Turn 0: nothing shown yet. The gold search is the description's words, all in the question.
  const s0 = slotOf(o, goldCall(w, new Set()));
  assert.deepEqual(feat(o, s0), [1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
  const r0 = env.step(s0);
  o = r0.observation;
  // Turn 1: the search listed the anchor's document at some rank; its open is the gold call.
  const results = (o.last as { output: { results: { id: string; title: string }[] } }).output.results;
  const rank = results.findIndex((h) => h.id === w.hops[0].from);
  assert.ok(rank >= 0);
  const gold1 = goldCall(w, new Set(env.clues));
  assert.deepEqual(gold1, { name: 'open', arguments: { doc: w.hops[0].from } });
  const f1 = feat(o, slotOf(o, gold1));
  assert.deepEqual(f1.slice(0, 4), [0, 1, 0, 0]);
  assert.equal(f1[5], 1, "the title's words are all in the last result (it lists the title)");
  assert.equal(f1[6], 1);
  assert.equal(f1[7], 1 / (1 + rank));
  assert.equal(f1[8], 1, 'listed');
  assert.equal(f1[9], 0, 'nothing opened yet');
  assert.equal(f1[10], 1 / 20);
  // Every open offered that the search did not list has no title known, rank 0, listed 0.
  o.slots.forEach((c, i) => {
    if (c.name === 'open' && !results.some((h) => h.id === c.arguments.doc))
      assert.deepEqual(feat(o, i).slice(4, 9), [0, 0, 0, 0, 0]);
  });
  // Turn 2: after opening, a second hop's search by name: the name is in the opened document; opened 1
  // of 2·level.
  o = env.step(slotOf(o, gold1)).observation;
  const gold2 = goldCall(w, new Set(env.clues));
  assert.equal(gold2.name, w.level > 1 ? 'search' : 'answer');
  const f2 = feat(o, slotOf(o, gold2));
  assert.equal(f2[5], 1);
  assert.equal(f2[9], 1 / (2 * w.level));
  assert.equal(f2[10], 2 / 20);
  // A repeat is flagged: offer-time feature 3 is 1 exactly for calls made before.
  const made = new Set([key(goldCall(w, new Set())), key(gold1)]);
  o.slots.forEach((c, i) => {
    assert.equal(feat(o, i)[3], made.has(key(c)) ? 1 : 0);
  });
});

test('determinism: same reset seed, same offers; another seed, other offers; checkEnv passes', async () => {
  const play = (seed: number) => {
    const env = choiceEnv(2);
    const out = [env.reset(seed)];
    for (const a of [0, 3, 1, 5, 2]) {
      const r = env.step(a);
      out.push(r.observation);
      if (r.terminated) break;
    }
    return JSON.stringify(out);
  };
  assert.equal(play(11), play(11));
  assert.notEqual(play(11), play(12));
  const problems = await checkEnv(() => choiceEnv(4) as never, { episodes: 6, maxTurns: 25 });
  assert.deepEqual(problems, []);
  // An action outside the slots is refused as an observation, not an end.
  const env = choiceEnv(4);
  env.reset(0);
  const r = env.step(6);
  assert.equal(r.terminated, false);
  assert.equal(r.info.valid, false);
  assert.equal(r.info.redundant, true);
  assert.deepEqual(r.info.clues, []);
});

test('an MLP acts on it through the registry (features of the declared width), bytes repeat', async () => {
  const tasks = [0, 1, 2].map((s) => task(s));
  const run = async () => {
    const policy = makePolicy('mlp:hidden=8', envSpec(tasks[0]));
    return rollout({ tasks, samples: 2, policy, makeEnv, budget: 20, runSeed: 5 });
  };
  const a = await run();
  assert.equal(JSON.stringify(a), JSON.stringify(await run()));
  for (const t of a)
    for (const turn of t.turns) {
      assert.ok(Number.isInteger(turn.action) && (turn.action as number) < 6);
      assert.equal((turn.observation as SearchChoiceObservation).features.length, 6 * SLOT_FEATURES);
    }
});
