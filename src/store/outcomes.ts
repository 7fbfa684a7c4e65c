// The outcomes of a trajectory file, for readers that need no turns (`turnwise summary`, `eval --in`),
// at close to the speed of reading its lines: every line is still validated as iterateTrajectories
// validates it — schema and env spaces — but a line in the shape turnwise writes is checked without
// building its turns. The fields before and after the turns are read by one regular expression each
// (then checked by the hand-written header()/outcome() checks), and the turns text is matched by a
// regular expression of exactly n turns of the common shape — n the outcome's turn count — built
// for the env's spaces (observations 0..n−1 and actions 0..m−1 spelled out), which V8 runs natively:
// no objects per turn, no JSON.parse. A line that does not match — unusual, or invalid — goes the
// whole way (JSON.parse, the schema, the spaces check), which also gives the message naming its line
// and field. test/store/outcomes.test.ts checks that both ways agree on valid lines, on lines damaged
// at random characters and on other forms of the fields around the turns.
import { FAILURE_KINDS, type Task, type Trajectory } from '../core/types.ts';
import { header, outcome } from './fast-trajectory.ts';
import { fileLines, noTrajectories, orSkip, parseTrajectoryLine, type SkippedLines } from './jsonl.ts';

/** What a trajectory without its turns holds. */
export type TrajectoryOutcome = Omit<Trajectory, 'turns'>;

/** The integer spaces of a task's env; undefined when they are not both integer ranges. A function of
 * the task's env and params only (not its seed): it is asked again only when they change. */
export type SpacesOf = (task: Task) => { observations: number; actions: number } | undefined;

// Past this, a spelled-out alternation stops being small; such envs take the whole way.
const MAX_SPELLED = 4096;
const NUM = '-?(?:0|[1-9]\\d*)(?:\\.\\d+)?(?:[eE][+-]?\\d{1,2})?'; // |exponent| ≤ 99: always finite

/** 0..n−1 as an alternation, longest first so that 12 is not read as 1. */
const upTo = (n: number) => `(?:${Array.from({ length: n }, (_, i) => String(n - 1 - i)).join('|')})`;

function infoPattern(): string {
  const parts = [
    '"success":(?:true|false)',
    `"failure":"(?:${FAILURE_KINDS.join('|')})"`,
    '"valid":(?:true|false)',
  ];
  const subsets = Array.from({ length: 8 }, (_, m) => parts.filter((_, i) => m & (1 << i)).join(','));
  return `\\{(?:${subsets.join('|')})\\}`;
}
const INFO = infoPattern();

const TURNS = ',"turns":[';
const OUTCOME = '],"outcome":{';

/** One turn of the common shape for these spaces. */
const turnPattern = (observations: number, actions: number) =>
  `\\{"t":\\d{1,15},"observation":${upTo(observations)},"action":${upTo(actions)},"reward":${NUM},"logp":(?:${NUM}|null),"info":${INFO}(?:,"forced":(?:true|false))?\\}`;

const spelled = (observations: number, actions: number) =>
  observations <= MAX_SPELLED && actions <= MAX_SPELLED && observations >= 1 && actions >= 1;

// Exactly n turns and the `],"outcome":{` after them, matched from the start of the turns (sticky):
// the count comes with the match, in the regular expression's native code, instead of a scan of
// its own. One per (spaces, n), at most LIMITS.counted of them; past that, any number of turns and a
// count (below).
export const LIMITS = { counted: 1024 }; // exported for the test of the uncounted way
const counted = new Map<string, RegExp>();
const uncounted = new Map<string, RegExp>();

function countedPattern(observations: number, actions: number, n: number): RegExp | undefined {
  const key = `${observations}x${actions}:${n}`;
  let re = counted.get(key);
  if (re === undefined) {
    if (counted.size >= LIMITS.counted) return undefined;
    const turn = turnPattern(observations, actions);
    const turns = n === 0 ? '' : n === 1 ? turn : `(?:${turn},){${n - 1}}${turn}`;
    re = new RegExp(`${turns}\\],"outcome":\\{`, 'y');
    counted.set(key, re);
  }
  return re;
}

