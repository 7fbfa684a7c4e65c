// The code env's generator: determinism, the reach and spread of families and levels, hand-checked
// reference outputs per family, the hidden/visible layout, the wrong programs' wrongness (on the host),
// and parameter validation.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { InputError } from '../../../src/core/errors.ts';
import {
  buildCodeWorld,
  CATEGORIES,
  codeParams,
  FAMILIES,
  hiddenCount,
  hostFunction,
  LEVELS,
  resultJson,
} from '../../../src/envs/code/index.ts';

test('the generator is deterministic: same (params, seed) ⇒ same world; other seeds differ', () => {
  const p = codeParams({});
  const a = buildCodeWorld(p, 17);
  const b = buildCodeWorld(p, 17);
  assert.equal(JSON.stringify(a), JSON.stringify(b));
  const prompts = new Set(Array.from({ length: 40 }, (_, s) => buildCodeWorld(p, s).prompt));
  assert.ok(prompts.size >= 35, `only ${prompts.size} distinct prompts in 40 seeds`);
});

test('mixed params reach every family; each (category, level) has exactly one family', () => {
  for (const c of CATEGORIES)
    for (const l of LEVELS) assert.equal(FAMILIES.filter((f) => f.category === c && f.level === l).length, 1);
  const p = codeParams({});
  const seen = new Map<string, number>();
  for (let s = 0; s < 240; s++) {
    const f = buildCodeWorld(p, s).problem.family;
    seen.set(f, (seen.get(f) ?? 0) + 1);
  }
  assert.equal(seen.size, 12);
  // Uniform over 12 families: each expected 20 times in 240; none below 8 (p < 1e-3 per family).
  for (const [f, n] of seen) assert.ok(n >= 8, `${f} drawn ${n} times`);
  // Fixed level and domain are honoured.
  for (let s = 0; s < 20; s++) {
    const w = buildCodeWorld(codeParams({ level: 2, domain: 'parsing' }), s);
    assert.deepEqual([w.problem.level, w.problem.category], [2, 'parsing']);
  }
});

test('difficulty spread: more hidden tests, longer references and larger inputs at higher levels', () => {
  const stats = LEVELS.map((level) => {
    let refLen = 0;
    let inputLen = 0;
    let n = 0;
    for (let s = 0; s < 40; s++) {
      const w = buildCodeWorld(codeParams({ level }), s);
      assert.equal(w.hidden.length, hiddenCount(level));
      refLen += w.problem.reference.length;
      inputLen += w.hidden.reduce((a, t) => a + t.argsJson.length, 0) / w.hidden.length;
      n++;
    }
    return { level, tests: hiddenCount(level), refLen: refLen / n, inputLen: inputLen / n };
  });
  assert.deepEqual(
    stats.map((s) => s.tests),
    [10, 14, 18],
  );
  assert.ok(stats[0].refLen < stats[1].refLen && stats[1].refLen < stats[2].refLen, JSON.stringify(stats));
  assert.ok(stats[0].inputLen < stats[2].inputLen, JSON.stringify(stats));
});

