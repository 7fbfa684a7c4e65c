// The hand-written trajectory check agrees with the zod schema: whatever it accepts, zod accepts and
// returns the same value (key order included); what zod refuses, it refuses. Valid lines of the common
// shape take the fast path (otherwise it would be correct and useless).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { FAILURE_KINDS } from '../../src/core/types.ts';
import { fastTrajectory } from '../../src/store/fast-trajectory.ts';
import { TrajectorySchema } from '../../src/store/schema.ts';

const failure = fc.constantFrom(...FAILURE_KINDS);
const num = fc.double({ noNaN: true, noDefaultInfinity: true });

/** A valid trajectory line of the common shape, as JSON text would give it. */
const trajectory = fc
  .record({
    id: fc.string(),
    policy: fc.string(),
    env: fc.string({ minLength: 1 }),
    // (A __proto__ key is valid but left to zod on purpose: fast-trajectory.ts task().)
    params: fc.dictionary(
      fc.string().filter((k) => k !== '__proto__'),
      fc.jsonValue(),
    ),
    seed: fc.integer(),
    extra: fc.nat(5),
    revealBudget: fc.boolean(),
    turns: fc.array(
      fc.record(
        {
          t: fc.nat(),
          observation: fc.jsonValue(),
          action: fc.jsonValue(),
          reward: num,
          logp: fc.option(num),
          info: fc.record({ success: fc.boolean(), failure, valid: fc.boolean() }, { requiredKeys: [] }),
          forced: fc.boolean(),
        },
        { requiredKeys: ['t', 'observation', 'action', 'reward', 'logp', 'info'] },
      ),
      { maxLength: 6 },
    ),
    success: fc.boolean(),
    ret: num,
    firstSuccessTurn: fc.option(fc.integer({ min: 1, max: 1000 })),
    end: fc.constantFrom('terminated', 'truncated', 'error'),
    failure: fc.option(failure),
    error: fc.option(fc.string()),
  })
  .map((r) => ({
    id: r.id,
    task: { env: r.env, params: r.params, seed: r.seed },
    policy: r.policy,
    budget: r.turns.length + r.extra + (r.turns.length + r.extra === 0 ? 1 : 0),
    revealBudget: r.revealBudget,
    turns: r.turns,
    outcome: {
      success: r.success,
      return: r.ret,
      turns: r.turns.length,
      firstSuccessTurn: r.firstSuccessTurn,
      end: r.end,
      failure: r.failure,
      ...(r.error === null ? {} : { error: r.error }),
    },
  }));

/** Both readers on a copy of the same parsed line (each may change what it is given). */
function both(json: string) {
  const fast = fastTrajectory(JSON.parse(json));
  const slow = TrajectorySchema.safeParse(JSON.parse(json));
  return { fast, slow };
}

function agree(json: string): boolean {
  const { fast, slow } = both(json);
  if (fast === undefined) return true;
  assert.ok(slow.success, `fast accepted what zod refuses: ${json}`);
  assert.deepEqual(fast, slow.data);
  // −∞ does not survive JSON.stringify; compare with it spelled out.
  const text = (v: unknown) => JSON.stringify(v, (_k, x) => (x === Number.NEGATIVE_INFINITY ? '-inf' : x));
  assert.equal(text(fast), text(slow.data));
  return true;
}

test('valid lines of the common shape: the fast path takes them and returns what zod returns', () => {
  fc.assert(
    fc.property(trajectory, (t) => {
      const json = JSON.stringify(t);
      const { fast, slow } = both(json);
      assert.ok(slow.success, json);
      assert.notEqual(fast, undefined, `fast path refused a valid line: ${json}`);
      return agree(json);
    }),
    { numRuns: 400 },
  );
});

/** Every place in a value (path of keys and indices). */
function places(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (v === null || typeof v !== 'object') return [at];
  const keys = Array.isArray(v) ? v.map((_, i) => i) : Object.keys(v);
  return [at, ...keys.flatMap((k) => places((v as Record<string, unknown>)[k], [...at, k]))];
}

function mutate(v: unknown, path: (string | number)[], how: 'set' | 'delete', to: unknown): unknown {
  const copy = JSON.parse(JSON.stringify(v));
  if (path.length === 0) return to;
  let o = copy;
  for (const k of path.slice(0, -1)) o = o[k];
  const last = path[path.length - 1];
  if (how === 'delete') {
    if (Array.isArray(o)) o.splice(last as number, 1);
    else delete o[last];
  } else o[last] = to;
  return copy;
}

