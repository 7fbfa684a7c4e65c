// The code env's task families: four categories (string, array, arithmetic, parsing) × three levels.
// A family turns the task's RNG into a problem: a function name and signature, the statement (with the
// variant the seed picked: a character set, a comparison, a direction, separators …), a reference
// implementation as JavaScript source (the one source of truth: the host runs it to compute expected
// outputs, the sandbox runs it for the oracle), edge-case inputs, an input generator, and "wrong"
// programs — plausible bugs (the other variant, an off-by-one, a missing case) that the scripted
// policies use as wrong-but-valid attempts.
//
// Level, as DeepCoder-like difficulty: 1 = one loop over the input, 2 = a rule with a case to get right
// (wrap-around, runs, bases), 3 = a known algorithm (sliding window, Kadane, factorisation, a recursive
// descent parser); larger inputs and more hidden tests at higher levels (task.ts).
import type { Rng } from '../../core/rng.ts';

export type Category = 'string' | 'array' | 'arithmetic' | 'parsing';
export const CATEGORIES: readonly Category[] = ['string', 'array', 'arithmetic', 'parsing'];
export type Level = 1 | 2 | 3;
export const LEVELS: readonly Level[] = [1, 2, 3];

export interface Problem {
  family: string;
  category: Category;
  level: Level;
  /** The function to write, and its parameter names. */
  name: string;
  params: string[];
  /** What it must do, including the input constraints. */
  statement: string;
  /** `function name(...) {...}` */
  reference: string;
  /** Buggy versions of the reference (each must fail some hidden test: tested). */
  wrong: string[];
  /** Inputs every task of the family is tested on (an argument list each). */
  edges: unknown[][];
  /** A random input (an argument list). */
  input(rng: Rng): unknown[];
}

export interface Family {
  id: string;
  category: Category;
  level: Level;
  make(rng: Rng): Problem;
}

const between = (rng: Rng, lo: number, hi: number) => lo + rng.int(hi - lo + 1);
const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[rng.int(xs.length)];
const word = (rng: Rng, alphabet: string, lo: number, hi: number) => {
  const n = between(rng, lo, hi);
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[rng.int(alphabet.length)];
  return s;
};
const ints = (rng: Rng, n: number, lo: number, hi: number) =>
  Array.from({ length: n }, () => between(rng, lo, hi));

const countChars: Family = {
  id: 'count-chars',
  category: 'string',
  level: 1,
  make(rng) {
    const set = pick(rng, ['aeiou', 'xyz', 'rst', 'aeiouy', 'mn']);
    const name = 'countChars';
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['s'],
      statement: `Return how many characters of the string s are one of "${set}" (lowercase only: uppercase letters do not count). s has 0 to 30 letters a–z and A–Z.`,
      reference: `function ${name}(s) {\n  let n = 0;\n  for (const c of s) if ("${set}".includes(c)) n++;\n  return n;\n}`,
      wrong: [
        `function ${name}(s) {\n  let n = 0;\n  for (const c of s.toLowerCase()) if ("${set}".includes(c)) n++;\n  return n;\n}`,
        `function ${name}(s) {\n  let n = 0;\n  for (const c of s) if ("${set}".includes(c)) { n++; break; }\n  return n;\n}`,
      ],
      edges: [[''], [set], [set.toUpperCase()], [`${set}${set}`]],
      input: (r) => [word(r, `${set}${set.toUpperCase()}bcdfghklpqw`, 1, 30)],
    };
  },
};

