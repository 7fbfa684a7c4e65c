// The code env's sandbox: a separate JavaScript engine (QuickJS compiled to WebAssembly,
// quickjs-emscripten) in which untrusted code runs against test cases. What the agent's code can reach
// is the bare ECMAScript global object: no file system, no network, no `process`, no `require`, no
// module loader (so `import()` only rejects), no `fetch`, no timers, no `Date` (left out so that results
// do not depend on the clock), and a `Math.random` seeded per attempt.
//
// Limits, and why each is enforced where it is (measured on quickjs-emscripten 0.32.0, QuickJS
// 2025-09-13):
// - time: `fuel`, the number of calls of the interrupt handler (QuickJS calls it every ~10⁴ polls at
//   backward jumps and calls), per test and per attempt. It counts executed code, not the clock, so a
//   verdict does not depend on the machine's load (≈ 5000 loop iterations per unit). A wall-clock
//   deadline per attempt is a backstop for code that spends its time between polls — recursing again
//   from every caught stack overflow builds one exception per call, ~0.3 ms each — and, checked only at
//   a poll, it may be overshot by one poll's work; such code times out either way.
// - memory: the WebAssembly memory of the module is created by us with a fixed `maximum`, so the engine
//   cannot grow past it and an allocation beyond it is QuickJS's "out of memory". QuickJS's own
//   `setMemoryLimit` is set too but, in this build (no malloc_usable_size), it counts allocations rather
//   than bytes: 1000 × new Uint8Array(1e5) passed a 16 MB limit.
// - stack: `setMaxStackSize` counts Emscripten's shadow stack, while the wasm frames also use V8's
//   native stack; QuickJS's parser uses much more native stack per shadow byte, and at 64 KB
//   `eval('['.repeat(3e3))` overflowed V8's stack first. 32 KB keeps every pattern we tried
//   (recursion, parser nesting, toJSON/sort callbacks, nested arrays) inside QuickJS (a recursion depth
//   of ~170 plain calls).
// Whatever still escapes as a host exception (a V8 stack overflow, an Emscripten abort — QuickJS asserts
// on freeing a runtime after some parser overflows) poisons the module: the attempt fails with kind
// `crash`, the module is dropped, and the next attempt loads a fresh one (asynchronously, once).
//
// A runtime and a context are made per attempt and disposed before the attempt returns, on every path,
// so no sandbox outlives a step; `liveSandboxes()` counts those alive (tests check it returns to 0).
// quickjs-emscripten is imported on the first load only (`sandboxModule`), so that commands which never
// run code (every CLI command imports the env registry) do not pay for it.
import type { Intrinsics, QuickJSContext, QuickJSHandle, QuickJSWASMModule } from 'quickjs-emscripten';

/** The engine's built-ins: QuickJS's defaults without Date (results must not depend on the clock). */
export const INTRINSICS: Intrinsics = {
  BaseObjects: true,
  Date: false,
  Eval: true,
  StringNormalize: true,
  RegExp: true,
  JSON: true,
  Proxy: true,
  MapSet: true,
  TypedArrays: true,
  Promise: true,
};

export interface SandboxLimits {
  /** Interrupt-handler calls one test may use (≈10⁴ polls each). */
  testFuel: number;
  /** Interrupt-handler calls a whole attempt may use (the agent's code and every test). */
  attemptFuel: number;
  /** Wall-clock backstop per attempt, in ms (not deterministic: the fuel is the real limit). */
  deadlineMs: number;
  /** QuickJS's max stack size in bytes (see the header for why so small). */
  stackBytes: number;
  /** QuickJS's own allocation limit in bytes (a cap on single allocations in this build). */
  memoryBytes: number;
  /** Longest JSON of a result kept, in characters. */
  maxOutput: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  testFuel: 50,
  attemptFuel: 400,
  deadlineMs: 5000,
  stackBytes: 32 << 10,
  memoryBytes: 32 << 20,
  maxOutput: 2000,
};

/** Longest error message kept, in characters (cut by the host). */
export const ERROR_CHARS = 300;

/** The wasm memory of a module: 16 MB initially, at most 64 MB (the sandbox's memory limit). */
export const WASM_MEMORY_PAGES = { initial: 256, maximum: 1024 } as const;

/** What one test call did: returned a value (the env compares it), threw, ran out of fuel or memory,
 * or was not run (an earlier test exhausted a limit, or the code never defined the function). */
export type TestStatus = 'returned' | 'error' | 'timeout' | 'memory' | 'not-run';

export interface TestRun {
  status: TestStatus;
  /** The result's JSON ('undefined' when the function returned undefined), when it returned. */
  got?: string;
  /** The exception's name and message, for error/timeout/memory. */
  error?: string;
}

/** Why an attempt did not reach its tests, if it did not: its code threw or did not compile, it defined
 * no function of the asked name, it ran out of fuel or memory at top level, or the sandbox crashed. */
