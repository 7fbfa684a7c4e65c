// The web env's apps and their verifiers: the generator (deterministic, domains and levels spread), each
// goal's words checked by brute force against the task's own data (the cheapest red shirt under $20 is
// the one the goal means), and the verifier on hand-driven episodes — the right end succeeds, a wrong
// commit is irreversible, a missing report or a stray change is a wrong answer, and the oracle repairs a
// stray edit.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { StepResult, ToolCall } from '../../../src/core/types.ts';
import { envConfig, makeEnv } from '../../../src/envs/index.ts';
import { describeWeb, type WebEnv, type WebObservation } from '../../../src/envs/web/index.ts';

const task = (seed: number, params: Record<string, unknown> = {}) => ({ ...envConfig('web', params), seed });
const webEnv = (seed: number, params: Record<string, unknown> = {}) => {
  const e = makeEnv(task(seed, params)) as unknown as WebEnv;
  e.reset(0);
  return e;
};
const step = (e: WebEnv, name: string, args: Record<string, unknown> = {}) =>
  e.step({ name, arguments: args }) as StepResult<WebObservation>;
const data = (seed: number, params: Record<string, unknown>) =>
  describeWeb(task(seed, params)) as {
    app: string;
    level: number;
    goal: string;
    data: Record<string, unknown>;
  };
const cents = (price: string) => Math.round(Number(price.slice(1)) * 100);

/** The id of the current page's element with data-k `key` (or a control named `name`). */
const idOf = (e: WebEnv, test: (a: Record<string, string | true>) => boolean) => {
  const el = e.view().doc.order.find((x) => test(x.attrs));
  assert.ok(el !== undefined, 'no such element on the page');
  return el.attrs.bid as string;
};
/** Steps the oracle until its next action would click the element with data-k `key`. */
function oracleUntil(e: WebEnv, key: string): void {
  for (let t = 0; t < 60; t++) {
    const a = e.oracleAction();
    const id = (a.arguments as { id?: string }).id;
    if (a.name === 'click' && e.view().doc.byBid.get(String(id))?.attrs['data-k'] === key) return;
    const r = e.step(a) as StepResult<WebObservation>;
    assert.equal(r.terminated, false, `the oracle ended before ${key}`);
  }
  assert.fail(`the oracle never reached ${key}`);
}
function oracleToEnd(e: WebEnv): StepResult<WebObservation> {
  for (let t = 0; t < 60; t++) {
    const r = e.step(e.oracleAction()) as StepResult<WebObservation>;
    if (r.terminated) return r;
  }
  assert.fail('the oracle did not finish');
}
/** The first variant ≥ 1 whose describe() says `what`. */
function variantWhere(domain: string, pick: (v: Record<string, string>) => boolean): number {
  for (let v = 1; v < 200; v++)
    if (pick((data(0, { domain, variant: v }).data as { variant: Record<string, string> }).variant)) return v;
  assert.fail('no such variant');
}

test('the generator is deterministic; mixed spreads domains and levels; seeds give other goals', () => {
  assert.deepEqual(describeWeb(task(7), true), describeWeb(task(7), true));
  const apps = new Set<string>();
  const levels = new Set<number>();
  const goals = new Set<string>();
  for (let s = 0; s < 30; s++) {
    const d = data(s, {});
    apps.add(d.app);
    levels.add(d.level);
    goals.add(d.goal);
  }
  assert.deepEqual([...apps].sort(), ['admin', 'booking', 'shop']);
  assert.deepEqual([...levels].sort(), [1, 2, 3]);
  assert.equal(goals.size, 30);
  for (const domain of ['shop', 'booking', 'admin'])
    for (const level of [1, 2, 3]) assert.equal(data(3, { domain, level }).level, level);
});

