// What carries out the env's actions on a page: the in-process browser (here) or chromium (browser.ts).
// The env (env.ts) decides what an action means on the page it holds — which element, which form, the
// controls' values — and tells the driver; the driver does it and reports the URL it ended on and the
// page text. The app's state is the env's in both modes: the in-process driver calls the app's routes
// directly, chromium reaches the same routes over loopback HTTP.
import type { MaybePromise } from '../../core/types.ts';
import type { WebApp } from './app.ts';
import { axFromDoc, flattenAx } from './axtree.ts';
import { type Doc, type Fields, formEntries, type VElement } from './dom.ts';

/** What a driver may ask of the env: the app, and its current state (replaced on reset and restore). */
export interface WebHost {
  readonly app: WebApp;
  state(): unknown;
}

export interface WebDriver {
  /** Opens a path (GET, redirects followed); resolves with the path and query it ended on. */
  load(url: string): MaybePromise<string>;
  /** Follows the link `bid` (to `href`); resolves with where it ended. */
  follow(bid: string, href: string): MaybePromise<string>;
  /** Sends `form` by pressing `submitter`; resolves with where it ended. */
  submit(doc: Doc, form: VElement, submitter: VElement, fields: Fields): MaybePromise<string>;
  /** Client-side changes (the env keeps the values; chromium must be told). */
  fill(bid: string, text: string): MaybePromise<void>;
  click(bid: string): MaybePromise<void>;
  select(bid: string, label: string): MaybePromise<void>;
  focus(bid: string): MaybePromise<void>;
  /** The current page's text (axtree.ts). */
  text(doc: Doc, fields: Fields): MaybePromise<string>;
  /** Shows `url` with the controls holding `fields` (after a restore). */
  sync(url: string, doc: Doc, fields: Fields): MaybePromise<void>;
  close(): MaybePromise<void>;
}

/** How many redirects a load follows before it gives up (the apps redirect at most twice). */
const MAX_REDIRECTS = 10;

/** The in-process browser: routes called directly, redirects followed, forms encoded as a browser
 * encodes them (application/x-www-form-urlencoded), the page text computed from the document. */
export class InProcessDriver implements WebDriver {
  private readonly host: WebHost;

  constructor(host: WebHost) {
    this.host = host;
  }

  load(url: string): string {
    let at = url;
    for (let i = 0; i <= MAX_REDIRECTS; i++) {
      const r = this.host.app.respond(this.host.state(), 'GET', at);
      if (!('redirect' in r)) return at;
      at = r.redirect;
    }
    throw new Error(`web: more than ${MAX_REDIRECTS} redirects from ${url}`);
  }

  follow(_bid: string, href: string): string {
    return this.load(href);
  }

  submit(doc: Doc, form: VElement, submitter: VElement, fields: Fields): string {
    const body = new URLSearchParams(formEntries(doc, form, fields, submitter));
    const action = String(form.attrs.action ?? '/');
    if (String(form.attrs.method ?? 'get').toLowerCase() !== 'post') {
      const q = body.toString();
      return this.load(q === '' ? action : `${action}?${q}`);
    }
    const r = this.host.app.respond(this.host.state(), 'POST', action, body);
    if (!('redirect' in r)) throw new Error(`web: POST ${action} answered with a page, not a redirect`);
    return this.load(r.redirect);
  }

  fill(): void {}
  click(): void {}
  select(): void {}
  focus(): void {}

  text(doc: Doc, fields: Fields): string {
    return flattenAx(axFromDoc(doc, fields));
  }

  sync(): void {}
  close(): void {}
}