export type AttemptError = 'compile' | 'missing' | 'timeout' | 'memory' | 'crash';

export interface AttemptRun {
  tests: TestRun[];
  error?: { kind: AttemptError; message: string };
  /** Interrupt-handler calls used in all. */
  fuel: number;
}

export interface TestCase {
  /** The arguments as JSON (an array). */
  args: string;
}

// Node's WebAssembly global (the project's TypeScript lib has no DOM/WebAssembly types).
const Wasm: { Memory: new (d: { initial: number; maximum: number }) => object } = Reflect.get(
  globalThis,
  'WebAssembly',
);

// The module: loaded once and reused; replaced only when an attempt poisoned it.
let current: QuickJSWASMModule | null = null;
let loading: Promise<QuickJSWASMModule> | null = null;
let live = 0;
let loads = 0;

/** Runtimes (with their contexts) alive now; 0 between steps. */
export function liveSandboxes(): number {
  return live;
}

/** How many times a module has been loaded in this process (1 unless one was poisoned). */
export function sandboxLoads(): number {
  return loads;
}

/** The loaded module, or a promise of it (the first call, or after a poisoning). */
export function sandboxModule(): QuickJSWASMModule | Promise<QuickJSWASMModule> {
  if (current !== null) return current;
  if (loading === null) {
    loading = (async () => {
      const q = await import('quickjs-emscripten');
      const memory = new Wasm.Memory(WASM_MEMORY_PAGES);
      const wasmMemory = memory as Parameters<typeof q.newVariant>[1]['wasmMemory'];
      // Emscripten writes an abort's reason to stderr, and the library never prints; the reason is also
      // in the RuntimeError the attempt catches (its `crash` message).
      const quiet = { print: () => {}, printErr: () => {} };
      const emscriptenModule = quiet as Parameters<typeof q.newVariant>[1]['emscriptenModule'];
      return q.newQuickJSWASMModuleFromVariant(
        q.newVariant(q.RELEASE_SYNC, { wasmMemory, emscriptenModule }),
      );
    })().then(
      (m) => {
        current = m;
        loading = null;
        loads++;
        return m;
      },
      (e) => {
        loading = null;
        throw e;
      },
    );
  }
  return loading;
}

/** The module if it is loaded now, else null. */
export function loadedSandbox(): QuickJSWASMModule | null {
  return current;
}

/** The module's WebAssembly memory in bytes (it never exceeds WASM_MEMORY_PAGES.maximum · 64 KiB). */
export function sandboxMemoryBytes(): number {
  if (current === null) return 0;
  return current.getWasmMemory().buffer.byteLength;
}

// Runs inside the sandbox, compiled before the agent's code (so that it holds the original JSON): calls f
// on the parsed arguments and returns [1, the result's JSON] or [0, the error's name and message],
// whole. The cut to `maxOutput` (results) and ERROR_CHARS (messages) is the host's (`readCapped`): a cut
// made in here would call methods the agent's code can replace (String.prototype.slice).
const HARNESS = `(function () {
  const parse = JSON.parse, stringify = JSON.stringify, S = String;
  return function (f, args) {
    try {
      const s = stringify(f(...parse(args)));
      return [1, s === undefined ? 'undefined' : s];
    } catch (e) {
      let m;
      try { m = e instanceof Error ? e.name + ': ' + e.message : 'thrown: ' + S(e); } catch (_) { m = 'an exception'; }
      return [0, m];
    }
  };
})()`;

const seededRandom = (seed: number) => `Math.random = (function () {
  let s = ${seed >>> 0 || 1};
  return function random() { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
})();`;

class Poisoned extends Error {}

/**
 * Runs `code` (a script that defines the function `name`) and then `name(...args)` for each test, in a
 * fresh runtime with the limits. Never throws for anything the code does.
 */