test('shop: the goal’s words pick out its products, by brute force over the catalog', () => {
  let superlatives = 0;
  for (let s = 0; s < 60; s++) {
    const d = data(s, { domain: 'shop' });
    const products = d.data.products as {
      id: string;
      name: string;
      category: string;
      color: string;
      price: string;
    }[];
    const goal = d.data.goal as { items: { id: string; qty: number; phrase: string }[] };
    for (const item of goal.items) {
      const m = /^the (cheapest|most expensive) (\w+) (\w+) under \$(\d+)(?: \(quantity (\d)\))?$/.exec(
        item.phrase,
      );
      if (m === null) {
        const n = /^the (\w+) (.+)$/.exec(item.phrase) as RegExpExecArray;
        const named = products.filter((p) => p.color === n[1] && p.name === n[2]);
        assert.deepEqual(
          named.map((p) => p.id),
          [item.id],
          item.phrase,
        );
        continue;
      }
      superlatives++;
      const [, which, color, category, bound, qty] = m;
      const group = products.filter((p) => p.color === color && p.category === category);
      const under = group
        .filter((p) => cents(p.price) < Number(bound) * 100)
        .sort((a, b) => cents(a.price) - cents(b.price));
      const want = which === 'cheapest' ? under[0] : under[under.length - 1];
      assert.equal(item.id, want.id, `${d.goal} (seed ${s})`);
      assert.equal(item.qty, qty === undefined ? 1 : Number(qty));
      // The words are a choice: two or more products of that colour and kind; "most expensive … under"
      // leaves a dearer one out.
      assert.ok(group.length >= 2);
      if (which === 'most expensive') assert.ok(group.some((p) => cents(p.price) >= Number(bound) * 100));
    }
    assert.match(d.goal, / by (standard|express|economy) shipping\./);
  }
  assert.ok(superlatives >= 30, `${superlatives} superlative items`);
});

test('booking: the goal’s room fits the guests and is free every night; from level 2 the cheapest such', () => {
  let distractors = 0;
  for (let s = 0; s < 60; s++) {
    const d = data(s, { domain: 'booking' });
    const rooms = d.data.rooms as {
      id: string;
      name: string;
      sleeps: number;
      price: string;
      soldOut: string[];
    }[];
    const g = d.data.goal as { room: string; checkin: string; checkout: string; guests: number };
    const nights: string[] = [];
    for (let t = Date.parse(g.checkin); t < Date.parse(g.checkout); t += 86_400_000)
      nights.push(new Date(t).toISOString().slice(0, 10));
    const free = (r: (typeof rooms)[number]) =>
      r.sleeps >= g.guests && !r.soldOut.some((n) => nights.includes(n));
    const target = rooms.find((r) => r.id === g.room)!;
    assert.ok(free(target), `seed ${s}: the goal's room is not free`);
    if (d.level === 1) {
      assert.ok(d.goal.startsWith(`Book the ${target.name} for ${g.guests} guest`));
      continue;
    }
    const cheapest = rooms.filter(free).sort((a, b) => cents(a.price) - cents(b.price))[0];
    assert.equal(target.id, cheapest.id, d.goal);
    if (rooms.some((r) => r.sleeps >= g.guests && cents(r.price) < cents(target.price))) distractors++;
  }
  assert.ok(distractors >= 20, `${distractors} goals with a cheaper fitting room that is sold out`);
});

test('admin: the goal’s words pick out exactly one user', () => {
  for (let s = 0; s < 60; s++) {
    const d = data(s, { domain: 'admin' });
    const users = d.data.users as { id: string; name: string; city: string; plan: string; status: string }[];
    const g = d.data.goal as { edits: { id: string }[]; deletes: string[] };
    const byPlan = /The (\w+)-plan user in (\w+)/.exec(d.goal);
    if (byPlan !== null) {
      const hits = users.filter((u) => u.plan === byPlan[1].toLowerCase() && u.city === byPlan[2]);
      assert.deepEqual(
        hits.map((u) => u.id),
        [g.edits[0].id],
        d.goal,
      );
    }
    const suspended = /the suspended user in (\w+)/.exec(d.goal);
    if (suspended !== null) {
      const hits = users.filter((u) => u.status === 'suspended' && u.city === suspended[1]);
      assert.deepEqual(
        hits.map((u) => u.id),
        g.deletes,
        d.goal,
      );
    }
    for (const id of [...g.edits.map((x) => x.id), ...g.deletes]) {
      const u = users.find((x) => x.id === id)!;
      if (d.goal.includes(u.name)) assert.equal(users.filter((x) => x.name === u.name).length, 1);
    }
  }
});

