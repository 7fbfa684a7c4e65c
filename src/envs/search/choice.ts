// The search env's choice variant (params mode 'choose'): the clue chain made learnable by a small policy,
// as the code env's candidate variant is for reward hacking. Each turn the env offers K calls (params
// `slots`, default 6) as discrete actions 0..K−1; the action makes that call in the ordinary search env
// (env.ts: same tools, same rewards, same info with its clue accounting, plus `slot`). The K calls, drawn
// per turn from the episode's seed (reset's) and the turn index, shuffled:
//   1 useful call   the gold path's next call for the clues held (env.ts searchScripted: search the first
//                   unlocated hop's gold query, open its document, or — every clue held — answer);
//   near distractors, up to ⌊(K−1)/2⌋: calls an agent reading the results would consider — open another
//                   document the last search listed, search or answer a name seen in a result or document;
//   far distractors, the rest: uniform draws from the world's menu (search a title, open a document,
//                   answer a name), none equal to another slot.
// So the useful call is always there (a perfect chooser answers in 2·hops + 1 turns at most) and
// choosing it needs reading, not luck. What the policy sees (features(), SLOT_FEATURES per slot, in slot
// order), read from the question and the calls and results of the episode so far, never a label of
// usefulness:
//   0–2  the tool, one-hot (search, open, answer);
//   3    the same call was made before in the episode;
//   4    share of the argument's words in the question (open: its title's, if a result listed it);
//   5    share of the argument's words in the last result (search results with snippets, or a document);
//   6    share of the argument's words in anything shown before (results and documents, not the question);
//   7    open: 1/(1 + rank) in the last search's results (0 when not listed);
//   8    open: the document was ever listed; search/answer: the name is the title of a document opened;
//   9    documents opened so far / (2 · hops), the hops being what the question's phrasing states;
//   10   turn / 20 (the env's turn scale).
// A table policy has nothing to key on (the calls move between slots); an MLP learns from these.
import { Rng } from '../../core/rng.ts';
import type { Env, EnvSpec, StepInfo, StepResult, ToolAnswers, ToolCall } from '../../core/types.ts';
import {
  recordedAnswer,
  renderSearchObservation,
  SEARCH_MAX_TURNS,
  SearchEnv,
  type SearchObservation,
  type SearchOutput,
} from './env.ts';
import { searchTokens } from './searcher.ts';
import type { SearchWorld } from './task.ts';

/** Features per offered call. */
export const SLOT_FEATURES = 11;

export interface SearchChoiceObservation extends SearchObservation {
  /** The calls offered this turn, in slot order. */
  slots: ToolCall[];
  /** SLOT_FEATURES per slot, in slot order (see the header). */
  features: number[];
}

export function searchChoiceSpec(k: number): EnvSpec {
  return {
    id: 'search',
    actions: k,
    oracle: false,
    snapshots: true,
    features: k * SLOT_FEATURES,
    maxTurns: SEARCH_MAX_TURNS,
  };
}

const callKey = (c: ToolCall): string => JSON.stringify([c.name, c.arguments]);

/** The gold path's next call for the clues held (the same rule as env.ts searchScripted). */
export function goldCall(world: SearchWorld, held: ReadonlySet<string>): ToolCall {
  for (const h of world.hops) {
    if (held.has(`fact:${h.from}.${h.relation}`)) continue;
    if (!held.has(`locate:${h.from}`)) return { name: 'search', arguments: { query: h.query } };
    return { name: 'open', arguments: { doc: h.from } };
  }
  return { name: 'answer', arguments: { text: world.answer } };
}

/** What the episode has shown so far, from which the features are read. */
interface Reading {
  calls: string[];
  /** Words of every result and document shown (not the question). */
  seen: string[];
  /** Words of the last result. */
  last: string[];
  /** Doc ids of the last search's results, in rank order. */
  lastListed: string[];
  /** Doc id → title, for every document a search listed. */
  listed: Record<string, string>;
  opened: string[];
}

const emptyReading = (): Reading => ({
  calls: [],
  seen: [],
  last: [],
  lastListed: [],
  listed: {},
  opened: [],
});

