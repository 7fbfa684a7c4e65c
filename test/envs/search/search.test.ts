// The search env: generator determinism and difficulty spread, BM25 order (ties by id), the answer
// checker on hand-made cases both sides, clue accounting (against the rendered text), failure kinds,
// snapshots, checkEnv, and the CLI contract.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ajv } from 'ajv';
import type { Env, ToolCall, Turn } from '../../../src/core/types.ts';
import { checkEnv } from '../../../src/envs/check.ts';
import { envConfig, envs, makeEnv, makeTasks } from '../../../src/envs/index.ts';
import {
  buildSearchWorld,
  type Corpus,
  type Doc,
  normaliseAnswer,
  parseSearchCall,
  SEARCH_TOOLS,
  type SearchEnv,
  Searcher,
  type SearchObservation,
  searchParams,
} from '../../../src/envs/search/index.ts';
import { makePolicy } from '../../../src/policies/spec.ts';
import { rollout } from '../../../src/rollout/batch.ts';
import { turnwise } from '../../cli/run.ts';
import { rolloutContract } from '../rollout-contract.ts';

const task = (seed: number, params: Record<string, unknown> = {}) => ({
  ...envConfig('search', params),
  seed,
});
const searchEnv = (seed: number, params: Record<string, unknown> = {}) =>
  makeEnv(task(seed, params)) as unknown as SearchEnv;
const call = (name: string, args: Record<string, unknown> = {}): ToolCall => ({ name, arguments: args });

function stepAll(env: SearchEnv, actions: ToolCall[]) {
  env.reset(0);
  return actions.map((a) => env.step(a));
}

/** Plays the scripted oracle to the end; returns the step results. */
function playOracle(env: SearchEnv) {
  env.reset(0);
  const view = env.scripted();
  const history: Turn<unknown, unknown>[] = [];
  const results = [];
  for (let t = 0; t < 20; t++) {
    const action = view.goldAction(history);
    const r = env.step(action);
    results.push(r);
    history.push({ t, observation: null, action, reward: r.reward, logp: 0, info: r.info });
    if (r.terminated) break;
  }
  return results;
}

test('the generator is deterministic, levels set the number of hops, mixed spreads them', () => {
  const p = searchParams({});
  const a = buildSearchWorld(p, 7);
  const b = buildSearchWorld(p, 7);
  assert.deepEqual(
    [a.question, a.answer, a.hops, a.corpus.docs],
    [b.question, b.answer, b.hops, b.corpus.docs],
  );
  assert.notEqual(buildSearchWorld(p, 8).question, a.question);
  for (const level of [1, 2, 3] as const)
    for (let s = 0; s < 15; s++) {
      const w = buildSearchWorld(searchParams({ level }), s);
      assert.equal(w.level, level);
      assert.equal(w.hops.length, level);
      assert.equal(w.clues.length, 2 * level);
      // A chain: each hop starts where the previous ended, through distinct entities, and the answer is
      // the last entity's name, stated in the last hop's fact sentence.
      for (let i = 1; i < level; i++) assert.equal(w.hops[i].from, w.hops[i - 1].to);
      const ids = [w.hops[0].from, ...w.hops.map((h) => h.to)];
      assert.equal(new Set(ids).size, ids.length);
      const last = w.hops[level - 1];
      assert.equal(w.corpus.byId.get(last.to)?.name, w.answer);
      const d = w.corpus.docById.get(last.from) as Doc;
      assert.ok(d.sentences[d.factAt[last.relation] as number].includes(w.answer));
      // The answer is a name no other entity has, even after normalisation.
      const same = w.corpus.entities.filter((e) => normaliseAnswer(e.name) === normaliseAnswer(w.answer));
      assert.equal(same.length, 1);
      // Every gold query ranks its target in the top 5.
      for (const h of w.hops)
        assert.ok(
          w.searcher.search(h.query).some((x) => x.id === h.from),
          h.query,
        );
    }
  // The scripted menu: distinct calls, 3 per document.
  assert.equal(new Set(a.menu.map((m) => JSON.stringify(m))).size, 3 * a.corpus.docs.length);
  const levels = new Set<number>();
  for (let s = 0; s < 30; s++) levels.add(buildSearchWorld(p, s).level);
  assert.deepEqual([...levels].sort(), [1, 2, 3]);
});