const runLength: Family = {
  id: 'run-length',
  category: 'string',
  level: 2,
  make(rng) {
    const omitOne = rng.int(2) === 1;
    const name = 'runLength';
    const rule = omitOne
      ? 'each run of a repeated character becomes the character followed by the run length, except that a run of length 1 is the character alone ("aaabcc" → "a3bc2")'
      : 'each run of a repeated character becomes the character followed by the run length ("aaabcc" → "a3b1c2")';
    const emit = (run: string) => (omitOne ? `(${run} > 1 ? ${run} : '')` : run);
    const ref = `function ${name}(s) {\n  let out = '';\n  for (let i = 0; i < s.length; ) {\n    let j = i;\n    while (j < s.length && s[j] === s[i]) j++;\n    out += s[i] + ${emit('(j - i)')};\n    i = j;\n  }\n  return out;\n}`;
    const other = `function ${name}(s) {\n  let out = '';\n  for (let i = 0; i < s.length; ) {\n    let j = i;\n    while (j < s.length && s[j] === s[i]) j++;\n    out += s[i] + ${omitOne ? '(j - i)' : "(j - i > 1 ? j - i : '')"};\n    i = j;\n  }\n  return out;\n}`;
    const cap9 = `function ${name}(s) {\n  let out = '';\n  for (let i = 0; i < s.length; ) {\n    let j = i;\n    while (j < s.length && s[j] === s[i] && j - i < 9) j++;\n    out += s[i] + ${emit('(j - i)')};\n    i = j;\n  }\n  return out;\n}`;
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['s'],
      statement: `Run-length encode the string s: ${rule}. s has 0 to 40 lowercase letters; runs may be longer than 9.`,
      reference: ref,
      wrong: [other, cap9],
      edges: [[''], ['a'], ['abc'], ['aaaaaaaaaaaa'], ['aabbbc']],
      input: (r) => {
        let s = '';
        const runs = between(r, 1, 8);
        for (let i = 0; i < runs; i++) s += pick(r, ['a', 'b', 'c', 'd']).repeat(between(r, 1, 5));
        return [s];
      },
    };
  },
};

const longestUnique: Family = {
  id: 'longest-unique',
  category: 'string',
  level: 3,
  make(rng) {
    const substring = rng.int(2) === 1;
    const name = substring ? 'longestUniqueSubstring' : 'longestUniqueLength';
    const what = substring
      ? 'the longest substring of s in which no character repeats (the first one, if several are longest)'
      : 'the length of the longest substring of s in which no character repeats';
    const ret = substring ? 's.slice(bestStart, bestStart + best)' : 'best';
    const ref = `function ${name}(s) {\n  const last = new Map();\n  let start = 0, best = 0, bestStart = 0;\n  for (let i = 0; i < s.length; i++) {\n    const c = s[i];\n    if (last.has(c) && last.get(c) >= start) start = last.get(c) + 1;\n    last.set(c, i);\n    if (i - start + 1 > best) { best = i - start + 1; bestStart = start; }\n  }\n  return ${ret};\n}`;
    const distinct = substring
      ? `function ${name}(s) {\n  return [...new Set(s)].join('');\n}`
      : `function ${name}(s) {\n  return new Set(s).size;\n}`;
    const resetAll = `function ${name}(s) {\n  let seen = new Set(), start = 0, best = 0, bestStart = 0;\n  for (let i = 0; i < s.length; i++) {\n    if (seen.has(s[i])) { seen = new Set(); start = i; }\n    seen.add(s[i]);\n    if (i - start + 1 > best) { best = i - start + 1; bestStart = start; }\n  }\n  return ${ret};\n}`;
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['s'],
      statement: `Return ${what}. s has 0 to 60 lowercase letters.`,
      reference: ref,
      wrong: [distinct, resetAll],
      edges: [[''], ['a'], ['aaaa'], ['abcabcbb'], ['pwwkew'], ['abba'], ['dvdf']],
      input: (r) => [word(r, 'abcdefgh'.slice(0, between(r, 3, 8)), 5, 60)],
    };
  },
};

