// The web env (WebArena/BrowserGym-like): a task's app (shop, booking, admin), a goal in words, and the
// page as an accessibility tree with element ids (axtree.ts) plus its URL. Actions are tool calls
// (tools.ts): click(id), type(id, text), select(id, option), goto(url), back(), submit(), answer(text).
// The reward is the app's state checked against the goal when the agent answers.
//
// How an episode ends:
//   answer, every sub-goal met and nothing else changed          → success, reward 1
//   answer, anything else                                        → `wrong-answer`
//   a POST that destroys what the goal needs (a wrong order or
//   booking placed, a record deleted that the goal does not name) → `irreversible`
//   the params.misuse-th bad action: malformed (unknown action,
//   bad arguments) or impossible (typing into a button, an option
//   the list lacks, back with no page behind)                     → `invalid-action` (valid = false)
//   … the same, naming an element id the page does not show       → `misperception` (valid = false)
// Earlier bad actions are errors the agent sees (`info.valid = false`, `info.error` the category).
//
// `info.quality` after every action: the share of the goal's sub-goals the app's state and the current
// page's form values meet, minus the share of collateral changes (apps/*.ts say what each counts);
// `info.met` and `info.goals` count the sub-goals. `stateKey` is a hash of the app's state, the URL and
// the controls' values (not the history of pages behind).
//
// Browser mode (params.browser): the same step logic with chromium as the driver (browser.ts); the
// page text is then chromium's own accessibility tree. Every method that talks to chromium returns a
// promise; in process, every method returns plain values (the rollout's sync fast path).
import type {
  Env,
  EnvSpec,
  MaybePromise,
  ScriptedView,
  StepInfo,
  StepResult,
  ToolCall,
  Turn,
} from '../../core/types.ts';
import { stateHash } from '../state-hash.ts';
import { toolEnvSpec } from '../tool-call.ts';
import type { PageView } from './app.ts';
import { bidsShown } from './axtree.ts';
import { BrowserDriver } from './browser.ts';
import {
  bidOf,
  controlKind,
  type Doc,
  defaultButton,
  type Fields,
  finalize,
  initialFields,
  optionsOf,
  optionValue,
  textOf,
  type VElement,
} from './dom.ts';
import { InProcessDriver, type WebDriver, type WebHost } from './driver.ts';
import type { WebWorld } from './task.ts';
import { actionText, parseWebCall, WEB_TOOLS, type WebAction } from './tools.ts';

export interface WebLastAction {
  action: string;
  ok: boolean;
  error?: string;
}

export interface WebObservation {
  goal: string;
  /** Path and query of the page, e.g. `/search?q=shirt` (the server's origin is not shown). */
  url: string;
  /** The page's accessibility tree as text (axtree.ts). */
  page: string;
  last: WebLastAction | null;
  /** An opaque key of the app's state, the URL and the controls' values, and whether the episode is over. */
  state: string;
}

export const WEB_MAX_TURNS = 40;

export function webSpec(): EnvSpec {
  return toolEnvSpec('web', WEB_TOOLS, WEB_MAX_TURNS);
}

interface WebSnapshot {
  app: unknown;
  url: string;
  history: string[];
  fields: Fields;
  focus: string | null;
  misuse: number;
  done: boolean;
  obs: WebObservation;
}

const isPromise = <T>(x: MaybePromise<T>): x is Promise<T> =>
  typeof (x as { then?: unknown } | null)?.then === 'function';
/** `f(x)`, after x when x is a promise: the in-process path stays synchronous. */
const then = <T, U>(x: MaybePromise<T>, f: (v: T) => MaybePromise<U>): MaybePromise<U> =>
  isPromise(x) ? x.then(f) : f(x);

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

/** A typed path as a browser reads it (the URL standard: `a b` → `a%20b`, `/x/../` → `/`), so that
 * both drivers ask for, and show, the same URL. */
const asPath = (typed: string): string => {
  const u = new URL(typed, 'http://app.invalid');
  return u.pathname + u.search;
};

