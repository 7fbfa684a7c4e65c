// The outcomes of a trajectory file, for readers that need no turns (`turnwise summary`), at close to
// the speed of reading its lines: every line is still validated as iterateTrajectories validates it —
// schema and env spaces — but a line in the shape turnwise writes is checked without building its
// turns. The fields around the turns are parsed on their own, and the turns text is matched against
// one regular expression of the common turn shape, built for the env's spaces (observations
// 0..n−1 and actions 0..m−1 spelled out), which V8 runs natively: no objects per turn. A line that
// does not match — unusual, or invalid — goes the whole way (JSON.parse, the schema, the spaces check),
// which also gives the message naming its line and field. test/store/outcomes.test.ts checks that
// both ways agree on valid lines and on lines damaged at random characters.
import { FAILURE_KINDS, type Task, type Trajectory } from '../core/types.ts';
import { header, outcome } from './fast-trajectory.ts';
import { fileLines, noTrajectories, orSkip, parseTrajectoryLine, type SkippedLines } from './jsonl.ts';

/** What a trajectory without its turns holds. */
export type TrajectoryOutcome = Omit<Trajectory, 'turns'>;

/** The integer spaces of a task's env; undefined when they are not both integer ranges. */
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

const patterns = new Map<string, RegExp>();

/** The turns text of a valid line of this shape: t, observation, action, reward, logp, info[, forced]. */
function turnsPattern(observations: number, actions: number): RegExp | undefined {
  if (observations > MAX_SPELLED || actions > MAX_SPELLED || observations < 1 || actions < 1)
    return undefined;
  const key = `${observations}x${actions}`;
  let re = patterns.get(key);
  if (re === undefined) {
    const turn = `\\{"t":\\d{1,15},"observation":${upTo(observations)},"action":${upTo(actions)},"reward":${NUM},"logp":(?:${NUM}|null),"info":${INFO}(?:,"forced":(?:true|false))?\\}`;
    re = new RegExp(`^(?:${turn}(?:,${turn})*)?$`);
    patterns.set(key, re);
  }
  return re;
}

const TURNS = ',"turns":[';
const OUTCOME = '],"outcome":{';

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

/** The outcome of a line by the quick way, or undefined (then take the whole way). */
function quick(line: string, spacesOf: SpacesOf): TrajectoryOutcome | undefined {
  const i = line.indexOf(TURNS);
  const j = line.lastIndexOf(OUTCOME);
  if (i === -1 || j < i + TURNS.length || line.charCodeAt(line.length - 1) !== 125) return undefined;
  const head = parseOr(`${line.slice(0, i)}}`);
  if (!header(head)) return undefined;
  const out = parseOr(line.slice(j + OUTCOME.length - 1, -1));
  if (!outcome(out)) return undefined;
  const spaces = spacesOf(head.task);
  if (spaces === undefined) return undefined;
  const re = turnsPattern(spaces.observations, spaces.actions);
  const turns = line.slice(i + TURNS.length, j);
  if (re === undefined || !re.test(turns)) return undefined;
  // Each matched turn starts with {"t": and nothing else inside a turn can.
  const n = turns.length === 0 ? 0 : count(turns, '{"t":');
  if (n !== out.turns || n > head.budget) return undefined;
  return { ...head, outcome: out };
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
  let any = false;
  for (const [line, number] of fileLines(path, field)) {
    const fast = quick(line, spacesOf);
    if (fast !== undefined) {
      any = true;
      yield fast;
      continue;
    }
    const t = orSkip(() => parseTrajectoryLine(line, `${path}:${number}`, check), number, skipped);
    if (t === undefined) continue;
    any = true;
    onTurns?.(t.turns);
    const { turns: _, ...rest } = t;
    yield rest;
  }
  if (!any) throw noTrajectories(path, field, skipped);
}
