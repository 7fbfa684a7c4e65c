// The compact form of a trajectory in the run store (the `data` blob of its row). A row of JSON per
// trajectory spent ~60 bytes on every FrozenLake turn ({"t":12,"observation":9,"action":3,…}); here
// the turns are columns: observation and action as varints, and reward, log-prob and info as indices
// into small tables of the distinct values the trajectory uses (a tabular or oracle policy has a
// handful), all deflated. The fields the row holds in columns (task, policy, budget, and the outcome's
// success, return, turns and failure) are not repeated.
// Anything else — a turn with a trace, a non-integer observation, keys in another order — is stored
// as deflated JSON (format 0), so every trajectory reads back exactly as it was written.
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Trajectory, Turn } from '../core/types.ts';

const JSON_FORMAT = 0;
const PACKED = 1;
const OUTCOME_ONLY = 2;
const TURN_KEYS = ['t', 'observation', 'action', 'reward', 'logp', 'info'];
const MAX_VARINT = 2 ** 31 - 1;
const OUTCOME_KEYS = 'success,return,turns,firstSuccessTurn,end,failure';
const ENDS: readonly string[] = ['terminated', 'truncated', 'error'];

class Writer {
  private bytes: number[] = [];
  varint(n: number): void {
    let x = n;
    while (x >= 0x80) {
      this.bytes.push((x & 0x7f) | 0x80);
      x >>>= 7;
    }
    this.bytes.push(x);
  }
  float(x: number): void {
    const b = Buffer.allocUnsafe(8);
    b.writeDoubleLE(x);
    for (const v of b) this.bytes.push(v);
  }
  text(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.varint(b.length);
    for (const v of b) this.bytes.push(v);
  }
  done(): Buffer {
    return Buffer.from(this.bytes);
  }
}

class Reader {
  private at = 0;
  constructor(private readonly b: Buffer) {}
  varint(): number {
    let x = 0;
    let shift = 0;
    for (;;) {
      const v = this.b[this.at++];
      if (v === undefined) throw new Error('packed trajectory: ends early');
      x |= (v & 0x7f) << shift;
      if (v < 0x80) return x >>> 0;
      shift += 7;
    }
  }
  float(): number {
    const x = this.b.readDoubleLE(this.at);
    this.at += 8;
    return x;
  }
  text(): string {
    const n = this.varint();
    const s = this.b.toString('utf8', this.at, this.at + n);
    this.at += n;
    return s;
  }
}

/** Index of `key` in a table of distinct values, adding it when new. */
function indexIn<T>(table: T[], index: Map<T, number>, key: T): number {
  let i = index.get(key);
  if (i === undefined) {
    i = table.length;
    table.push(key);
    index.set(key, i);
  }
  return i;
}

const isSmallInt = (x: unknown): x is number =>
  typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= MAX_VARINT;

function packableOutcome(outcome: Trajectory['outcome']): boolean {
  const o = Object.keys(outcome).join();
  return (o === OUTCOME_KEYS || o === `${OUTCOME_KEYS},error`) && ENDS.includes(outcome.end);
}

/** The id and the outcome's fields that are not columns of the row. */
function writeHead(w: Writer, t: Trajectory): void {
  const o = t.outcome;
  w.text(t.id);
  w.varint((t.revealBudget ? 1 : 0) | (ENDS.indexOf(o.end) << 1) | (o.error === undefined ? 0 : 8));
  w.varint(o.firstSuccessTurn ?? 0);
  if (o.error !== undefined) w.text(o.error);
}

/** True when every turn has exactly the common keys (forced optional), in order, t = its index. */
function packable(t: Trajectory): boolean {
  const keys = Object.keys(t);
  if (keys.join() !== 'id,task,policy,budget,revealBudget,turns,outcome') return false;
  if (!packableOutcome(t.outcome)) return false;
  return t.turns.every((turn, i) => {
    const k = Object.keys(turn);
    const n = k.length === 7 && k[6] === 'forced' ? 6 : k.length;
    if (n !== 6 || k.slice(0, 6).join() !== TURN_KEYS.join()) return false;
    return (
      turn.t === i &&
      isSmallInt(turn.observation) &&
      isSmallInt(turn.action) &&
      !Number.isNaN(turn.reward) &&
      !Number.isNaN(turn.logp)
    );
  });
}