export class WebEnv implements Env<WebObservation, ToolCall>, WebHost {
  readonly spec: EnvSpec = webSpec();
  readonly world: WebWorld;
  readonly app;
  private appState: unknown;
  private url = '/';
  private history: string[] = [];
  private fields: Fields = {};
  private focus: string | null = null;
  private doc: Doc;
  private misuse = 0;
  private done = false;
  private closed = false;
  /** After a restore, chromium still shows the page before it: synced before the next action. */
  private stale = false;
  private obs: WebObservation;
  private readonly driver: WebDriver;
  private scriptedView: ScriptedView<ToolCall> | undefined;

  /** `browser` overrides the task's mode (the scripted view replays in process). */
  constructor(world: WebWorld, browser = world.params.browser) {
    this.world = world;
    this.app = world.app;
    this.appState = this.app.initial();
    this.driver = browser ? new BrowserDriver(this) : new InProcessDriver(this);
    const inProcess = new InProcessDriver(this);
    this.url = inProcess.load('/');
    this.doc = this.render(this.url);
    this.fields = initialFields(this.doc);
    this.obs = this.observe(inProcess.text(this.doc, this.fields), null);
  }

  /** The app's state (the routes mutate it in place). */
  state(): unknown {
    return this.appState;
  }

  /** What the checks and the oracle read of the current page. */
  view(): PageView {
    const u = new URL(this.url, 'http://app.invalid');
    return {
      url: this.url,
      path: u.pathname,
      query: u.searchParams,
      doc: this.doc,
      fields: { ...this.fields },
    };
  }

  /** The pages behind (back() returns to the last). */
  get backStack(): readonly string[] {
    return this.history;
  }

  private render(url: string): Doc {
    const r = this.app.respond(this.appState, 'GET', url);
    if ('redirect' in r) throw new Error(`web: ${url} redirects after the driver ended there`);
    return finalize(r.page);
  }

  private observe(page: string, last: WebLastAction | null): WebObservation {
    const key = JSON.stringify([this.appState, this.url, this.fields, this.done]);
    return { goal: this.app.goal, url: this.url, page, last, state: stateHash(key) };
  }

  private live(): void {
    if (this.closed) throw new Error('web env: used after close()');
  }

  /** quality = (sub-goals met − collateral changes) / sub-goals. */
  private measure(answer?: string): { met: number; goals: number; quality: number; collateral: number } {
    const p = this.app.progress(this.appState, this.view(), answer);
    const met = p.subgoals.filter((g) => g.done).length;
    const goals = p.subgoals.length;
    return { met, goals, quality: (met - p.collateral) / goals, collateral: p.collateral };
  }

  private arrive(url: string): void {
    this.url = url;
    this.doc = this.render(url);
    this.fields = initialFields(this.doc);
    this.focus = null;
  }

  reset(_seed: number): MaybePromise<WebObservation> {
    this.live();
    this.appState = this.app.initial();
    this.history = [];
    this.misuse = 0;
    this.done = false;
    this.stale = false;
    return then(this.driver.load('/'), (url) => {
      this.arrive(url);
      return then(this.driver.text(this.doc, this.fields), (page) => {
        this.obs = this.observe(page, null);
        return this.obs;
      });
    });
  }

  step(action: ToolCall): MaybePromise<StepResult<WebObservation>> {
    this.live();
    const tool = typeof (action as Partial<ToolCall> | null)?.name === 'string' ? action.name : '?';
    const text = actionText(action);
    if (this.done) return this.refuse(tool, text, 'the episode is over', 'over', undefined);
    const call = parseWebCall(action);
    if (!call.ok) return this.refuse(tool, text, call.message, 'schema', 'invalid-action');
    if (!this.stale) return this.act(call, tool, text);
    this.stale = false;
    return then(this.driver.sync(this.url, this.doc, this.fields), () => this.act(call, tool, text));
  }