test('shop verifier: a wrong address in the order is irreversible; the order without its number is a wrong answer', () => {
  const variant = variantWhere('shop', (v) => v.checkout === 'one page');
  const params = { domain: 'shop', level: 3, variant };
  const e = webEnv(4, params);
  oracleUntil(e, 'place');
  const atPlace = e.snapshot();
  const goal = (describeWeb(task(4, params)) as { data: { goal: { city: string } } }).data.goal;
  // (a) another city typed in, then the order placed: it cannot be taken back.
  const city = idOf(e, (a) => a.name === 'city');
  const typed = step(e, 'type', { id: city, text: goal.city === 'Oslo' ? 'Lyon' : 'Oslo' });
  assert.equal(typed.info.met, (typed.info.goals as number) - 3); // city, order, report
  const placed = step(e, 'click', { id: idOf(e, (a) => a['data-k'] === 'place') });
  assert.equal(placed.terminated, true);
  assert.equal(placed.info.failure, 'irreversible');
  assert.match(
    String(placed.info.destroyed),
    /^order \d+ was placed with other items, address or shipping than asked$/,
  );
  assert.equal(placed.reward, 0);
  // (b) the right order, then an answer without its number.
  e.restore(atPlace);
  const right = step(e, 'click', { id: idOf(e, (a) => a['data-k'] === 'place') });
  assert.equal(right.terminated, false);
  assert.match(right.observation.url, /^\/order\/\d+$/);
  const number = right.observation.url.split('/')[2];
  assert.match(right.observation.page, new RegExp(`StaticText 'Order number: ${number}'`));
  const bare = e.snapshot();
  const done = step(e, 'answer', { text: 'done' });
  assert.deepEqual(
    [done.reward, done.info.failure, done.info.met, done.info.goals],
    [0, 'wrong-answer', (right.info.goals as number) - 1, right.info.goals],
  );
  // (c) with the number: success.
  e.restore(bare);
  const ok = step(e, 'answer', { text: `Order ${number}` });
  assert.deepEqual([ok.reward, ok.info.success, ok.info.quality], [1, true, 1]);
});

test('booking verifier: a booking that differs from the goal (breakfast) is irreversible', () => {
  const e = webEnv(2, { domain: 'booking', level: 2 });
  oracleUntil(e, 'confirm');
  const goal = (
    describeWeb(task(2, { domain: 'booking', level: 2 })) as { data: { goal: { breakfast: boolean } } }
  ).data.goal;
  const before = e.snapshot();
  // Flip breakfast as the page's widget allows (variant 0: a checkbox).
  const box = idOf(e, (a) => a.name === 'breakfast');
  const flipped = step(e, 'click', { id: box });
  assert.ok((flipped.info.quality as number) < 1);
  const r = step(e, 'click', { id: idOf(e, (a) => a['data-k'] === 'confirm') });
  assert.deepEqual([r.terminated, r.info.failure], [true, 'irreversible']);
  assert.match(String(r.info.destroyed), /^booking BK-\d+ was made with another/);
  e.restore(before);
  const ok = oracleToEnd(e);
  assert.equal(ok.reward, 1, `breakfast ${goal.breakfast}`);
});

test('admin verifier: deleting a user the goal does not name is irreversible; a stray edit is collateral the oracle puts back', () => {
  const params = { domain: 'admin', level: 1 };
  const users = (
    describeWeb(task(5, params)) as {
      data: { users: { id: string; name: string; plan: string }[]; goal: { edits: { id: string }[] } };
    }
  ).data;
  const other = users.users.find((u) => u.id !== users.goal.edits[0].id)!;
  const e = webEnv(5, params);
  const start = e.snapshot();
  const page = step(e, 'goto', { url: `/users/${other.id}/delete` });
  assert.match(page.observation.page, new RegExp(`StaticText 'Delete ${other.name} \\(`));
  const gone = step(e, 'click', { id: idOf(e, (a) => a['data-k'] === 'confirm-delete') });
  assert.deepEqual(
    [gone.terminated, gone.info.failure, gone.info.destroyed],
    [true, 'irreversible', `${other.name} (${other.id}) was deleted`],
  );
  // A stray edit: another user's plan changed and saved.
  e.restore(start);
  step(e, 'goto', { url: `/users/${other.id}/edit` });
  const plan = other.plan === 'free' ? 'Pro' : 'Free';
  step(e, 'select', { id: idOf(e, (a) => a.name === 'plan'), option: plan });
  const saved = step(e, 'click', { id: idOf(e, (a) => a['data-k'] === 'save') });
  assert.equal(saved.info.collateral, 1);
  assert.equal(saved.info.quality, -1); // (0 sub-goals met − 1 collateral) / 1 sub-goal
  const stray = e.snapshot();
  const early = step(e, 'answer', { text: 'done' });
  assert.equal(early.info.failure, 'wrong-answer');
  e.restore(stray);
  const end = oracleToEnd(e);
  assert.deepEqual([end.reward, end.info.collateral], [1, undefined]);
});