const sumAbove: Family = {
  id: 'sum-above',
  category: 'array',
  level: 1,
  make(rng) {
    const t = between(rng, -5, 10);
    const strict = rng.int(2) === 1;
    const op = strict ? '>' : '>=';
    const name = 'sumAbove';
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['xs'],
      statement: `Return the sum of the elements of the integer array xs that are ${strict ? 'greater than' : 'greater than or equal to'} ${t} (0 if there are none). xs has 0 to 20 integers between −20 and 20.`,
      reference: `function ${name}(xs) {\n  let s = 0;\n  for (const x of xs) if (x ${op} ${t}) s += x;\n  return s;\n}`,
      wrong: [
        `function ${name}(xs) {\n  let s = 0;\n  for (const x of xs) if (x ${strict ? '>=' : '>'} ${t}) s += x;\n  return s;\n}`,
        `function ${name}(xs) {\n  let s = 0;\n  for (let i = 1; i < xs.length; i++) if (xs[i] ${op} ${t}) s += xs[i];\n  return s;\n}`,
      ],
      edges: [[[]], [[t]], [[t, t + 1, t - 1]], [[-20, 20]]],
      input: (r) => [ints(r, between(r, 1, 20), -20, 20)],
    };
  },
};

const rotate: Family = {
  id: 'rotate',
  category: 'array',
  level: 2,
  make(rng) {
    const left = rng.int(2) === 1;
    const name = left ? 'rotateLeft' : 'rotateRight';
    const body = left
      ? 'return xs.slice(r).concat(xs.slice(0, r));'
      : 'return xs.slice(xs.length - r).concat(xs.slice(0, xs.length - r));';
    const ref = `function ${name}(xs, k) {\n  if (xs.length === 0) return [];\n  const r = k % xs.length;\n  ${body}\n}`;
    const noMod = `function ${name}(xs, k) {\n  const r = k;\n  ${body}\n}`;
    const otherWay = `function ${name}(xs, k) {\n  if (xs.length === 0) return [];\n  const r = k % xs.length;\n  ${left ? 'return xs.slice(xs.length - r).concat(xs.slice(0, xs.length - r));' : 'return xs.slice(r).concat(xs.slice(0, r));'}\n}`;
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['xs', 'k'],
      statement: `Return a new array: xs rotated ${left ? 'left' : 'right'} by k positions (${left ? '[1,2,3,4] by 1 → [2,3,4,1]' : '[1,2,3,4] by 1 → [4,1,2,3]'}). xs has 0 to 15 integers; 0 ≤ k ≤ 50, and k may exceed the length.`,
      reference: ref,
      wrong: [noMod, otherWay],
      edges: [
        [[], 3],
        [[1], 5],
        [[1, 2, 3], 0],
        [[1, 2, 3], 3],
        [[1, 2, 3, 4, 5], 7],
        [[1, 2, 3, 4], 1],
      ],
      input: (r) => {
        const n = between(r, 1, 15);
        return [ints(r, n, 0, 99), r.int(3) === 0 ? between(r, n, 50) : between(r, 0, n)];
      },
    };
  },
};

const maxSubarray: Family = {
  id: 'max-subarray',
  category: 'array',
  level: 3,
  make(rng) {
    const minimum = rng.int(2) === 1;
    const name = minimum ? 'minSubarraySum' : 'maxSubarraySum';
    const [best, pickFn] = minimum ? ['smallest', 'Math.min'] : ['largest', 'Math.max'];
    const ref = `function ${name}(xs) {\n  let cur = xs[0], best = xs[0];\n  for (let i = 1; i < xs.length; i++) {\n    cur = ${pickFn}(xs[i], cur + xs[i]);\n    best = ${pickFn}(best, cur);\n  }\n  return best;\n}`;
    const allowEmpty = `function ${name}(xs) {\n  let cur = 0, best = 0;\n  for (const x of xs) {\n    cur = ${pickFn}(0, cur + x);\n    best = ${pickFn}(best, cur);\n  }\n  return best;\n}`;
    const total = `function ${name}(xs) {\n  return xs.reduce((a, b) => a + b, 0);\n}`;
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['xs'],
      statement: `Return the ${best} sum of a non-empty contiguous subarray of xs. xs has 1 to 40 integers between −50 and 50.`,
      reference: ref,
      wrong: [allowEmpty, total],
      edges: [
        [[5]],
        [[-3]],
        [[-2, -1, -3]],
        [[2, 1, 3]],
        [[-2, 1, -3, 4, -1, 2, 1, -5, 4]],
        [[2, -1, -2, 3]],
      ],
      input: (r) => [ints(r, between(r, 1, 40), -50, 50)],
    };
  },
};