export function runAttempt(
  module: QuickJSWASMModule,
  code: string,
  name: string,
  tests: readonly TestCase[],
  seed: number,
  limits: SandboxLimits = DEFAULT_SANDBOX_LIMITS,
): AttemptRun {
  let fuel = 0;
  let testFuel = 0;
  let testLimit = Number.POSITIVE_INFINITY;
  const deadline = Date.now() + limits.deadlineMs;
  const outOfFuel = () => fuel > limits.attemptFuel || testFuel > testLimit;
  const runs: TestRun[] = tests.map(() => ({ status: 'not-run' }));
  let error: AttemptRun['error'];
  let rt: ReturnType<QuickJSWASMModule['newRuntime']> | null = null;
  let ctx: QuickJSContext | null = null;
  const handles: QuickJSHandle[] = [];
  try {
    try {
      rt = module.newRuntime();
      live++;
      rt.setMemoryLimit(limits.memoryBytes);
      rt.setMaxStackSize(limits.stackBytes);
      rt.setInterruptHandler(() => {
        fuel++;
        testFuel++;
        return outOfFuel() || Date.now() > deadline;
      });
      ctx = rt.newContext({ intrinsics: INTRINSICS });
      const c = ctx;
      const evalOrFail = (
        src: string,
        file: string,
      ): QuickJSHandle | { kind: AttemptError; message: string } => {
        const r = c.evalCode(src, file);
        if (r.error === undefined) {
          handles.push(r.value);
          return r.value;
        }
        const message = describeError(c, r.error);
        r.error.dispose();
        return { kind: classify(message, outOfFuel() || Date.now() > deadline) ?? 'compile', message };
      };
      const harness = evalOrFail(HARNESS, 'harness.js');
      // The original String.prototype.slice, taken before the agent's code can replace it.
      const slice = evalOrFail('String.prototype.slice', 'slice.js');
      const prelude = evalOrFail(seededRandom(seed), 'prelude.js');
      if (!('alive' in harness) || !('alive' in slice) || !('alive' in prelude))
        throw new Poisoned('the sandbox harness did not compile');
      const user = evalOrFail(code, 'solution.js');
      if (!('alive' in user)) {
        error = user;
        return { tests: runs, error, fuel };
      }
      const fn = evalOrFail(`typeof ${name} === 'function' ? ${name} : undefined`, 'lookup.js');
      if (!('alive' in fn) || c.typeof(fn) !== 'function') {
        error =
          'alive' in fn
            ? { kind: 'missing', message: `the code defines no function ${name}` }
            : (fn as { kind: AttemptError; message: string });
        return { tests: runs, error, fuel };
      }
      for (let i = 0; i < tests.length; i++) {
        testFuel = 0;
        testLimit = limits.testFuel;
        const args = c.newString(tests[i].args);
        const r = c.callFunction(harness, c.undefined, fn, args);
        args.dispose();
        if (r.error !== undefined) {
          const message = describeError(c, r.error);
          r.error.dispose();
          const kind = classify(message, outOfFuel() || Date.now() > deadline) ?? 'error';
          runs[i] = { status: kind === 'timeout' || kind === 'memory' ? kind : 'error', error: message };
          // Out of fuel or memory: the attempt stops; the tests not run count as failed.
          if (kind === 'timeout' || kind === 'memory') break;
          continue;
        }
        const tag = c.getProp(r.value, 0);
        const text = c.getProp(r.value, 1);
        r.value.dispose();
        const returned = c.getNumber(tag) === 1;
        tag.dispose();
        const s = readCapped(c, text, returned ? limits.maxOutput : ERROR_CHARS, slice);
        text.dispose();
        if (returned) runs[i] = { status: 'returned', got: s };
        else {
          const kind = classify(s, false);
          runs[i] = { status: kind === 'memory' ? 'memory' : 'error', error: s };
          if (kind === 'memory') break;
        }
      }
      testLimit = Number.POSITIVE_INFINITY;
      return { tests: runs, fuel };
    } finally {
      for (const h of handles) if (h.alive) h.dispose();
      ctx?.dispose();
      if (rt !== null) {
        rt.dispose();
        live--;
        rt = null;
      }
    }
  } catch (e) {
    // A host exception (V8 stack overflow, Emscripten abort): the module may be corrupt; drop it.
    if (rt !== null) live--;
    if (current === module) current = null;
    const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    return { tests: runs, error: { kind: 'crash', message: message.slice(0, ERROR_CHARS) }, fuel };
  }
}

/** A string handle's text, cut on the host to `max` characters (its `length` is the engine's, not a
 * property the code can redefine, and the cut is the original slice), so that no more crosses. */
function readCapped(c: QuickJSContext, h: QuickJSHandle, max: number, slice: QuickJSHandle): string {
  if (c.typeof(h) !== 'string') return '';
  const n = c.getProp(h, 'length');
  const length = c.getNumber(n);
  n.dispose();
  if (length <= max) return c.getString(h);
  const from = c.newNumber(0);
  const to = c.newNumber(max);
  const r = c.callFunction(slice, h, from, to);
  from.dispose();
  to.dispose();
  if (r.error !== undefined) {
    r.error.dispose();
    return '';
  }
  const s = c.getString(r.value);
  r.value.dispose();
  return s;
}

function describeError(ctx: QuickJSContext, h: QuickJSHandle): string {
  try {
    const d = ctx.dump(h) as unknown;
    if (d !== null && typeof d === 'object' && 'message' in d) {
      const { name, message } = d as { name?: unknown; message?: unknown };
      return `${String(name ?? 'Error')}: ${String(message)}`.slice(0, ERROR_CHARS);
    }
    return `thrown: ${JSON.stringify(d) ?? String(d)}`.slice(0, ERROR_CHARS);
  } catch {
    return 'an exception';
  }
}

/** Which limit an error message shows, if any. */
function classify(message: string, outOfFuel: boolean): 'timeout' | 'memory' | null {
  if (outOfFuel || message.includes('interrupted')) return 'timeout';
  if (message.includes('out of memory')) return 'memory';
  return null;
}
