// The search env (ABSeeker/BrowseComp-like): a multi-hop question about a generated corpus, answered
// with tool calls `{name, arguments}` (tools.ts): search(query), open(doc), answer(text). The
// observation is the question, what the last call returned and an opaque key of the clues held so far
// (`state`, what stateKey returns; the text view does not show it).
//
// How an episode ends:
//   answer, normalised exact match with the gold answer     → success, reward 1
//   answer, anything else                                   → `wrong-answer`
//   open of a document id that does not exist              → `misperception` (valid = false)
//   the params.misuse-th malformed call (unknown tool,
//   arguments that fail the schema)                         → `invalid-action` (valid = false)
// Earlier malformed calls are tool errors the agent sees (`info.valid = false`, `info.error` 'schema').
// A search that matches nothing is a valid call with no results.
//
// An imagined env (world-model rehearsal, `toolAnswers().imagine`) answers from a learned table instead of
// the world's tools; a call the table does not know ends the episode with `info.halted` (reward 0).
//
// Clue accounting (task.ts) in every turn's info:
//   clues      the chain's clues this turn newly acquired (ids, in chain order);
//   cluesHeld  how many the agent holds after the turn; cluesNeeded = 2 · hops;
//   redundant  true when a non-answer turn acquired no new clue;
//   quality    the step-quality proxy: newly acquired clues / clues needed.
import type {
  Env,
  EnvSpec,
  ScriptedView,
  StepInfo,
  StepResult,
  ToolAnswers,
  ToolCall,
  Turn,
} from '../../core/types.ts';
import { toolEnvSpec } from '../tool-call.ts';
import { docText } from './corpus.ts';
import type { Hit } from './searcher.ts';
import { cluesShown, type SearchWorld } from './task.ts';
import { normaliseAnswer, type ParsedSearchCall, parseSearchCall, SEARCH_TOOLS } from './tools.ts';

export type SearchOutput =
  | { query: string; results: Hit[] }
  | { doc: string; title: string; text: string }
  | { answer: string; correct: boolean };

export interface SearchLastCall {
  tool: string;
  ok: boolean;
  output?: SearchOutput;
  error?: string;
}

export interface SearchObservation {
  question: string;
  last: SearchLastCall | null;
  /** The clues held (sorted ids) and whether the episode is over, as an opaque key. */
  state: string;
}

export const SEARCH_MAX_TURNS = 20;

export function searchSpec(): EnvSpec {
  return toolEnvSpec('search', SEARCH_TOOLS, SEARCH_MAX_TURNS);
}

interface SearchSnapshot {
  held: string[];
  misuse: number;
  done: boolean;
  obs: SearchObservation;
}

export class SearchEnv implements Env<SearchObservation, ToolCall> {
  readonly spec: EnvSpec = searchSpec();
  readonly world: SearchWorld;
  private held = new Set<string>();
  private misuse = 0;
  private done = false;
  private closed = false;
  private obs: SearchObservation;

  /** Without `lookup` the tools are the world's; with it (world-model rehearsal, `toolAnswers().imagine`)
   * every answer comes from it, and a call it does not know halts the episode. */
  constructor(
    world: SearchWorld,
    private readonly lookup?: (key: string) => unknown,
  ) {
    this.world = world;
    this.obs = this.observe(null);
  }

  /** The clue ids held so far, in chain order. */
  get clues(): string[] {
    return this.world.clues.filter((c) => this.held.has(c));
  }

  private observe(last: SearchLastCall | null): SearchObservation {
    return { question: this.world.question, last, state: `${this.clues.join(',')}|${this.done}` };
  }

  private live(): void {
    if (this.closed) throw new Error('search env: used after close()');
  }

  reset(_seed: number): SearchObservation {
    this.live();
    this.held = new Set();
    this.misuse = 0;
    this.done = false;
    this.obs = this.observe(null);
    return this.obs;
  }