  private act(
    call: Exclude<WebAction, { ok: false }>,
    tool: string,
    text: string,
  ): MaybePromise<StepResult<WebObservation>> {
    const shown = bidsShown(this.obs.page);
    const element = (id: string): VElement | undefined =>
      shown.has(id) ? this.doc.byBid.get(id) : undefined;
    switch (call.name) {
      case 'answer':
        return this.answer(call.text, tool, text);
      case 'goto':
        if (!/^\/(?!\/)/.test(call.url))
          return this.refuse(
            tool,
            text,
            `goto: ${JSON.stringify(call.url)} is not a path on this site (e.g. /)`,
            'not-a-path',
            'invalid-action',
          );
        return this.navigate(this.driver.load(asPath(call.url)), true, tool, text);
      case 'back': {
        const prev = this.history.pop();
        if (prev === undefined)
          return this.refuse(
            tool,
            text,
            'back: there is no page behind this one',
            'no-history',
            'invalid-action',
          );
        return this.navigate(this.driver.load(prev), false, tool, text);
      }
      case 'submit': {
        const focused = this.focus === null ? undefined : this.doc.byBid.get(this.focus);
        const forms = this.doc.order.filter((el) => el.tag === 'form');
        const form =
          (focused === undefined ? undefined : this.doc.formOf.get(focused)) ??
          (forms.length === 1 ? forms[0] : undefined);
        const submitter = form === undefined ? undefined : defaultButton(this.doc, form);
        if (form === undefined || submitter === undefined)
          return this.refuse(
            tool,
            text,
            'submit: no form to send (use a field of the form first, or click its button)',
            'no-form',
            'invalid-action',
          );
        return this.send(form, submitter, tool, text);
      }
      default:
        break;
    }
    const el = element(call.id);
    if (el === undefined)
      return this.refuse(
        tool,
        text,
        `${call.name}: no element [${call.id}] on this page`,
        'no-such-element',
        'misperception',
      );
    const id = bidOf(el);
    const kind = controlKind(el);
    if (call.name === 'type') {
      if (kind !== 'text')
        return this.refuse(tool, text, `type: [${id}] is not a text box`, 'not-a-text-box', 'invalid-action');
      this.fields[id] = call.text;
      this.focus = id;
      return this.local(this.driver.fill(id, call.text), tool, text);
    }
    if (call.name === 'select') {
      if (kind !== 'select')
        return this.refuse(
          tool,
          text,
          `select: [${id}] is not a combobox`,
          'not-a-combobox',
          'invalid-action',
        );
      const want = call.option.trim();
      const option =
        optionsOf(el).find((o) => textOf(o).trim() === want) ??
        optionsOf(el).find((o) => optionValue(o) === want);
      if (option === undefined) {
        const names = optionsOf(el)
          .map((o) => JSON.stringify(textOf(o)))
          .join(', ');
        return this.refuse(
          tool,
          text,
          `select: [${id}] has no option ${JSON.stringify(call.option)}; its options are ${names}`,
          'no-such-option',
          'invalid-action',
        );
      }
      this.fields[id] = optionValue(option);
      this.focus = id;
      return this.local(this.driver.select(id, textOf(option)), tool, text);
    }
    // click
    switch (kind) {
      case 'link':
        return this.navigate(this.driver.follow(id, String(el.attrs.href)), true, tool, text);
      case 'submit': {
        const form = this.doc.formOf.get(el);
        return form === undefined ? this.local(undefined, tool, text) : this.send(form, el, tool, text);
      }
      case 'checkbox':
        this.fields[id] = this.fields[id] !== true;
        this.focus = id;
        return this.local(this.driver.click(id), tool, text);
      case 'radio': {
        const form = this.doc.formOf.get(el);
        for (const other of this.doc.order)
          if (
            controlKind(other) === 'radio' &&
            other.attrs.name === el.attrs.name &&
            this.doc.formOf.get(other) === form
          )
            this.fields[bidOf(other)] = false;
        this.fields[id] = true;
        this.focus = id;
        return this.local(this.driver.click(id), tool, text);
      }
      case 'text':
      case 'select':
        this.focus = id;
        return this.local(this.driver.focus(id), tool, text);
      default:
        // A heading, a cell, a paragraph: nothing happens (as a click on text in a browser).
        return this.local(undefined, tool, text);
    }
  }