test('an answer before the goal is met is a wrong answer; quality counts what was met', () => {
  const e = webEnv(1, { domain: 'booking', level: 1 });
  const r = step(e, 'answer', { text: 'booked' });
  assert.deepEqual(
    [r.terminated, r.reward, r.info.failure, r.info.success],
    [true, 0, 'wrong-answer', false],
  );
  assert.ok((r.info.quality as number) < 0.5);
  const after = step(e, 'click', { id: '7' });
  assert.deepEqual([after.terminated, after.info.valid, after.info.error], [true, false, 'over']);
});

test('actions: each bad call refused with its category, the page unchanged; good ones as documented', () => {
  const e = webEnv(0, { domain: 'shop', misuse: 10 });
  const home = e.view().url;
  const page = (e.step({ name: 'click', arguments: { id: '1' } }) as StepResult<WebObservation>).observation
    .page;
  const q = idOf(e, (a) => a.name === 'q');
  const search = idOf(e, (a) => a['data-k'] === 'search');
  const cases: [ToolCall, string][] = [
    [{ name: 'press', arguments: {} }, 'schema'],
    [{ name: 'click', arguments: { id: 'x' } }, 'schema'],
    [{ name: 'click', arguments: { id: '9999' } }, 'no-such-element'],
    [{ name: 'type', arguments: { id: search, text: 'a' } }, 'not-a-text-box'],
    [{ name: 'select', arguments: { id: q, option: 'a' } }, 'not-a-combobox'],
    [{ name: 'goto', arguments: { url: 'https://example.com/' } }, 'not-a-path'],
    [{ name: 'back', arguments: {} }, 'no-history'],
  ];
  for (const [action, error] of cases) {
    const r = e.step(action) as StepResult<WebObservation>;
    assert.deepEqual(
      [r.info.error, r.info.valid, r.terminated, r.observation.last?.ok],
      [error, false, false, false],
    );
    assert.equal(r.observation.page, page);
  }
  assert.equal(e.view().url, home);
  // An id as an integer works as the string; submit() sends the form of the field last used.
  step(e, 'type', { id: Number(q), text: 'mug' });
  const sent = step(e, 'submit');
  assert.equal(sent.observation.url, '/search?q=mug&color=&max=&sort=relevance');
  assert.equal(step(e, 'back').observation.url, '/');
  assert.equal(
    step(e, 'goto', { url: '/nowhere' }).observation.page.split('\n')[0],
    "RootWebArea 'Page not found'",
  );
  // The empty cart has no form: nothing to submit.
  step(e, 'goto', { url: '/cart' });
  assert.equal(step(e, 'submit').info.error, 'no-form');
});

test('misuse: the third bad call ends the episode, as misperception for an id the page does not show', () => {
  const e = webEnv(0, { domain: 'admin' });
  step(e, 'press');
  step(e, 'type', { id: '1', text: 'x' });
  const third = step(e, 'click', { id: '9999' });
  assert.deepEqual(
    [third.terminated, third.info.failure, third.info.error],
    [true, 'misperception', 'no-such-element'],
  );
  const f = webEnv(0, { domain: 'admin' });
  step(f, 'press');
  step(f, 'press');
  assert.equal(step(f, 'back').info.failure, 'invalid-action');
});
