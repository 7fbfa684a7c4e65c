// The QuickJS sandbox: escapes find nothing, infinite loops, memory bombs and deep recursion end within
// their limit as failed tests, the wasm memory stays bounded, no runtime outlives an attempt, results are
// deterministic (fuel, seeded Math.random), and a crash of the module is contained and recovered from.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DefaultIntrinsics } from 'quickjs-emscripten';
import {
  DEFAULT_SANDBOX_LIMITS,
  INTRINSICS,
  liveSandboxes,
  runAttempt,
  sandboxLoads,
  sandboxMemoryBytes,
  sandboxModule,
  WASM_MEMORY_PAGES,
} from '../../../src/envs/code/index.ts';

const tests = [{ args: '[1,2]' }, { args: '[3,4]' }, { args: '[5,6]' }];
const run = async (code: string, limits = DEFAULT_SANDBOX_LIMITS) => {
  const r = runAttempt(await sandboxModule(), code, 'add', tests, 7, limits);
  assert.equal(liveSandboxes(), 0, 'a runtime outlived its attempt');
  return r;
};

test('a correct program returns every result; const and arrow definitions are found', async () => {
  const r = await run('function add(a, b) { return a + b; }');
  assert.deepEqual(
    r.tests.map((t) => [t.status, t.got]),
    [
      ['returned', '3'],
      ['returned', '7'],
      ['returned', '11'],
    ],
  );
  assert.equal(r.error, undefined);
  const arrow = await run('const add = (a, b) => [a, b];');
  assert.deepEqual(
    arrow.tests.map((t) => t.got),
    ['[1,2]', '[3,4]', '[5,6]'],
  );
  const missing = await run('function sub(a, b) { return a - b; }');
  assert.equal(missing.error?.kind, 'missing');
  assert.ok(missing.tests.every((t) => t.status === 'not-run'));
  const syntax = await run('function add(a, b) { return a + ');
  assert.deepEqual([syntax.error?.kind, /SyntaxError/.test(syntax.error?.message ?? '')], ['compile', true]);
});

test('sandbox escapes find nothing: process, require, fetch are not defined; import() only gives a promise', async () => {
  for (const [code, what] of [
    ["function add() { return this.constructor.constructor('return process')(); }", 'process'],
    ["function add() { return Function('return process')().env; }", 'process'],
    ["function add() { return require('fs').readFileSync('/etc/passwd', 'utf8'); }", 'require'],
    ["function add() { return fetch('http://127.0.0.1:1/'); }", 'fetch'],
    ['function add() { return setTimeout(() => 0, 1); }', 'setTimeout'],
    ['function add() { return Date.now(); }', 'Date'],
  ]) {
    const r = await run(code);
    assert.ok(
      r.tests.every((t) => t.status === 'error' && t.error === `ReferenceError: '${what}' is not defined`),
      `${code}: ${JSON.stringify(r.tests)}`,
    );
  }
  // A top-level escape is the attempt's own error.
  const top = await run("this.constructor.constructor('return process')().exit(1)");
  assert.deepEqual(top.error, { kind: 'compile', message: "ReferenceError: 'process' is not defined" });
  // import() has no module loader: a promise that never resolves, serialised as {}.
  const imp = await run("function add() { return import('fs'); }");
  assert.deepEqual(
    imp.tests.map((t) => t.got),
    ['{}', '{}', '{}'],
  );
  const stat = await run("import fs from 'fs'; function add() { return 1; }");
  assert.equal(stat.error?.kind, 'compile');
  // The built-ins are QuickJS's defaults but Date.
  assert.deepEqual(INTRINSICS, { ...DefaultIntrinsics, Date: false });
  // The global object has no host bindings at all.
  const globals = await run(
    "function add() { return ['process','require','module','fetch','std','os','WebAssembly','XMLHttpRequest','Deno','Bun'].filter((k) => typeof globalThis[k] !== 'undefined'); }",
  );
  assert.equal(globals.tests[0].got, '[]');
});

test('an infinite loop runs out of fuel in the first test; the other tests are not run', async () => {
  for (const code of [
    'function add() { while (true) {} }',
    'function add() { for (;;) { try { while (true) {} } catch (e) {} } }',
    'function add() { let n = 0; for (;;) n = [n].map((x) => x + 1)[0]; }',
  ]) {
    const r = await run(code);
    assert.deepEqual(
      r.tests.map((t) => t.status),
      ['timeout', 'not-run', 'not-run'],
      code,
    );
    assert.ok(
      r.fuel > DEFAULT_SANDBOX_LIMITS.testFuel && r.fuel <= DEFAULT_SANDBOX_LIMITS.testFuel + 2,
      String(r.fuel),
    );
  }
  // Catching stack overflows and recursing again spends its time building exceptions, between polls of
  // the interrupt handler: the wall-clock backstop ends it (later than the deadline, by one poll).
  const t0 = Date.now();
  const slow = await run('function add() { function f() { try { f(); } catch (e) { f(); } } f(); }', {
    ...DEFAULT_SANDBOX_LIMITS,
    deadlineMs: 300,
  });
  assert.deepEqual(
    slow.tests.map((t) => t.status),
    ['timeout', 'not-run', 'not-run'],
  );
  assert.ok(Date.now() - t0 >= 300);
  // At top level, the whole attempt's fuel.
  const top = await run('while (true) {}');
  assert.equal(top.error?.kind, 'timeout');
  assert.equal(top.fuel, DEFAULT_SANDBOX_LIMITS.attemptFuel + 1);
});