  /** After a change on the page itself. */
  private local(
    done: MaybePromise<void>,
    tool: string,
    text: string,
  ): MaybePromise<StepResult<WebObservation>> {
    return then(done, () => this.settle(tool, text));
  }

  private navigate(
    to: MaybePromise<string>,
    push: boolean,
    tool: string,
    text: string,
  ): MaybePromise<StepResult<WebObservation>> {
    const from = this.url;
    return then(to, (url) => {
      if (push) this.history.push(from);
      this.arrive(url);
      return this.settle(tool, text);
    });
  }

  private send(
    form: VElement,
    submitter: VElement,
    tool: string,
    text: string,
  ): MaybePromise<StepResult<WebObservation>> {
    const before = clone(this.appState);
    const from = this.url;
    return then(this.driver.submit(this.doc, form, submitter, this.fields), (url) => {
      this.history.push(from);
      this.arrive(url);
      const lost = this.app.irreversible(before, this.appState);
      if (lost !== undefined) {
        this.done = true;
        return this.settle(tool, text, { failure: 'irreversible', success: false, destroyed: lost });
      }
      return this.settle(tool, text);
    });
  }

  /** The observation and result after a valid action. */
  private settle(tool: string, text: string, extra: StepInfo = {}): MaybePromise<StepResult<WebObservation>> {
    return then(this.driver.text(this.doc, this.fields), (page) => {
      this.obs = this.observe(page, { action: text, ok: true });
      const m = this.measure();
      const info: StepInfo = { tool, quality: m.quality, met: m.met, goals: m.goals, ...extra };
      if (m.collateral > 0) info.collateral = m.collateral;
      return { observation: this.obs, reward: 0, terminated: this.done, info };
    });
  }

  private answer(answer: string, tool: string, text: string): StepResult<WebObservation> {
    this.done = true;
    const m = this.measure(answer);
    const success = m.met === m.goals && m.collateral === 0;
    const info: StepInfo = { tool, quality: m.quality, met: m.met, goals: m.goals, success };
    if (m.collateral > 0) info.collateral = m.collateral;
    if (!success) info.failure = 'wrong-answer';
    this.obs = this.observe(this.obs.page, { action: text, ok: true });
    return { observation: this.obs, reward: success ? 1 : 0, terminated: true, info };
  }

  /** A bad action: the page does not change; the misuse-th one ends the episode as `ends`. */
  private refuse(
    tool: string,
    text: string,
    message: string,
    code: string,
    ends: StepInfo['failure'],
  ): StepResult<WebObservation> {
    const info: StepInfo = { tool, valid: false, error: code };
    let terminated = code === 'over';
    if (code !== 'over') {
      this.misuse++;
      if (this.misuse >= this.world.params.misuse) {
        this.done = true;
        terminated = true;
        info.failure = ends;
        info.success = false;
      }
      const m = this.measure();
      Object.assign(info, { quality: m.quality, met: m.met, goals: m.goals });
    }
    this.obs = this.observe(this.obs.page, { action: text, ok: false, error: message });
    return { observation: this.obs, reward: 0, terminated, info };
  }

  /** The app's state, URL and controls' values (and whether the episode is over), not the last action. */
  stateKey(o: WebObservation): string {
    return o.state;
  }

  text(o: WebObservation): string {
    return renderWebObservation(o);
  }

  snapshot(): WebSnapshot {
    return clone({
      app: this.appState,
      url: this.url,
      history: this.history,
      fields: this.fields,
      focus: this.focus,
      misuse: this.misuse,
      done: this.done,
      obs: this.obs,
    });
  }

  restore(snapshot: unknown, _seed?: number): void {
    this.live();
    const s = clone(snapshot) as WebSnapshot;
    this.appState = s.app;
    this.url = s.url;
    this.history = s.history;
    this.doc = this.render(s.url);
    this.fields = s.fields;
    this.focus = s.focus;
    this.misuse = s.misuse;
    this.done = s.done;
    this.obs = s.obs;
    this.stale = true;
  }