test('hand-checked reference outputs, one or more per family', () => {
  const ref = (family: string, pred: (name: string) => boolean = () => true) => {
    for (let s = 0; s < 200; s++) {
      const w = buildCodeWorld(codeParams({}), s);
      if (w.problem.family === family && pred(w.problem.name) && pred(w.problem.statement))
        return { f: hostFunction(w.problem.reference, w.problem.name), w };
    }
    throw new Error(`no task of ${family}`);
  };
  const rl = ref('run-length');
  const omitOne = rl.w.problem.statement.includes('except');
  assert.equal(rl.f('aaabcc'), omitOne ? 'a3bc2' : 'a3b1c2');
  assert.equal(rl.f('aaaaaaaaaaaab'), omitOne ? 'a12b' : 'a12b1');
  assert.equal(ref('longest-unique', (n) => n !== 'longestUniqueSubstring').f('abcabcbb'), 3);
  assert.equal(ref('longest-unique', (n) => n !== 'longestUniqueLength').f('pwwkew'), 'wke');
  assert.equal(ref('max-subarray', (n) => n !== 'minSubarraySum').f([-2, 1, -3, 4, -1, 2, 1, -5, 4]), 6);
  assert.equal(ref('max-subarray', (n) => n !== 'maxSubarraySum').f([3, -4, 2, -5, 1]), -7);
  assert.deepEqual(ref('rotate', (n) => n !== 'rotateRight').f([1, 2, 3, 4], 5), [2, 3, 4, 1]);
  assert.deepEqual(ref('rotate', (n) => n !== 'rotateLeft').f([1, 2, 3, 4], 1), [4, 1, 2, 3]);
  const b = ref('to-base');
  assert.equal(b.f(0), '0');
  const base = Number(b.w.problem.name.slice('toBase'.length));
  assert.equal(b.f(123456), (123456).toString(base));
  assert.deepEqual(ref('prime-factors', (n) => n !== 'distinctPrimeFactors').f(360), [2, 2, 2, 3, 3, 5]);
  assert.deepEqual(ref('prime-factors', (n) => n !== 'primeFactors').f(360), [2, 3, 5]);
  assert.deepEqual(ref('prime-factors', (n) => n !== 'distinctPrimeFactors').f(999_983), [999_983]);
  assert.equal(ref('eval-expr').f('2 * (3 + 4) - 5 * 2'), 4);
  assert.equal(ref('eval-expr').f('-(2 + 3) * 4 - 10 - 4'), -34);
  assert.equal(
    ref('parse-duration', (n) => n !== 'durationMinutes').f('1d2h30m15s'),
    86400 + 7200 + 1800 + 15,
  );
  assert.equal(ref('parse-duration', (n) => n !== 'durationSeconds').f('1d2h30m'), 1440 + 120 + 30);
  const pp = ref('parse-pairs');
  const sep = pp.w.problem.statement.match(/separated by "(.)"/)?.[1] as string;
  const eq = pp.w.problem.statement.match(/key(.)value/)?.[1] as string;
  assert.deepEqual(pp.f(`a${eq}1${sep}b${eq}-2${sep}a${eq}3`), { a: 3, b: -2 });
  const sm = ref('sum-multiples');
  const [, a, bb] = sm.w.problem.statement.match(/by (\d) or by (\d)/) as RegExpMatchArray;
  let brute = 0;
  for (let i = 1; i < 100; i++) if (i % Number(a) === 0 || i % Number(bb) === 0) brute += i;
  assert.equal(sm.f(100), brute);
  const cc = ref('count-chars');
  const set = cc.w.problem.statement.match(/one of "([a-z]+)"/)?.[1] as string;
  assert.equal(cc.f(`${set}${set.toUpperCase()}q`), set.length);
});

test('hidden tests start with the visible examples, are distinct, and the expected are the reference', () => {
  for (let s = 0; s < 60; s++) {
    const w = buildCodeWorld(codeParams({ examples: 2 }), s);
    assert.equal(w.visible.length, 2);
    assert.deepEqual(w.hidden.slice(0, 2), w.visible);
    assert.equal(new Set(w.hidden.map((t) => t.argsJson)).size, w.hidden.length);
    const f = hostFunction(w.problem.reference, w.problem.name);
    for (const t of w.hidden)
      assert.equal(resultJson(f(...(JSON.parse(t.argsJson) as unknown[]))), t.expected);
    for (const t of w.visible) assert.ok(w.prompt.includes(`→ ${t.expected}`));
  }
});

test('every wrong program fails some hidden test; every family keeps at least two', () => {
  for (let s = 0; s < 120; s++) {
    const w = buildCodeWorld(codeParams({}), s);
    assert.ok(w.wrong.length >= 2, `${w.problem.family} seed ${s}: ${w.wrong.length} wrong programs`);
    for (const src of w.wrong) {
      const f = hostFunction(src, w.problem.name);
      const fails = w.hidden.some((t) => {
        try {
          return resultJson(f(...(JSON.parse(t.argsJson) as unknown[]))) !== t.expected;
        } catch {
          return true;
        }
      });
      assert.ok(fails, `seed ${s}: a wrong program passes every hidden test:\n${src}`);
    }
  }
});

test('bad params are one-line input errors naming the field', () => {
  assert.throws(
    () => codeParams({ level: 4 }),
    (e) => e instanceof InputError && /params\.level/.test(e.message),
  );
  assert.throws(
    () => codeParams({ domain: 'graphs' }),
    (e) => e instanceof InputError && /params\.domain/.test(e.message),
  );
  assert.throws(() => codeParams({ examples: 0 }), InputError);
  assert.throws(
    () => codeParams({ nope: 1 }),
    (e) => e instanceof InputError && /nope/.test(e.message),
  );
  assert.deepEqual(codeParams({}), { level: 'mixed', domain: 'mixed', examples: 3, reward: 'binary' });
});
