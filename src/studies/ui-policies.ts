// The dashboard's figures that need a run's saved policy (ui/diagnostics.ts, ui/tokens.ts), composed
// here because they need what the dashboard's layer does not import: the env registry and the policy
// loaders.
//   - Diagnostics: two runs' saved policies (policy.safetensors in their directories, opened as
//     `turnwise compare --a DIR --b DIR` opens them) compared by `turnwise compare`'s library call
//     (eval/compare.ts) with the CLI's settings — the same numbers as `turnwise compare --json` with the
//     same sizes and seed. Each measurement runs on a worker thread of its own (this module is the job
//     module too: createHandler), so the server keeps answering while it computes.
//   - Token text: the tokenizer a saved transformer policy carries, read once per version of the file.
import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { InputError } from '../core/errors.ts';
import { envs, makeTasks } from '../envs/index.ts';
import { DEFAULT_RESAMPLES } from '../eval/bootstrap.ts';
import { compare } from '../eval/compare.ts';
import { POLICY_FILE } from '../policies/checkpoint-file.ts';
import { type AnyPolicy, openPolicy } from '../policies/spec.ts';
import { readSavedTransformer } from '../policies/transformer.ts';
import { WorkerPool } from '../rollout/pool.ts';
import type { DiagnosticsJob, DiagnosticsResult, PolicyDiagnostics } from '../ui/diagnostics.ts';
import type { Vocabulary, VocabularyOf } from '../ui/tokens.ts';

/** `turnwise compare`'s --concurrency default: episodes in flight (it changes no figure). */
const CONCURRENCY = 8;

/** A file's version: it changes when the file is rewritten (a live run's next checkpoint). */
function version(file: string): string | undefined {
  try {
    const st = statSync(file);
    return st.isFile() ? `${st.mtimeMs}:${st.size}` : undefined;
  } catch {
    return undefined;
  }
}

/** `turnwise compare --a DIR_A --b DIR_B` with the job's sizes, in this thread. A policy its loader
 * refuses (damaged, trained on another env) is a reason, in the loader's words with the run's id for
 * its path. */
export async function measureSaved(job: DiagnosticsJob): Promise<DiagnosticsResult> {
  const config = envs.configure(job.env);
  const tasks = makeTasks(config, job.tasks, job.seed);
  const spec = envs.spec(tasks[0]);
  const open = async (
    side: DiagnosticsJob['a'],
    field: string,
  ): Promise<{ policy: AnyPolicy } | { reason: string }> => {
    const dir = resolve(side.dir);
    try {
      return { policy: await openPolicy(dir, spec, field) };
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      return { reason: `run ${JSON.stringify(side.id)}: ${e.message.split(dir).join(side.id)}` };
    }
  };
  const a = await open(job.a, 'a');
  if (!('policy' in a)) return a;
  const b = await open(job.b, 'b');
  if (!('policy' in b)) return b;
  const report = await compare({
    envs,
    tasks,
    samples: job.samples,
    K: job.K,
    T: job.T,
    a: a.policy,
    b: b.policy,
    runSeed: job.seed,
    states: job.states,
    statesFrom: 'both',
    actions: job.actions,
    continuations: job.continuations,
    resamples: DEFAULT_RESAMPLES,
    concurrency: CONCURRENCY,
  });
  // A policy is named by the path it was opened from; the dashboard names it by its run.
  report.passKT.a.policy = job.a.id;
  report.passKT.b.policy = job.b.id;
  return { report };
}

/** The worker's handler (rollout/worker-boot.mjs): one measurement per job; an error as its message. */
export async function createHandler(_init: unknown) {
  return async (job: DiagnosticsJob): Promise<DiagnosticsResult> => {
    try {
      return await measureSaved(job);
    } catch (e) {
      return { error: (e as Error).message };
    }
  };
}

/** Diagnostics for the dashboard: each measurement on a worker thread started for it and ended after. */
export function uiDiagnostics(): PolicyDiagnostics {
  const running = new Set<WorkerPool<DiagnosticsJob, DiagnosticsResult>>();
  let closed = false;
  return {
    policyOf(dir) {
      const v = version(join(dir, POLICY_FILE));
      return v === undefined ? { reason: `holds no saved policy (${POLICY_FILE})` } : { version: v };
    },
    async measure(job) {
      if (closed) return { error: 'the server is closing' };
      const pool = new WorkerPool<DiagnosticsJob, DiagnosticsResult>(new URL(import.meta.url), {}, 1);
      running.add(pool);
      try {
        return await pool.run(job);
      } finally {
        running.delete(pool);
        await pool.close();
      }
    },
    async close() {
      closed = true;
      await Promise.all([...running].map((p) => p.close()));
    },
  };
}

/** The tokenizer of a directory's saved transformer policy, as chips need it; read once per version of
 * the file (the last few kept). */
export function uiVocabularies(): VocabularyOf {
  const kept = new Map<string, ReturnType<VocabularyOf>>();
  return (dir) => {
    const file = join(resolve(dir), POLICY_FILE);
    const v = version(file);
    if (v === undefined) return { reason: `holds no saved policy (${POLICY_FILE})` };
    const key = `${file}\n${v}`;
    const hit = kept.get(key);
    if (hit !== undefined) return hit;
    let found: ReturnType<VocabularyOf>;
    try {
      const saved = readSavedTransformer(file);
      if (saved === undefined)
        found = { reason: `saved a policy that is not a transformer (${POLICY_FILE})` };
      else {
        const t = saved.tokenizer;
        const vocabulary: Vocabulary = {
          size: t.vocabSize,
          token: (id) =>
            !Number.isInteger(id) || id < 0 || id >= t.vocabSize
              ? undefined
              : t.isSpecial(id)
                ? { special: t.tokenText(id) }
                : { bytes: t.tokenBytes(id) },
        };
        found = { vocabulary, from: POLICY_FILE };
      }
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      found = {
        reason: `has a policy that cannot be read (${e.message.split(`${resolve(dir)}/`).join('')})`,
      };
    }
    kept.set(key, found);
    if (kept.size > 16) kept.delete(kept.keys().next().value as string);
    return found;
  };
}