const sumMultiples: Family = {
  id: 'sum-multiples',
  category: 'arithmetic',
  level: 1,
  make(rng) {
    const a = between(rng, 2, 5);
    const b = between(rng, a + 1, 9);
    const name = 'sumMultiples';
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['n'],
      statement: `Return the sum of the positive integers below n (strictly less than n) that are divisible by ${a} or by ${b}. 0 ≤ n ≤ 1000.`,
      reference: `function ${name}(n) {\n  let s = 0;\n  for (let i = 1; i < n; i++) if (i % ${a} === 0 || i % ${b} === 0) s += i;\n  return s;\n}`,
      wrong: [
        `function ${name}(n) {\n  let s = 0;\n  for (let i = 1; i <= n; i++) if (i % ${a} === 0 || i % ${b} === 0) s += i;\n  return s;\n}`,
        `function ${name}(n) {\n  let s = 0;\n  for (let i = 1; i < n; i += ${a}) s += i;\n  for (let i = ${b}; i < n; i += ${b}) s += i;\n  return s;\n}`,
      ],
      edges: [[0], [1], [a], [b], [a * b], [a * b + 1]],
      input: (r) => [between(r, 2, 1000)],
    };
  },
};

const toBase: Family = {
  id: 'to-base',
  category: 'arithmetic',
  level: 2,
  make(rng) {
    const base = pick(rng, [2, 3, 5, 7, 8, 12, 16]);
    const name = `toBase${base}`;
    const ref = `function ${name}(n) {\n  const digits = '0123456789abcdef';\n  if (n === 0) return '0';\n  let s = '';\n  while (n > 0) { s = digits[n % ${base}] + s; n = Math.floor(n / ${base}); }\n  return s;\n}`;
    const noZero = `function ${name}(n) {\n  const digits = '0123456789abcdef';\n  let s = '';\n  while (n > 0) { s = digits[n % ${base}] + s; n = Math.floor(n / ${base}); }\n  return s;\n}`;
    const reversed = `function ${name}(n) {\n  const digits = '0123456789abcdef';\n  if (n === 0) return '0';\n  let s = '';\n  while (n > 0) { s += digits[n % ${base}]; n = Math.floor(n / ${base}); }\n  return s;\n}`;
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['n'],
      statement: `Return the non-negative integer n written in base ${base} as a string, most significant digit first, digits 0–9 then lowercase a–f, no leading zeros ("0" for 0). 0 ≤ n ≤ 10^6.`,
      reference: ref,
      wrong: [noZero, reversed],
      edges: [[0], [1], [base - 1], [base], [base * base + 1], [1_000_000]],
      input: (r) => [between(r, 0, r.int(2) === 0 ? 999 : 1_000_000)],
    };
  },
};

const primeFactors: Family = {
  id: 'prime-factors',
  category: 'arithmetic',
  level: 3,
  make(rng) {
    const distinct = rng.int(2) === 1;
    const name = distinct ? 'distinctPrimeFactors' : 'primeFactors';
    const push = distinct ? 'if (out[out.length - 1] !== p) out.push(p);' : 'out.push(p);';
    const ref = `function ${name}(n) {\n  const out = [];\n  for (let p = 2; p * p <= n; p++) {\n    while (n % p === 0) { ${push} n = n / p; }\n  }\n  if (n > 1) ${distinct ? 'if (out[out.length - 1] !== n) out.push(n);' : 'out.push(n);'}\n  return out;\n}`;
    const other = `function ${name}(n) {\n  const out = [];\n  for (let p = 2; p * p <= n; p++) {\n    while (n % p === 0) { ${distinct ? 'out.push(p);' : 'if (out[out.length - 1] !== p) out.push(p);'} n = n / p; }\n  }\n  if (n > 1) out.push(n);\n  return out;\n}`;
    const dropLast = `function ${name}(n) {\n  const out = [];\n  for (let p = 2; p * p <= n; p++) {\n    while (n % p === 0) { ${push} n = n / p; }\n  }\n  return out;\n}`;
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['n'],
      statement: `Return the prime factors of n in ascending order${distinct ? ', each prime once (12 → [2, 3])' : ', each as many times as it divides n (12 → [2, 2, 3])'}. 2 ≤ n ≤ 10^6.`,
      reference: ref,
      wrong: [other, dropLast],
      edges: [[2], [12], [97], [1024], [999_983], [360]],
      input: (r) => [between(r, 2, r.int(2) === 0 ? 500 : 1_000_000)],
    };
  },
};