test('memory bombs end as out of memory or out of fuel, and the wasm memory never exceeds its maximum', async () => {
  const max = WASM_MEMORY_PAGES.maximum * 65536;
  const bombs: [string, string[]][] = [
    ['function add() { let a = []; for (;;) a.push(new Array(1e6)); }', ['timeout', 'memory']],
    ["function add() { let a = []; for (;;) a.push('x'.repeat(1e5) + a.length); }", ['memory']],
    ['function add() { let a = []; for (;;) a.push(new Uint8Array(1e6)); }', ['memory']],
    ["function add() { return 'x'.repeat(1e9).length; }", ['memory']],
  ];
  for (const [code, kinds] of bombs) {
    const r = await run(code);
    assert.ok(kinds.includes(r.tests[0].status), `${code}: ${JSON.stringify(r.tests[0])}`);
    assert.ok(sandboxMemoryBytes() <= max, `${sandboxMemoryBytes()} > ${max}`);
  }
  // The sandbox still works after the bombs, on the same module.
  const loads = sandboxLoads();
  assert.equal((await run('function add(a, b) { return a * b; }')).tests[2].got, '30');
  assert.equal(sandboxLoads(), loads);
});

test('deep recursion and deeply nested source are stack overflows inside QuickJS, not host crashes', async () => {
  const loads = sandboxLoads();
  const r = await run('function add(a) { return add(a) + 1; }');
  assert.ok(r.tests.every((t) => t.status === 'error' && t.error === 'InternalError: stack overflow'));
  for (const code of [
    "function add() { return eval('['.repeat(1e5)); }",
    "function add() { return eval('('.repeat(3e3)); }",
    "function add() { return eval('f('.repeat(3e3)); }",
    'function add() { let o = {}; for (let i = 0; i < 1e4; i++) o = { o }; return JSON.stringify(o).length; }',
  ]) {
    const n = await run(code);
    assert.ok(
      n.tests.every((t) => t.status === 'error' && /stack overflow/.test(t.error ?? '')),
      `${code}: ${JSON.stringify(n.tests)}`,
    );
  }
  assert.equal(sandboxLoads(), loads, 'no module was lost');
});

test('a host-level crash poisons only the module: the attempt fails as crash, a fresh module follows', async () => {
  // With QuickJS's stack limit raised to 256 KB, parser nesting overflows V8's own stack first and
  // QuickJS then aborts on freeing the runtime (see sandbox.ts) — the failure the small limit prevents.
  const loose = { ...DEFAULT_SANDBOX_LIMITS, stackBytes: 256 << 10 };
  const loads = sandboxLoads();
  const m = await sandboxModule();
  const r = runAttempt(m, "eval('['.repeat(3e3))", 'add', tests, 7, loose);
  assert.equal(r.error?.kind, 'crash');
  assert.match(r.error?.message ?? '', /Maximum call stack size exceeded|Aborted\(/);
  assert.equal(liveSandboxes(), 0);
  const next = sandboxModule();
  assert.ok(next instanceof Promise, 'the poisoned module is dropped');
  const fresh = await next;
  assert.notEqual(fresh, m);
  assert.equal(sandboxLoads(), loads + 1);
  assert.equal(runAttempt(fresh, 'const add = (a, b) => a - b;', 'add', tests, 7).tests[0].got, '-1');
});

test('verdicts are deterministic: fuel counts work, Math.random is seeded per attempt', async () => {
  const code =
    'function add(a, b) { let s = 0; for (let i = 0; i < 6e4 * a; i++) s += i % 7; return [s, Math.random()]; }';
  const a = await run(code);
  const b = await run(code);
  assert.deepEqual(a, b);
  // 6e4 and 3 × 6e4 iterations fit in a test's fuel (≈ 5000 iterations per unit), 5 × 6e4 do not — on any machine, whatever its load.
  assert.deepEqual(
    a.tests.map((t) => t.status),
    ['returned', 'returned', 'timeout'],
  );
  const other = runAttempt(await sandboxModule(), code, 'add', tests, 8);
  assert.notEqual(other.tests[0].got, a.tests[0].got, 'another seed, another Math.random');
});

test('a result longer than maxOutput is cut; an undefined result and a thrown non-Error are reported', async () => {
  const long = await run("function add() { return 'y'.repeat(5000); }");
  assert.equal(long.tests[0].got?.length, DEFAULT_SANDBOX_LIMITS.maxOutput);
  const undef = await run('function add() {}');
  assert.equal(undef.tests[0].got, 'undefined');
  const thrown = await run('function add() { throw 42; }');
  assert.equal(thrown.tests[0].error, 'thrown: 42');
});