test('corpus: every relation is stated once, in its own document; capitals lie in their country', () => {
  for (const s of [0, 1, 2]) {
    const { corpus } = buildSearchWorld(searchParams({}), s);
    assert.equal(corpus.docs.length, 78);
    for (const e of corpus.entities) {
      for (const [rel, target] of Object.entries(e.links)) {
        const name = corpus.byId.get(target)?.name as string;
        const holders = corpus.docs.filter((d) =>
          d.sentences.some((x, i) => x.includes(name) && d.factAt[rel as keyof Doc['factAt']] === i),
        );
        assert.ok(
          holders.some((d) => d.id === e.id),
          `${e.id} ${rel}`,
        );
      }
      if (e.type === 'country') assert.equal(corpus.byId.get(e.links.capital as string)?.links.country, e.id);
    }
  }
});

test('BM25 order: by score, ties broken by document id whatever the insertion order', () => {
  const doc = (id: string, title: string, text: string): Doc => ({
    id,
    title,
    sentences: [text],
    factAt: {},
  });
  const docs = [
    doc('d003', 'Gamma', 'the salt trade of the north'),
    doc('d001', 'Alpha', 'the salt trade of the north'),
    doc('d002', 'Beta', 'the salt trade of the north'),
    doc('d004', 'Delta', 'salt salt salt trade north harbour'),
    doc('d005', 'Epsilon', 'nothing relevant here at all'),
  ];
  const corpus = { entities: [], byId: new Map(), docs, docById: new Map(docs.map((d) => [d.id, d])) };
  const s = new Searcher(corpus as unknown as Corpus);
  const hits = s.search('salt trade');
  assert.deepEqual(
    hits.map((h) => h.id),
    ['d004', 'd001', 'd002', 'd003'],
  );
  assert.deepEqual(
    s.search('salt trade', 2).map((h) => h.id),
    ['d004', 'd001'],
  );
  assert.deepEqual(
    s.search('Beta').map((h) => h.id),
    ['d002'],
  ); // titles are indexed
  assert.deepEqual(s.search('?!'), []);
  assert.equal(s.search('zebra').length, 0);
});

test('answer checker: normalised exact match, hand-made cases on both sides', () => {
  for (const [a, b, same] of [
    ['Kestrel Holdings', 'kestrel holdings', true],
    ['  Kestrel   Holdings! ', 'Kestrel Holdings', true],
    ['The Silent River', 'silent river', true],
    ['Elmaría', 'Elmaria', true],
    ['Kestrel Holding', 'Kestrel Holdings', false],
    ['Kestrel', 'Kestrel Holdings', false],
    ['Holdings Kestrel', 'Kestrel Holdings', false],
    ['Theo Quill', 'Quill', false],
  ] as const)
    assert.equal(normaliseAnswer(a) === normaliseAnswer(b), same, `${a} vs ${b}`);
  const env = searchEnv(4);
  const gold = env.world.answer;
  const [ok] = stepAll(env, [call('answer', { text: `  ${gold.toUpperCase()}.` })]);
  assert.deepEqual([ok.reward, ok.terminated, ok.info.success, ok.info.failure], [1, true, true, undefined]);
  const [bad] = stepAll(env, [call('answer', { text: `${gold}x` })]);
  assert.deepEqual(
    [bad.reward, bad.terminated, bad.info.success, bad.info.failure],
    [0, true, false, 'wrong-answer'],
  );
  env.close();
});