  step(action: ToolCall): StepResult<SearchObservation> {
    this.live();
    const tool = typeof (action as Partial<ToolCall> | null)?.name === 'string' ? action.name : '?';
    if (this.done) return this.toolError(tool, 'the episode is over (answered)', 'over', true);
    const call = parseSearchCall(action);
    if (!call.ok) {
      this.misuse++;
      const ends = this.misuse >= this.world.params.misuse;
      if (ends) this.done = true;
      return this.toolError(tool, call.message, 'schema', ends, ends ? { failure: 'invalid-action' } : {});
    }
    const known = this.answer(call);
    if (known === undefined) {
      // Imagined (world-model rehearsal): the model does not know this call's answer.
      this.done = true;
      return this.toolError(tool, 'the world model does not know this call', 'unknown', true, {
        halted: true,
      });
    }
    if ('missing' in known) {
      this.done = true;
      return this.toolError(tool, `no such document: ${(call as { doc: string }).doc}`, 'no-such-doc', true, {
        failure: 'misperception',
      });
    }
    const fresh = cluesShown(this.world, call, 'results' in known ? known.results : undefined).filter(
      (c) => !this.held.has(c),
    );
    for (const c of fresh) this.held.add(c);
    const info: StepInfo = {
      tool,
      clues: fresh,
      cluesHeld: this.held.size,
      cluesNeeded: this.world.clues.length,
      redundant: fresh.length === 0 && call.name !== 'answer',
      quality: fresh.length / this.world.clues.length,
    };
    let output: SearchOutput;
    let reward = 0;
    if (call.name === 'search')
      output = { query: call.query, results: (known as { results: Hit[] }).results };
    else if (call.name === 'open') {
      const d = known as { title: string; text: string };
      output = { doc: call.doc, title: d.title, text: d.text };
    } else {
      const correct = (known as { correct: boolean }).correct;
      this.done = true;
      reward = correct ? 1 : 0;
      info.success = correct;
      if (!correct) info.failure = 'wrong-answer';
      output = { answer: call.text, correct };
    }
    this.obs = this.observe({ tool, ok: true, output });
    return { observation: this.obs, reward, terminated: this.done, info };
  }

  /** What the tools answer a well-formed call: the world's own, or (imagined) the model's — undefined
   * when the model does not know the call. */
  private answer(call: ValidSearchCall): SearchAnswer | undefined {
    if (this.lookup !== undefined) return this.lookup(searchCallKey(call)) as SearchAnswer | undefined;
    return searchAnswer(this.world, call);
  }

  private toolError(
    tool: string,
    message: string,
    code: string,
    terminated: boolean,
    extra: StepInfo = {},
  ): StepResult<SearchObservation> {
    this.obs = this.observe({ tool, ok: false, error: message });
    const info: StepInfo = { tool, valid: false, error: code, ...extra };
    if (extra.failure !== undefined) info.success = false;
    if (code !== 'over')
      Object.assign(info, {
        clues: [],
        cluesHeld: this.held.size,
        cluesNeeded: this.world.clues.length,
        redundant: true,
        quality: 0,
      });
    return { observation: this.obs, reward: 0, terminated, info };
  }

  /** The clues held (and whether the episode is over), not the last output: two turns that know the
   * same are the same state for GiGPO anchors. */
  stateKey(o: SearchObservation): string {
    return o.state;
  }

  text(o: SearchObservation): string {
    return renderSearchObservation(o);
  }

  snapshot(): SearchSnapshot {
    return JSON.parse(
      JSON.stringify({ held: this.clues, misuse: this.misuse, done: this.done, obs: this.obs }),
    ) as SearchSnapshot;
  }

  restore(snapshot: unknown, _seed?: number): void {
    this.live();
    const s = JSON.parse(JSON.stringify(snapshot)) as SearchSnapshot;
    this.held = new Set(s.held);
    this.misuse = s.misuse;
    this.done = s.done;
    this.obs = s.obs;
  }

  scripted(): ScriptedView<ToolCall> {
    return searchScripted(this.world);
  }

  toolAnswers(): ToolAnswers {
    return {
      answerOf: (turn, next) => recordedAnswer(turn.action, turn, next as SearchObservation | undefined),
      imagine: (lookup) => new SearchEnv(this.world, lookup) as Env<unknown, unknown>,
    };
  }

  /** Nothing external is held (the index is the task's, shared); afterwards the env refuses to be used.
   * A second call does nothing. */
  close(): void {
    this.closed = true;
  }
}