const parsePairs: Family = {
  id: 'parse-pairs',
  category: 'parsing',
  level: 1,
  make(rng) {
    const sep = pick(rng, [';', ',', '&']);
    const eq = pick(rng, ['=', ':']);
    const name = 'parsePairs';
    const ref = `function ${name}(s) {\n  const out = {};\n  if (s === '') return out;\n  for (const part of s.split('${sep}')) {\n    const [k, v] = part.split('${eq}');\n    out[k] = Number(v);\n  }\n  return out;\n}`;
    const strings = `function ${name}(s) {\n  const out = {};\n  if (s === '') return out;\n  for (const part of s.split('${sep}')) {\n    const [k, v] = part.split('${eq}');\n    out[k] = v;\n  }\n  return out;\n}`;
    const noEmpty = `function ${name}(s) {\n  const out = {};\n  for (const part of s.split('${sep}')) {\n    const [k, v] = part.split('${eq}');\n    out[k] = Number(v);\n  }\n  return out;\n}`;
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['s'],
      statement: `s is a list of key${eq}value pairs separated by "${sep}" (e.g. "a${eq}1${sep}b${eq}-2"); keys are lowercase words, values integers. Return an object mapping each key to its value as a number, in the order of s; a later pair overrides an earlier one with the same key; "" gives {}.`,
      reference: ref,
      wrong: [strings, noEmpty],
      edges: [[''], [`a${eq}1`], [`x${eq}-5${sep}y${eq}0`], [`k${eq}1${sep}k${eq}2`]],
      input: (r) => {
        const n = between(r, 1, 6);
        const parts = Array.from(
          { length: n },
          () => `${word(r, 'abcdefgh', 1, 3)}${eq}${between(r, -99, 99)}`,
        );
        return [parts.join(sep)];
      },
    };
  },
};

const parseDuration: Family = {
  id: 'parse-duration',
  category: 'parsing',
  level: 2,
  make(rng) {
    const minutes = rng.int(2) === 1;
    const unit = minutes ? 'minutes' : 'seconds';
    const name = minutes ? 'durationMinutes' : 'durationSeconds';
    const [d, h, m, s] = minutes ? [1440, 60, 1, 0] : [86400, 3600, 60, 1];
    const units = minutes ? 'd, h, m' : 'd, h, m, s';
    const table = minutes ? `{ d: ${d}, h: ${h}, m: ${m} }` : `{ d: ${d}, h: ${h}, m: ${m}, s: ${s} }`;
    const ref = `function ${name}(text) {\n  const unit = ${table};\n  let total = 0;\n  for (const [, n, u] of text.matchAll(/(\\d+)([a-z])/g)) total += Number(n) * unit[u];\n  return total;\n}`;
    const hours60 = `function ${name}(text) {\n  const unit = ${table.replace(`h: ${h}`, `h: ${minutes ? 100 : 6000}`)};\n  let total = 0;\n  for (const [, n, u] of text.matchAll(/(\\d+)([a-z])/g)) total += Number(n) * unit[u];\n  return total;\n}`;
    const oneDigit = `function ${name}(text) {\n  const unit = ${table};\n  let total = 0;\n  for (const [, n, u] of text.matchAll(/(\\d)([a-z])/g)) total += Number(n) * unit[u];\n  return total;\n}`;
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['text'],
      statement: `text is a duration such as "1d2h30m${minutes ? '' : '15s'}": numbers each followed by a unit (${units}), largest unit first, each unit at most once, some left out. Return the total number of ${unit}. Numbers have 1 to 3 digits; "" gives 0.`,
      reference: ref,
      wrong: [hours60, oneDigit],
      edges: [[''], ['1h'], ['10m'], ['2d'], [minutes ? '1d1h1m' : '1d1h1m1s'], ['100h']],
      input: (r) => {
        const us = minutes ? ['d', 'h', 'm'] : ['d', 'h', 'm', 's'];
        let t = '';
        for (const u of us) if (r.int(2) === 1) t += `${between(r, 1, r.int(3) === 0 ? 999 : 59)}${u}`;
        return [t === '' ? '5m' : t];
      },
    };
  },
};