/** The blob of a trajectory; with `full` false, only its id and outcome. */
export function packTrajectory(t: Trajectory, full = true): Buffer {
  if (!full && packableOutcome(t.outcome)) {
    const w = new Writer();
    writeHead(w, t);
    return Buffer.concat([Buffer.of(OUTCOME_ONLY), w.done()]);
  }
  if (!full || !packable(t)) {
    const value = full ? t : { id: t.id, outcome: t.outcome };
    // JSON has no −∞: written as null, as in JSONL (the reader restores it).
    return Buffer.concat([Buffer.of(JSON_FORMAT), deflateRawSync(JSON.stringify(value))]);
  }
  const w = new Writer();
  // The outcome's success, return, turns and failure are columns of the row.
  writeHead(w, t);
  const floats: number[] = [];
  const floatIndex = new Map<number, number>();
  const extras: string[] = [];
  const extraIndex = new Map<string, number>();
  const cols: number[] = [];
  for (const turn of t.turns) {
    // −0 is stored as 0, as JSON (and so JSONL) stores it.
    const r = indexIn(floats, floatIndex, turn.reward === 0 ? 0 : turn.reward);
    const l = indexIn(floats, floatIndex, turn.logp === 0 ? 0 : turn.logp);
    const e = indexIn(extras, extraIndex, JSON.stringify([turn.info, turn.forced ?? null]));
    cols.push(turn.observation as number, turn.action as number, r, l, e);
  }
  w.varint(t.turns.length);
  w.varint(floats.length);
  for (const x of floats) w.float(x);
  w.varint(extras.length);
  for (const s of extras) w.text(s);
  for (const c of cols) w.varint(c);
  return Buffer.concat([Buffer.of(PACKED), deflateRawSync(w.done())]);
}

/** What the row's columns hold of the trajectory. */
export interface RowColumns {
  task: string;
  policy: string;
  budget: number;
  success: number;
  turns: number;
  ret: number;
  failure: string | null;
}

function readHead(r: Reader, row: RowColumns) {
  const id = r.text();
  const flags = r.varint();
  const first = r.varint();
  const outcome: Record<string, unknown> = {
    success: row.success === 1,
    return: row.ret,
    turns: row.turns,
    firstSuccessTurn: first === 0 ? null : first,
    end: ENDS[(flags >> 1) & 3],
    failure: row.failure,
  };
  if (flags & 8) outcome.error = r.text();
  return { id, revealBudget: (flags & 1) === 1, outcome };
}

/**
 * The trajectory of a blob as a JSON value (log-prob −∞ as null, like a JSONL line), for the schema to
 * validate; the `{id, outcome}` of an outcome-only row; a legacy row's JSON text as it is.
 */
export function unpackTrajectory(data: Buffer | string, row: RowColumns): unknown {
  if (typeof data === 'string') return JSON.parse(data);
  if (data[0] === OUTCOME_ONLY) {
    const { id, outcome } = readHead(new Reader(data.subarray(1)), row);
    return { id, outcome };
  }
  const body = inflateRawSync(data.subarray(1));
  if (data[0] === JSON_FORMAT) return JSON.parse(body.toString('utf8'));
  if (data[0] !== PACKED) throw new Error(`packed trajectory: unknown format ${data[0]}`);
  const r = new Reader(body);
  const { id, revealBudget, outcome } = readHead(r, row);
  const n = r.varint();
  const floats = Array.from({ length: r.varint() }, () => r.float());
  const extras = Array.from(
    { length: r.varint() },
    () => JSON.parse(r.text()) as [Turn['info'], boolean | null],
  );
  const turns: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) {
    const observation = r.varint();
    const action = r.varint();
    const reward = floats[r.varint()];
    const logp = floats[r.varint()];
    const [info, forced] = extras[r.varint()];
    const turn: Record<string, unknown> = {
      t: i,
      observation,
      action,
      reward,
      logp: logp === Number.NEGATIVE_INFINITY ? null : logp,
      info,
    };
    if (forced !== null) turn.forced = forced;
    turns.push(turn);
  }
  return {
    id,
    task: JSON.parse(row.task),
    policy: row.policy,
    budget: row.budget,
    revealBudget,
    turns,
    outcome,
  };
}