test('clue accounting: the oracle takes one new clue per call; repeats are redundant; opening takes two', () => {
  for (const level of [1, 2, 3] as const)
    for (let s = 0; s < 8; s++) {
      const env = searchEnv(s, { level });
      const rs = playOracle(env);
      const last = rs[rs.length - 1];
      assert.equal(last.info.success, true);
      // One clue per call at most twice over; fewer calls when a search shows a later clue on the way
      // (the oracle then skips it). Every call before the answer takes at least one new clue.
      assert.ok(rs.length >= level + 1 && rs.length <= 2 * level + 1, String(rs.length));
      const taken = rs.slice(0, -1).flatMap((r) => r.info.clues as string[]);
      assert.deepEqual([...taken].sort(), [...env.world.clues].sort());
      assert.ok(
        rs.slice(0, -1).every((r) => r.info.redundant === false && (r.info.clues as string[]).length > 0),
      );
      const q = rs.reduce((a, r) => a + (r.info.quality as number), 0);
      assert.ok(Math.abs(q - 1) < 1e-12, String(q));
      assert.deepEqual(
        [last.info.cluesHeld, last.info.cluesNeeded, last.info.redundant],
        [2 * level, 2 * level, false],
      );
      env.close();
    }
  const env = searchEnv(11, { level: 2 });
  const [h0, h1] = env.world.hops;
  const q = call('search', { query: h0.query });
  const [first, again] = stepAll(env, [q, q]);
  assert.deepEqual(first.info.clues, [`locate:${h0.from}`]);
  assert.deepEqual([again.info.clues, again.info.redundant, again.info.quality], [[], true, 0]);
  assert.equal(env.stateKey(first.observation), env.stateKey(again.observation)); // same clues, same state
  // Opening a document without searching takes both of its clues; opening it again takes none.
  const [o, o2] = stepAll(env, [call('open', { doc: h1.from }), call('open', { doc: h1.from })]);
  assert.deepEqual(o.info.clues, [`locate:${h1.from}`, `fact:${h1.from}.${h1.relation}`]);
  assert.equal(o2.info.redundant, true);
  // A search whose snippet is the fact sentence takes the fact clue without opening.
  const d = env.world.corpus.docById.get(h0.from) as Doc;
  const factSentence = d.sentences[d.factAt[h0.relation] as number];
  const [viaSnippet] = stepAll(env, [call('search', { query: factSentence })]);
  assert.ok((viaSnippet.info.clues as string[]).includes(`fact:${h0.from}.${h0.relation}`));
  env.close();
});

test('clue accounting agrees with the text shown: a clue is new exactly when its evidence is on screen', () => {
  for (const s of [0, 5]) {
    const env = searchEnv(s, { level: 3 });
    const w = env.world;
    for (const a of w.menu.filter((m) => m.name !== 'answer')) {
      const [r] = stepAll(env, [a]);
      const text = env.text(r.observation);
      const expect: string[] = [];
      for (const h of w.hops) {
        const d = w.corpus.docById.get(h.from) as Doc;
        const shown = new RegExp(`(^|\\n)(  )?${h.from} `).test(text);
        if (shown) expect.push(`locate:${h.from}`);
        if (shown && text.includes(d.sentences[d.factAt[h.relation] as number]))
          expect.push(`fact:${h.from}.${h.relation}`);
      }
      assert.deepEqual(r.info.clues, expect, JSON.stringify(a));
    }
    env.close();
  }
});

test('failure kinds: misuse, misperception, wrong-answer; after the end and after close', () => {
  const env = searchEnv(3, { misuse: 2 });
  const m = stepAll(env, [call('browse', { url: 'x' }), call('search', { q: 'x' })]);
  assert.deepEqual(
    m.map((r) => [r.terminated, r.info.valid, r.info.failure]),
    [
      [false, false, undefined],
      [true, false, 'invalid-action'],
    ],
  );
  assert.match(m[0].observation.last?.error ?? '', /unknown tool "browse"; tools are search, open, answer/);
  const [mis] = stepAll(env, [call('open', { doc: 'd999' })]);
  assert.deepEqual(
    [mis.terminated, mis.info.valid, mis.info.failure, mis.info.error],
    [true, false, 'misperception', 'no-such-doc'],
  );
  const [none] = stepAll(env, [call('search', { query: 'zzzz qqqq' })]);
  assert.deepEqual([none.terminated, none.info.valid, none.info.redundant], [false, undefined, true]);
  const [wrong, after] = stepAll(env, [call('answer', { text: 'nobody' }), call('search', { query: 'x' })]);
  assert.equal(wrong.info.failure, 'wrong-answer');
  assert.deepEqual([after.info.valid, after.terminated], [false, true]);
  env.close();
  env.close();
  assert.throws(() => env.reset(0), /after close/);
});