type ValidSearchCall = Extract<ParsedSearchCall, { ok: true }>;

/** What the tools answer a well-formed call, as plain data: a search's hits, a document's title and text
 * (missing: no such id), an answer's verdict. The same in every state of an episode: the corpus is
 * fixed and the tools keep nothing between calls. */
export type SearchAnswer =
  | { results: Hit[] }
  | { title: string; text: string }
  | { missing: true }
  | { correct: boolean };

/** The key a world model files a call's answer under (an answer's text normalised as the env compares it). */
export function searchCallKey(call: ValidSearchCall): string {
  if (call.name === 'search') return JSON.stringify(['search', call.query]);
  if (call.name === 'open') return JSON.stringify(['open', call.doc]);
  return JSON.stringify(['answer', normaliseAnswer(call.text)]);
}

/** The world's own answer to a call. */
export function searchAnswer(world: SearchWorld, call: ValidSearchCall): SearchAnswer {
  if (call.name === 'search') return { results: world.searcher.search(call.query) };
  if (call.name === 'open') {
    const d = world.corpus.docById.get(call.doc);
    return d === undefined ? { missing: true } : { title: d.title, text: docText(d) };
  }
  return { correct: normaliseAnswer(call.text) === normaliseAnswer(world.answer) };
}

/** The call a recorded turn made (`action`: the call itself, or the offered call a choice picked) and its
 * answer as the turn and the next observation show it (ToolAnswers.answerOf). */
export function recordedAnswer(
  action: unknown,
  turn: Turn,
  next: SearchObservation | undefined,
): { key: string; answer: SearchAnswer } | undefined {
  const call = parseSearchCall(action);
  if (!call.ok || turn.info.halted === true) return undefined;
  const key = searchCallKey(call);
  if (turn.info.error === 'no-such-doc') return { key, answer: { missing: true } };
  if (turn.info.valid === false) return undefined;
  if (call.name === 'answer') return { key, answer: { correct: turn.info.success === true } };
  const out = next?.last?.ok === true ? next.last.output : undefined;
  if (out === undefined) return undefined;
  if ('results' in out) return { key, answer: { results: out.results } };
  if ('text' in out) return { key, answer: { title: out.title, text: out.text } };
  return undefined;
}

/** The observation as text for an LLM: the question, the tools, and the last call's result. */
export function renderSearchObservation(o: SearchObservation): string {
  const lines = [o.question, 'Tools: search(query), open(doc), answer(text) — answer ends the episode.'];
  const last = o.last;
  if (last === null) return lines.join('\n');
  if (!last.ok) {
    lines.push(`${last.tool} failed: ${last.error}`);
    return lines.join('\n');
  }
  const out = last.output as SearchOutput;
  if ('results' in out) {
    lines.push(`search "${out.query}": ${out.results.length} results`);
    for (const h of out.results) lines.push(`  ${h.id} ${h.title} — ${h.snippet}`);
  } else if ('text' in out) lines.push(`${out.doc} ${out.title}`, out.text);
  else lines.push(`answer "${out.answer}": ${out.correct ? 'correct' : 'wrong'}`);
  return lines.join('\n');
}

/** The clues the history's calls acquired (replayed: search is deterministic). */
export function heldAfter(world: SearchWorld, history: readonly Turn<unknown, unknown>[]): Set<string> {
  const held = new Set<string>();
  for (const t of history) for (const c of cluesShown(world, parseSearchCall(t.action))) held.add(c);
  return held;
}

/** The gold path, adapted to what the history already holds: for the first hop whose fact is missing,
 * search its gold query (if its document is not located yet) or open its document; then the answer.
 * The menu is the world's: search each title, open each document, answer each name. */
export function searchScripted(world: SearchWorld): ScriptedView<ToolCall> {
  return {
    goldAction(history) {
      const held = heldAfter(world, history);
      for (const h of world.hops) {
        if (held.has(`fact:${h.from}.${h.relation}`)) continue;
        if (!held.has(`locate:${h.from}`)) return { name: 'search', arguments: { query: h.query } };
        return { name: 'open', arguments: { doc: h.from } };
      }
      return { name: 'answer', arguments: { text: world.answer } };
    },
    validActions: () => world.menu,
  };
}