  /** One view per env, so that its replay steps on as the episode grows instead of starting over. */
  scripted(): ScriptedView<ToolCall> {
    this.scriptedView ??= webScripted(this.world);
    return this.scriptedView;
  }

  /** The in-process env holds nothing; in browser mode chromium and the loopback server are closed.
   * Afterwards the env refuses to be used; a second call does nothing. */
  close(): MaybePromise<void> {
    if (this.closed) return;
    this.closed = true;
    return this.driver.close();
  }

  // ---- what the scripted view asks of a replayed env ----

  /** The oracle's next action on the current page. */
  oracleAction(): ToolCall {
    return this.app.oracle(this.appState, this.view());
  }

  /** Valid actions on the current page (the random policy's menu): a click on each link, button,
   * checkbox and radio the page shows, each option not chosen of each combobox, each of the app's texts
   * typed into each text box, back() when a page is behind, submit() when a form field was used, and
   * the app's answers ("Done.", a report of each order or booking made). */
  menu(): ToolCall[] {
    const out: ToolCall[] = [];
    const shown = bidsShown(this.obs.page);
    for (const el of this.doc.order) {
      const id = bidOf(el);
      if (!shown.has(id)) continue;
      const kind = controlKind(el);
      if (kind === 'link' || kind === 'submit' || kind === 'checkbox' || kind === 'radio')
        out.push({ name: 'click', arguments: { id } });
      else if (kind === 'select') {
        for (const o of optionsOf(el))
          if (optionValue(o) !== this.fields[id])
            out.push({ name: 'select', arguments: { id, option: textOf(o) } });
      } else if (kind === 'text')
        for (const t of this.app.texts)
          if (t !== this.fields[id]) out.push({ name: 'type', arguments: { id, text: t } });
    }
    if (this.history.length > 0) out.push({ name: 'back', arguments: {} });
    const focused = this.focus === null ? undefined : this.doc.byBid.get(this.focus);
    const form = focused === undefined ? undefined : this.doc.formOf.get(focused);
    if (form !== undefined && defaultButton(this.doc, form) !== undefined)
      out.push({ name: 'submit', arguments: {} });
    for (const text of this.app.answers(this.appState)) out.push({ name: 'answer', arguments: { text } });
    return out;
  }
}

/** The observation as text for an LLM: the goal, the actions, the last action's outcome, the URL and
 * the page. */
export function renderWebObservation(o: WebObservation): string {
  const lines = [
    `Goal: ${o.goal}`,
    'Actions: click(id), type(id, text), select(id, option), goto(url), back(), submit(), answer(text) — answer ends the episode.',
  ];
  if (o.last !== null)
    lines.push(
      o.last.ok ? `Last action: ${o.last.action}` : `Last action: ${o.last.action} failed: ${o.last.error}`,
    );
  lines.push(`URL: ${o.url}`, '', o.page);
  return lines.join('\n');
}

/** An in-process env replayed along an episode's history, stepped on when the history grows. */
class Replay {
  private readonly world: WebWorld;
  private env: WebEnv | undefined;
  private keys: string[] = [];

  constructor(world: WebWorld) {
    this.world = world;
  }

  at(history: readonly Turn<unknown, unknown>[]): WebEnv {
    const keys = history.map((t) => JSON.stringify(t.action));
    if (this.env === undefined || this.keys.length > keys.length || this.keys.some((k, i) => k !== keys[i])) {
      this.env = new WebEnv(this.world, false);
      this.env.reset(0);
      this.keys = [];
    }
    for (let i = this.keys.length; i < keys.length; i++) {
      this.env.step(history[i].action as ToolCall);
      this.keys.push(keys[i]);
    }
    return this.env;
  }
}

/** The scripted view: the app's oracle and the menu on the page the history leads to, both read from an
 * in-process replay of the history (the same pages and ids as chromium's, by construction). */
export function webScripted(world: WebWorld): ScriptedView<ToolCall> {
  const replay = new Replay(world);
  return {
    goldAction: (history) => replay.at(history).oracleAction(),
    validActions: (history) => replay.at(history).menu(),
  };
}
