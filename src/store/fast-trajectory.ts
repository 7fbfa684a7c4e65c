// The hot path of reading trajectory files: a hand-written check of one parsed line that accepts
// exactly what TrajectorySchema accepts *in the common shape* (the fields in the order turnwise writes
// them, no unknown keys, no LLM trace) and returns what the schema would return. Anything else —
// invalid, unusual, or merely rare — gives undefined and the caller falls back to zod, which also
// produces the message naming the field. zod costs ~2 µs a turn; a file of millions of turns is read
// at the speed of JSON.parse with this instead. test/store/fast-trajectory.test.ts checks agreement on
// valid and invalid lines (fast-check generated ones included): whenever this returns a value, zod
// accepts the line and returns the same value, key order included.
import { FAILURE_KINDS, type Trajectory } from '../core/types.ts';
import { LONE_SURROGATE } from './schema.ts';

const FAILURES: ReadonlySet<unknown> = new Set(FAILURE_KINDS);
const ENDS: ReadonlySet<unknown> = new Set(['terminated', 'truncated', 'error']);

type Obj = Record<string, unknown>;

const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);
const isNum = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
const isInt = (x: unknown, min: number): x is number =>
  typeof x === 'number' && Number.isSafeInteger(x) && x >= min;
/** An id, env or policy name as the schema takes it: a string of well-formed Unicode. */
const isName = (x: unknown): x is string => typeof x === 'string' && !LONE_SURROGATE.test(x);

/** True when the keys of `o` are all in `order` (required ones present), in that order. */
function keysInOrder(o: Obj, order: readonly string[], required: number): boolean {
  let next = 0;
  let seen = 0;
  for (const k in o) {
    if (!Object.hasOwn(o, k)) return false;
    while (next < order.length && order[next] !== k) next++;
    if (next === order.length) return false;
    if (next < required) seen++;
    next++;
  }
  return seen === required;
}

// The schema's key order (zod returns an object's keys in its shape's order); required keys first.
const TRAJECTORY_KEYS = ['id', 'task', 'policy', 'budget', 'revealBudget', 'turns', 'outcome'];
const TASK_KEYS = ['env', 'params', 'seed'];
const TURN_KEYS = ['t', 'observation', 'action', 'reward', 'logp', 'info', 'forced'];
const INFO_KEYS = ['success', 'failure', 'valid'];
const OUTCOME_KEYS = ['success', 'return', 'turns', 'firstSuccessTurn', 'end', 'failure', 'error'];

function task(x: unknown): x is Trajectory['task'] {
  if (!isObj(x) || !keysInOrder(x, TASK_KEYS, 3)) return false;
  if (!isName(x.env) || x.env.length === 0 || !isInt(x.seed, Number.MIN_SAFE_INTEGER)) return false;
  // A record of unknown values: any plain object (a __proto__ key is left to zod).
  return isObj(x.params) && !Object.hasOwn(x.params, '__proto__');
}

function info(x: unknown): boolean {
  // {} (the usual case) passes at once; only the declared keys, in order (other keys: ask zod).
  if (!isObj(x) || !keysInOrder(x, INFO_KEYS, 0)) return false;
  if (x.success !== undefined && typeof x.success !== 'boolean') return false;
  if (x.failure !== undefined && !FAILURES.has(x.failure)) return false;
  return x.valid === undefined || typeof x.valid === 'boolean';
}

/** 0: not a valid turn of the common shape; 1: valid; 2: valid with a null log-prob (−∞). */
function turn(x: unknown): 0 | 1 | 2 {
  if (!isObj(x) || !keysInOrder(x, TURN_KEYS, 6)) return 0;
  if (!isInt(x.t, 0) || !isNum(x.reward) || !info(x.info)) return 0;
  if (x.forced !== undefined && typeof x.forced !== 'boolean') return 0;
  if (x.logp === null) return 2;
  return isNum(x.logp) ? 1 : 0;
}

export function outcome(x: unknown): x is Trajectory['outcome'] {
  if (!isObj(x) || !keysInOrder(x, OUTCOME_KEYS, 6)) return false;
  if (typeof x.success !== 'boolean' || !isNum(x.return) || !isInt(x.turns, 0)) return false;
  if (x.firstSuccessTurn !== null && !isInt(x.firstSuccessTurn, 1)) return false;
  if (!ENDS.has(x.end) || (x.failure !== null && !FAILURES.has(x.failure))) return false;
  return x.error === undefined || typeof x.error === 'string';
}

/** The fields before `turns`, as a trajectory line has them (id, task, policy, budget, revealBudget,
 * in that order, nothing else). */
export function header(x: unknown): x is Omit<Trajectory, 'turns' | 'outcome'> {
  if (!isObj(x) || !keysInOrder(x, TRAJECTORY_KEYS.slice(0, 5), 5)) return false;
  if (!isName(x.id) || !isName(x.policy) || typeof x.revealBudget !== 'boolean') return false;
  return isInt(x.budget, 1) && task(x.task);
}

/** Whether a parsed JSONL line is a valid trajectory of the common shape; when it is, a null log-prob
 * (JSON has no −∞) has been replaced by the −∞ the schema reads it as. Changes nothing otherwise. */
function isCommonTrajectory(x: unknown): x is Trajectory {
  if (!isObj(x) || !keysInOrder(x, TRAJECTORY_KEYS, 7)) return false;
  if (!isName(x.id) || !isName(x.policy) || typeof x.revealBudget !== 'boolean') return false;
  if (!isInt(x.budget, 1) || !task(x.task) || !outcome(x.outcome)) return false;
  const turns = x.turns;
  if (!Array.isArray(turns) || turns.length !== x.outcome.turns || turns.length > x.budget) return false;
  let nulls = false;
  for (let i = 0; i < turns.length; i++) {
    const r = turn(turns[i]);
    if (r === 0) return false;
    if (r === 2) nulls = true;
  }
  if (nulls) for (const t of turns) if (t.logp === null) t.logp = Number.NEGATIVE_INFINITY;
  return true;
}

/** The trajectory a parsed JSONL line holds, when it has the common shape and is valid; undefined
 * otherwise (then ask the schema). Never changes `x` unless it returns it. */
export function fastTrajectory(x: unknown): Trajectory | undefined {
  return isCommonTrajectory(x) ? x : undefined;
}