test('checkEnv passes (menu actions, errors, snapshots), rollouts close every env, schemas agree with ajv', async () => {
  for (const seed of [0, 1]) {
    let made = 0;
    let closed = 0;
    const make = () => {
      const env = searchEnv(seed);
      made++;
      const close = env.close.bind(env);
      env.close = () => {
        closed++;
        close();
      };
      return env as unknown as Env<SearchObservation, ToolCall>;
    };
    const menu = searchEnv(seed).world.menu.filter((a) => a.name !== 'answer');
    const extra = [
      call('open', { doc: 'nope' }),
      call('search', { query: 3 }),
      call('answer', { text: 'x' }),
    ];
    const problems = await checkEnv(make, {
      episodes: 5,
      maxTurns: 10,
      seed,
      action: (rng) => (rng.int(8) === 0 ? extra[rng.int(3)] : menu[rng.int(menu.length)]),
      malformed: { name: 'no_such_tool', arguments: {} },
    });
    assert.deepEqual(problems, []);
    assert.equal(closed, made);
  }
  let made = 0;
  let closed = 0;
  const makeCounted = (t: Parameters<typeof envs.make>[0]) => {
    const env = envs.make(t) as unknown as SearchEnv;
    made++;
    const close = env.close.bind(env);
    env.close = () => {
      closed++;
      close();
    };
    return env as unknown as Env<unknown, unknown>;
  };
  const tasks = makeTasks(envConfig('search', {}), 6, 100);
  const r = await rollout({
    tasks,
    samples: 2,
    budget: 20,
    runSeed: 1,
    policy: makePolicy('oracle:eps=0.3', envs.spec(tasks[0])),
    makeEnv: makeCounted,
    concurrency: 3,
  });
  assert.equal(r.length, 12);
  assert.deepEqual([made, closed], [6, 6]); // one env per task, reset per sample
  const ajv = new Ajv();
  const byName = new Map(SEARCH_TOOLS.map((t) => [t.name, ajv.compile(t.parameters)]));
  for (const c of [
    call('search', { query: 'salt' }),
    call('search', { query: '' }),
    call('search', {}),
    call('open', { doc: 'd001' }),
    call('open', { doc: 1 }),
    call('answer', { text: 'x', extra: 1 }),
  ])
    assert.equal(byName.get(c.name)!(c.arguments), parseSearchCall(c).ok, JSON.stringify(c));
});

test('snapshot and restore reproduce the continuation and the clues held', () => {
  const env = searchEnv(9, { level: 3 });
  const view = env.scripted();
  env.reset(0);
  const history: Turn<unknown, unknown>[] = [];
  const go = () => {
    const action = view.goldAction(history);
    const r = env.step(action);
    history.push({ t: history.length, observation: null, action, reward: r.reward, logp: 0, info: r.info });
    return r;
  };
  go();
  go();
  const snap = env.snapshot();
  const held = env.clues;
  const rest = [go(), go(), go()];
  env.restore(snap);
  history.length = 2;
  assert.deepEqual(env.clues, held);
  assert.deepEqual([go(), go(), go()], rest);
  env.close();
});

test('CLI: rollout --env search: oracle 50/50, eps fewer, random almost none; env describe', async () => {
  const run = (policy: string) => rolloutContract('search', policy);
  const oracle = await run('oracle');
  assert.deepEqual([oracle.episodes, oracle.success], [50, 1]);
  const eps = await run('oracle:eps=0.3');
  assert.ok(eps.success > 0.1 && eps.success < 0.9, String(eps.success));
  const random = await run('random');
  assert.ok(random.success <= 0.06, String(random.success));
  assert.equal(
    random.failures['wrong-answer'] + random.failures.budget,
    50 - Math.round(50 * random.success),
  );
  const d = await turnwise(['env', 'describe', 'search', '--task-seed', '3', '--level', '2', '--gold']);
  assert.equal(d.code, 0, d.stderr);
  const w = buildSearchWorld(searchParams({ level: 2 }), 3);
  assert.equal(
    d.stdout.split('\n').slice(0, 3).join('\n'),
    `search {"level":2,"misuse":3} task seed 3\nlevel 2 (2 hops), 78 documents\nquestion: ${w.question}`,
  );
  assert.match(d.stdout, new RegExp(`answer\\(${JSON.stringify(w.answer)}\\)`));
  const j = await turnwise(['env', 'describe', 'search', '--task-seed', '3', '--json']);
  const desc = JSON.parse(j.stdout) as { question: string; gold?: unknown; spec: { tools: unknown[] } };
  assert.equal(desc.question, buildSearchWorld(searchParams({}), 3).question);
  assert.equal(desc.gold, undefined);
  assert.equal(desc.spec.tools.length, 3);
  const bad = await turnwise([
    'rollout',
    '--env',
    'search',
    '--level',
    '7',
    '--policy',
    'oracle',
    '--tasks',
    '1',
  ]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--level/);
});