interface ChoiceSnapshot {
  inner: unknown;
  reading: Reading;
  seed: number;
  t: number;
  obs: SearchChoiceObservation;
}

export class SearchChoiceEnv implements Env<SearchChoiceObservation, number> {
  readonly spec: EnvSpec;
  readonly world: SearchWorld;
  readonly k: number;
  private readonly inner: SearchEnv;
  private readonly questionWords: Set<string>;
  private reading: Reading = emptyReading();
  private seed = 0;
  private t = 0;
  private obs: SearchChoiceObservation;

  /** With `lookup`, the tools answer from it (world-model rehearsal: SearchEnv's). */
  constructor(world: SearchWorld, lookup?: (key: string) => unknown) {
    this.world = world;
    this.k = world.params.slots ?? 6;
    this.spec = searchChoiceSpec(this.k);
    this.inner = new SearchEnv(world, lookup);
    this.questionWords = new Set(searchTokens(world.question));
    this.obs = this.offer(this.inner.reset(0));
  }

  /** The clue ids held so far, in chain order. */
  get clues(): string[] {
    return this.inner.clues;
  }

  /** How many documents the episode has opened (feature 9's numerator). */
  get opened(): number {
    return this.reading.opened.length;
  }

  reset(seed: number): SearchChoiceObservation {
    this.seed = seed;
    this.t = 0;
    this.reading = emptyReading();
    this.obs = this.offer(this.inner.reset(seed));
    return this.obs;
  }

  step(action: number): StepResult<SearchChoiceObservation> {
    if (!Number.isInteger(action) || action < 0 || action >= this.k) {
      this.t++;
      const info: StepInfo = {
        tool: '?',
        valid: false,
        error: 'action',
        clues: [],
        cluesHeld: this.clues.length,
        cluesNeeded: this.world.clues.length,
        redundant: true,
        quality: 0,
      };
      return { observation: this.obs, reward: 0, terminated: false, info };
    }
    const call = this.obs.slots[action];
    const r = this.inner.step(call);
    this.t++;
    this.read(call, r.observation);
    this.obs = this.offer(r.observation);
    return {
      observation: this.obs,
      reward: r.reward,
      terminated: r.terminated,
      info: { ...r.info, slot: action },
    };
  }

  /** Folds a call and its result into what the episode has shown. */
  private read(call: ToolCall, o: SearchObservation): void {
    const rd = this.reading;
    rd.calls.push(callKey(call));
    const out = o.last?.ok === true ? (o.last.output as SearchOutput) : undefined;
    if (out === undefined || 'answer' in out) {
      rd.last = [];
      return;
    }
    let text: string;
    if ('results' in out) {
      rd.lastListed = out.results.map((h) => h.id);
      for (const h of out.results) rd.listed[h.id] = h.title;
      text = out.results.map((h) => `${h.title} ${h.snippet}`).join(' ');
    } else {
      if (!rd.opened.includes(out.doc)) rd.opened.push(out.doc);
      text = `${out.title} ${out.text}`;
    }
    rd.last = [...new Set(searchTokens(text))];
    const seen = new Set(rd.seen);
    for (const w of rd.last) seen.add(w);
    rd.seen = [...seen];
  }

  /** The K calls of this turn and their features (the observation after `o`). */
  private offer(o: SearchObservation): SearchChoiceObservation {
    const rng = Rng.derive(this.seed, 0x5107, this.t);
    const w = this.world;
    const held = new Set(this.inner.clues);
    const gold = goldCall(w, held);
    const slots: ToolCall[] = [gold];
    const taken = new Set([callKey(gold)]);
    const add = (c: ToolCall): boolean => {
      const key = callKey(c);
      if (taken.has(key)) return false;
      taken.add(key);
      slots.push(c);
      return true;
    };
    // Near: the names and documents the episode has shown.
    const rd = this.reading;
    const seen = new Set(rd.seen);
    const near: ToolCall[] = [];
    for (const id of rd.lastListed) near.push({ name: 'open', arguments: { doc: id } });
    for (const d of w.corpus.docs) {
      const words = searchTokens(d.title);
      if (words.length > 0 && words.every((x) => seen.has(x))) {
        near.push({ name: 'search', arguments: { query: d.title } });
        near.push({ name: 'answer', arguments: { text: d.title } });
      }
    }
    rng.shuffle(near);
    const nearWanted = Math.floor((this.k - 1) / 2);
    for (let i = 0; i < near.length && slots.length < 1 + nearWanted; i++) add(near[i]);
    while (slots.length < this.k) add(w.menu[rng.int(w.menu.length)]);
    rng.shuffle(slots);
    const features = slots.flatMap((c) => this.slotFeatures(c));
    return { ...o, slots, features };
  }