/** Whether line[from, to) is exactly n valid turns (then line[to] starts `],"outcome":{`); `counted`
 * false takes the uncounted way from the first line. */
function turnsMatch(
  line: string,
  from: number,
  to: number,
  n: number,
  observations: number,
  actions: number,
  counted: boolean,
) {
  const re = counted ? countedPattern(observations, actions, n) : undefined;
  if (re !== undefined) {
    re.lastIndex = from;
    return re.test(line) && re.lastIndex === to + OUTCOME.length;
  }
  const key = `${observations}x${actions}`;
  let whole = uncounted.get(key);
  if (whole === undefined) {
    const turn = turnPattern(observations, actions);
    whole = new RegExp(`^(?:${turn}(?:,${turn})*)?$`);
    uncounted.set(key, whole);
  }
  const turns = line.slice(from, to);
  // Each matched turn starts with {"t": and nothing else inside a turn can.
  return whole.test(turns) && (turns.length === 0 ? 0 : count(turns, '{"t":')) === n;
}

function count(text: string, what: string): number {
  let n = 0;
  for (let p = text.indexOf(what); p !== -1; p = text.indexOf(what, p + what.length)) n++;
  return n;
}

function parseOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// The fields around the turns in the form turnwise writes them (strings without escapes, integers
// without exponents), read by one regular expression each instead of JSON.parse; what they yield is
// still checked by header() and outcome(), and any other form is left to JSON.parse.
const STR = '"([^"\\\\\\u0000-\\u001f]*)"';
const HEAD = new RegExp(
  `\\{"id":${STR},"task":\\{"env":${STR},"params":(\\{[^{}\\[\\]]*\\}),"seed":(-?(?:0|[1-9]\\d{0,15}))\\},"policy":${STR},"budget":([1-9]\\d{0,15}),"revealBudget":(true|false),"turns":\\[`,
  'y',
);
const TAIL = new RegExp(
  `\\{"success":(true|false),"return":(${NUM}),"turns":(0|[1-9]\\d{0,14}),"firstSuccessTurn":([1-9]\\d{0,14}|null),"end":"(terminated|truncated|error)","failure":(null|"(?:${FAILURE_KINDS.join('|')})")\\}\\}$`,
  'y',
);

// The params of the last line read: consecutive lines nearly always share them, so their text is
// parsed once and the object shared (read-only) between those lines' tasks.
let lastParamsText = '';
let lastParams: unknown;

function paramsOf(text: string): unknown {
  if (text !== lastParamsText) {
    lastParams = parseOr(text);
    lastParamsText = text;
  }
  return lastParams;
}

// The spaces of the last line's env and params (the params object is shared while their text repeats).
let lastSpaces: { of: SpacesOf; env: string; params: unknown; spaces: ReturnType<SpacesOf> } | undefined;

function spacesFor(task: Task, spacesOf: SpacesOf): ReturnType<SpacesOf> {
  const l = lastSpaces;
  if (l !== undefined && l.of === spacesOf && l.env === task.env && l.params === task.params) return l.spaces;
  const spaces = spacesOf(task);
  lastSpaces = { of: spacesOf, env: task.env, params: task.params, spaces };
  return spaces;
}

/** The fields before `turns` (line[0, end) ends with `,"turns":[`), or undefined. */
function headOf(line: string, end: number): unknown {
  HEAD.lastIndex = 0;
  const m = HEAD.exec(line);
  if (m === null || HEAD.lastIndex !== end) return parseOr(`${line.slice(0, end - TURNS.length)}}`);
  return {
    id: m[1],
    task: { env: m[2], params: paramsOf(m[3]), seed: Number(m[4]) },
    policy: m[5],
    budget: Number(m[6]),
    revealBudget: m[7] === 'true',
  };
}