const evalExpr: Family = {
  id: 'eval-expr',
  category: 'parsing',
  level: 3,
  make(rng) {
    const name = pick(rng, ['evaluate', 'calc', 'evalExpr']);
    const ref = `function ${name}(s) {\n  let i = 0;\n  const peek = () => s[i];\n  function number() {\n    let j = i;\n    while (i < s.length && s[i] >= '0' && s[i] <= '9') i++;\n    return Number(s.slice(j, i));\n  }\n  function factor() {\n    if (peek() === '(') { i++; const v = expr(); i++; return v; }\n    if (peek() === '-') { i++; return -factor(); }\n    return number();\n  }\n  function term() {\n    let v = factor();\n    while (peek() === '*') { i++; v *= factor(); }\n    return v;\n  }\n  function expr() {\n    let v = term();\n    while (peek() === '+' || peek() === '-') { const op = s[i++]; const t = term(); v = op === '+' ? v + t : v - t; }\n    return v;\n  }\n  s = s.replace(/ /g, '');\n  return expr();\n}`;
    const leftToRight = `function ${name}(s) {\n  s = s.replace(/ /g, '');\n  let i = 0;\n  function atom() {\n    if (s[i] === '(') { i++; const v = run(); i++; return v; }\n    if (s[i] === '-') { i++; return -atom(); }\n    let j = i;\n    while (i < s.length && s[i] >= '0' && s[i] <= '9') i++;\n    return Number(s.slice(j, i));\n  }\n  function run() {\n    let v = atom();\n    while (i < s.length && s[i] !== ')') { const op = s[i++]; const t = atom(); v = op === '+' ? v + t : op === '-' ? v - t : v * t; }\n    return v;\n  }\n  return run();\n}`;
    const noParens = `function ${name}(s) {\n  const terms = s.replace(/[ ()]/g, '').split('+');\n  return terms.reduce((a, t) => a + t.split('*').reduce((p, f) => p * Number(f), 1), 0);\n}`;
    return {
      family: this.id,
      category: this.category,
      level: this.level,
      name,
      params: ['s'],
      statement:
        'Evaluate the integer arithmetic expression s: non-negative integer literals, binary + - *, unary minus, parentheses, spaces anywhere; * binds tighter than + and -, which are left-associative. Return the value (a number). s has at most 60 characters and is well-formed.',
      reference: ref,
      wrong: [leftToRight, noParens],
      edges: [
        ['7'],
        ['1 + 2 * 3'],
        ['(1 + 2) * 3'],
        ['10 - 4 - 3'],
        ['-(2 + 3) * 4'],
        ['2 * (3 + 4) - 5 * 2'],
      ],
      input: (r) => [expression(r, 3)],
    };
  },
};

function expression(rng: Rng, depth: number): string {
  if (depth === 0 || rng.int(3) === 0) return String(between(rng, 0, 20));
  const op = pick(rng, [' + ', ' - ', ' * ']);
  const a = expression(rng, depth - 1);
  const b = expression(rng, depth - 1);
  const s = `${a}${op}${b}`;
  return rng.int(3) === 0 ? `(${s})` : s;
}

export const FAMILIES: readonly Family[] = [
  countChars,
  runLength,
  longestUnique,
  sumAbove,
  rotate,
  maxSubarray,
  sumMultiples,
  toBase,
  primeFactors,
  parsePairs,
  parseDuration,
  evalExpr,
];