  private slotFeatures(c: ToolCall): number[] {
    const rd = this.reading;
    const a = c.arguments as Record<string, string>;
    const kind = c.name === 'search' ? 0 : c.name === 'open' ? 1 : 2;
    const title = kind === 1 ? (rd.listed[a.doc] ?? '') : kind === 0 ? a.query : a.text;
    const words = [...new Set(searchTokens(title))];
    const share = (set: ReadonlySet<string>) =>
      words.length === 0 ? 0 : words.filter((x) => set.has(x)).length / words.length;
    const rank = kind === 1 ? rd.lastListed.indexOf(a.doc) : -1;
    const openedTitles = new Set(rd.opened.map((id) => this.world.corpus.docById.get(id)?.title));
    const known = kind === 1 ? a.doc in rd.listed : openedTitles.has(title);
    return [
      kind === 0 ? 1 : 0,
      kind === 1 ? 1 : 0,
      kind === 2 ? 1 : 0,
      rd.calls.includes(callKey(c)) ? 1 : 0,
      share(this.questionWords),
      share(new Set(rd.last)),
      share(new Set(rd.seen)),
      rank < 0 ? 0 : 1 / (1 + rank),
      known ? 1 : 0,
      rd.opened.length / (2 * this.world.level),
      this.t / SEARCH_MAX_TURNS,
    ];
  }

  features(o: SearchChoiceObservation): Float32Array {
    return Float32Array.from(o.features);
  }

  /** The clues held and whether the episode is over, as the call env's: the same knowledge is the same
   * state for GiGPO anchors, whatever calls happen to be offered. */
  stateKey(o: SearchChoiceObservation): string {
    return o.state;
  }

  text(o: SearchChoiceObservation): string {
    const lines = [renderSearchObservation(o), 'Calls offered (choose one by its number):'];
    o.slots.forEach((c, i) => {
      lines.push(`#${i} ${c.name}(${JSON.stringify(Object.values(c.arguments)[0])})`);
    });
    return lines.join('\n');
  }

  /** The offered call a turn picked and its answer (SearchEnv's); imagined envs are choice variants too. */
  toolAnswers(): ToolAnswers {
    return {
      answerOf: (turn, next) => {
        const o = turn.observation as SearchChoiceObservation;
        const call = typeof turn.action === 'number' ? o.slots?.[turn.action] : undefined;
        return call === undefined
          ? undefined
          : recordedAnswer(call, turn, next as SearchObservation | undefined);
      },
      imagine: (lookup) => new SearchChoiceEnv(this.world, lookup) as Env<unknown, unknown>,
    };
  }

  snapshot(): ChoiceSnapshot {
    return JSON.parse(
      JSON.stringify({
        inner: this.inner.snapshot(),
        reading: this.reading,
        seed: this.seed,
        t: this.t,
        obs: this.obs,
      }),
    ) as ChoiceSnapshot;
  }

  /** With `seed`, the calls offered from the next turn on are drawn from it (same-state sampling). */
  restore(snapshot: unknown, seed?: number): void {
    const s = JSON.parse(JSON.stringify(snapshot)) as ChoiceSnapshot;
    this.inner.restore(s.inner);
    this.reading = s.reading;
    this.seed = seed ?? s.seed;
    this.t = s.t;
    this.obs = s.obs;
  }

  close(): void {
    this.inner.close();
  }
}