/** The outcome object that starts at line[start] and closes the line, or undefined. */
function tailOf(line: string, start: number): unknown {
  TAIL.lastIndex = start;
  const m = TAIL.exec(line);
  if (m === null) return parseOr(line.slice(start, -1));
  return {
    success: m[1] === 'true',
    return: Number(m[2]),
    turns: Number(m[3]),
    firstSuccessTurn: m[4] === 'null' ? null : Number(m[4]),
    end: m[5],
    failure: m[6] === 'null' ? null : m[6].slice(1, -1),
  };
}

/** The outcome of a line by the quick way, or undefined (then take the whole way). */
function quick(line: string, spacesOf: SpacesOf, counted: boolean): TrajectoryOutcome | undefined {
  const i = line.indexOf(TURNS);
  const j = line.lastIndexOf(OUTCOME);
  if (i === -1 || j < i + TURNS.length || line.charCodeAt(line.length - 1) !== 125) return undefined;
  const head = headOf(line, i + TURNS.length);
  if (!header(head)) return undefined;
  const out = tailOf(line, j + OUTCOME.length - 1);
  if (!outcome(out)) return undefined;
  const spaces = spacesFor(head.task, spacesOf);
  if (spaces === undefined || !spelled(spaces.observations, spaces.actions)) return undefined;
  if (out.turns > head.budget) return undefined;
  if (!turnsMatch(line, i + TURNS.length, j, out.turns, spaces.observations, spaces.actions, counted))
    return undefined;
  return {
    id: head.id,
    task: head.task,
    policy: head.policy,
    budget: head.budget,
    revealBudget: head.revealBudget,
    outcome: out,
  };
}

/**
 * The outcomes of a file's trajectories, one line at a time, validated as iterateTrajectories does:
 * the schema, then `check` (e.g. the env spaces) on the whole way, and `spacesOf` for the quick way —
 * the two must describe the same spaces. Refuses an empty file once read through. With `skipped`, a
 * line that would be refused is counted there and skipped instead.
 */
export function* iterateOutcomes(
  path: string,
  field: string,
  spacesOf: SpacesOf,
  check?: (t: Trajectory, where: string) => void,
  /** Sees the turns of each line taken the whole way (the quick way matches only turns without a
   * trace, so a reader of traces — token usage — misses nothing). */
  onTurns?: (turns: Trajectory['turns']) => void,
  skipped?: SkippedLines,
): Generator<TrajectoryOutcome> {
  for (const [o] of outcomePlaces(path, field, spacesOf, { check, onTurns, skipped })) yield o;
}

/** iterateOutcomes with each outcome's place in the file: its line number, byte offset and length (a
 * trajectory read back by place: TrajectoryFile.open(), credit/file.ts). `counted` false: the quick way
 * without the counted patterns, whose compiling (one per distinct turn count, ~2 ms each) is most of
 * a first read — the way for a reader that answers a person (the dashboard's index). */
export function* outcomePlaces(
  path: string,
  field: string,
  spacesOf: SpacesOf,
  o: {
    check?: (t: Trajectory, where: string) => void;
    onTurns?: (turns: Trajectory['turns']) => void;
    skipped?: SkippedLines;
    counted?: boolean;
  } = {},
): Generator<[outcome: TrajectoryOutcome, line: number, offset: number, bytes: number]> {
  const { check, onTurns, skipped, counted = true } = o;
  let any = false;
  for (const [line, number, offset, bytes] of fileLines(path, field, { skipped })) {
    const fast = quick(line, spacesOf, counted);
    if (fast !== undefined) {
      any = true;
      yield [fast, number, offset, bytes];
      continue;
    }
    const t = orSkip(() => parseTrajectoryLine(line, `${path}:${number}`, check), number, skipped);
    if (t === undefined) continue;
    any = true;
    onTurns?.(t.turns);
    const { turns: _, ...rest } = t;
    yield [rest, number, offset, bytes];
  }
  if (!any) throw noTrajectories(path, field, skipped);
}