test('mutated lines (a value replaced, a key deleted or added): never accepted unless zod accepts', () => {
  const strange = fc.oneof(
    fc.jsonValue(),
    fc.constantFrom(-1, 0, 1.5, 2 ** 53, '', 'x', null, true, [], {}, 'error', 'budget', 99, 1000),
  );
  let refused = 0;
  fc.assert(
    fc.property(
      trajectory,
      fc.nat(),
      fc.constantFrom<'set' | 'delete' | 'add'>('set', 'delete', 'add'),
      strange,
      (t, pick, how, to) => {
        const all = places(t);
        const path = all[pick % all.length];
        let target: unknown = t;
        for (const k of path) target = (target as Record<string, unknown>)[k];
        const isObject = typeof target === 'object' && target !== null && !Array.isArray(target);
        const changed =
          how === 'add' && isObject
            ? mutate(t, [...path, 'extraKey'], 'set', to)
            : mutate(t, path, how === 'add' ? 'set' : how, to);
        const json = JSON.stringify(changed);
        if (json === undefined) return true;
        const { fast, slow } = both(json);
        if (!slow.success) {
          refused++;
          assert.equal(fast, undefined, `fast accepted what zod refuses: ${json}`);
        }
        return agree(json);
      },
    ),
    { numRuns: 1500 },
  );
  assert.ok(refused > 300, `only ${refused} of the mutants were invalid`);
});

test('hand-picked lines: each invalid one is refused, each unusual valid one is left to zod', () => {
  const base = {
    id: 'r0',
    task: { env: 'frozenlake', params: { map: '4x4' }, seed: 0 },
    policy: 'random',
    budget: 2,
    revealBudget: false,
    turns: [{ t: 0, observation: 0, action: 1, reward: 0, logp: null, info: {} }],
    outcome: {
      success: false,
      return: 0,
      turns: 1,
      firstSuccessTurn: null,
      end: 'terminated',
      failure: 'irreversible',
    },
  };
  const fast = fastTrajectory(structuredClone(base));
  assert.equal(fast?.turns[0].logp, Number.NEGATIVE_INFINITY);
  const invalid: ((b: typeof base) => unknown)[] = [
    (b) => ({ ...b, budget: 0 }),
    (b) => ({ ...b, outcome: { ...b.outcome, turns: 2 } }),
    (b) => ({ ...b, task: { ...b.task, seed: 1.5 } }),
    (b) => ({ ...b, task: { ...b.task, env: '' } }),
    (b) => ({ ...b, outcome: { ...b.outcome, failure: 'boredom' } }),
    (b) => ({ ...b, outcome: { ...b.outcome, firstSuccessTurn: 0 } }),
    (b) => ({ ...b, turns: [{ ...b.turns[0], t: -1 }] }),
    (b) => ({ ...b, turns: [{ ...b.turns[0], info: { valid: 'no' } }] }),
    (b) => ({ ...b, turns: [{ ...b.turns[0], logp: '0' }] }),
    (b) => ({ ...b, budget: 0.5 }),
    (b) => ({
      ...b,
      budget: 1,
      turns: [b.turns[0], { ...b.turns[0], t: 1 }],
      outcome: { ...b.outcome, turns: 2 },
    }),
  ];
  for (const f of invalid) {
    const line = f(structuredClone(base));
    assert.equal(TrajectorySchema.safeParse(structuredClone(line)).success, false, JSON.stringify(line));
    assert.equal(fastTrajectory(line), undefined, JSON.stringify(line));
  }
  // Valid, but not the common shape: zod strips the unknown key and reorders; the fast path declines.
  const unusual = [
    { ...base, note: 'x' },
    Object.fromEntries(Object.entries(base).reverse()),
    { ...base, turns: [{ ...base.turns[0], info: { step: 3 } }] },
    { ...base, turns: [{ ...base.turns[0], trace: { text: 'go' } }] },
  ];
  for (const line of unusual) {
    assert.equal(TrajectorySchema.safeParse(structuredClone(line)).success, true);
    assert.equal(fastTrajectory(line), undefined);
  }
});
