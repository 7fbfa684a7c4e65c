// Browser mode: the env's app served over loopback HTTP by hono's node server (127.0.0.1, a free port)
// and driven in Debian's chromium through playwright-core, which downloads nothing. Each env has its own
// server and browser tab (a context of the process's one chromium), started at its first reset and
// closed by close(). The page text is chromium's own
// accessibility tree (CDP `Accessibility.getFullAXTree`), each node's element id read from the `bid`
// attribute of its DOM node (`DOM.getDocument`), flattened by the same function as in process.
//
// Clicks, typing and choices go through chromium (a link followed, a form sent by its button, a box
// ticked, a value filled, an option chosen), and every navigation is awaited on the page's `load` event.
// playwright-core and the node server are imported when a browser env starts, so that nothing else pays
// for loading them.
import { accessSync, constants, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { delimiter, join } from 'node:path';
import type { Browser, CDPSession, Page } from 'playwright-core';
import { InputError } from '../../core/errors.ts';
import { axFromCdp, type CdpAxNode, flattenAx } from './axtree.ts';
import {
  bidOf,
  controlKind,
  type Doc,
  type Fields,
  finalize,
  initialFields,
  optionsOf,
  optionValue,
  textOf,
  toHtml,
  type VElement,
} from './dom.ts';
import type { WebDriver, WebHost } from './driver.ts';

const executable = (file: string) => {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
};

/** The first executable file named chromium on PATH. */
export function chromiumOnPath(): string | undefined {
  return (process.env.PATH ?? '')
    .split(delimiter)
    .filter((d) => d !== '')
    .map((d) => join(d, 'chromium'))
    .find(executable);
}

/** Debian's chromium: the first executable named chromium on PATH, else /usr/bin/chromium if there. */
export function findChromium(): string | undefined {
  return chromiumOnPath() ?? (executable('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined);
}

/** Headless chromium that reaches for nothing on the network by itself (no updates, sync or first-run
 * pages). */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/** Refuses browser mode (as the `browser` param) where chromium is missing. */
export function requireChromium(): string {
  const path = findChromium();
  if (path === undefined)
    throw new InputError(
      'params.browser',
      true,
      "expected Debian's chromium on PATH for browser mode (apt-get install chromium)",
    );
  return path;
}

interface Running {
  page: Page;
  cdp: CDPSession;
  origin: string;
  stop(): Promise<void>;
}

const sel = (bid: string) => `[bid="${bid}"]`;

/** One chromium for the process's browser envs (each has its own context, page and server), launched
 * by the first and closed when the last one closes: eight episodes in flight are eight tabs, not eight
 * browsers. */
let shared: { launched: Promise<Browser>; users: number } | undefined;

async function acquireBrowser(executablePath: string): Promise<Browser> {
  if (shared === undefined) {
    const { chromium } = await import('playwright-core');
    // Another env may have launched while this one imported.
    shared ??= {
      launched: chromium.launch({ executablePath, args: [...CHROMIUM_ARGS] }),
      users: 0,
    };
  }
  const mine = shared;
  mine.users++;
  return mine.launched;
}

async function releaseBrowser(): Promise<void> {
  const mine = shared;
  if (mine === undefined) return;
  mine.users--;
  if (mine.users > 0) return;
  shared = undefined;
  // A launch that failed has nothing to close (its acquirers were told).
  await mine.launched.then(
    (b) => b.close().catch(() => {}),
    () => {},
  );
}

interface DomNode {
  backendNodeId: number;
  attributes?: string[];
  children?: DomNode[];
  contentDocument?: DomNode;
}

export class BrowserDriver implements WebDriver {
  private readonly host: WebHost;
  private running: Promise<Running> | undefined;

  constructor(host: WebHost) {
    this.host = host;
  }

  /** The server and the browser, started once. */
  private start(): Promise<Running> {
    this.running ??= this.launch();
    return this.running;
  }

  private async launch(): Promise<Running> {
    const executablePath = requireChromium();
    const [{ Hono }, { serve }] = await Promise.all([import('hono'), import('@hono/node-server')]);
    const app = new Hono();
    app.all('*', async (c) => {
      const u = new URL(c.req.url);
      if (u.pathname === '/favicon.ico') return c.body(null, 204);
      const method = c.req.method === 'POST' ? 'POST' : 'GET';
      const form = method === 'POST' ? new URLSearchParams(await c.req.text()) : undefined;
      const r = this.host.app.respond(this.host.state(), method, u.pathname + u.search, form);
      if ('redirect' in r) return c.redirect(r.redirect, 303);
      return c.html(toHtml(finalize(r.page)), r.status as 200, { 'cache-control': 'no-store' });
    });
    const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
      s.once('error', reject);
    });
    const closeServer = () =>
      new Promise<void>((done) => {
        server.close(() => done());
        if ('closeAllConnections' in server) server.closeAllConnections();
      });
    try {
      const browser = await acquireBrowser(executablePath);
      try {
        const context = await browser.newContext();
        const page = await context.newPage();
        const cdp = await context.newCDPSession(page);
        return {
          page,
          cdp,
          origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          // Each part is closed whatever happened to the others: a tab or a browser that crashed
          // mid-episode (that episode ended as `error`) has nothing left to close.
          stop: async () => {
            await context.close().catch(() => {});
            await releaseBrowser();
            await closeServer();
          },
        };
      } catch (e) {
        await releaseBrowser();
        throw e;
      }
    } catch (e) {
      await closeServer();
      throw e;
    }
  }

  private static here(r: Running): string {
    const u = new URL(r.page.url());
    return u.pathname + u.search;
  }

  async load(url: string): Promise<string> {
    const r = await this.start();
    await r.page.goto(r.origin + url);
    return BrowserDriver.here(r);
  }

  /** Clicks `bid` and waits for the document it leads to. */
  private async clickAway(bid: string): Promise<string> {
    const r = await this.start();
    const loaded = r.page.waitForEvent('load');
    await r.page.click(sel(bid));
    await loaded;
    return BrowserDriver.here(r);
  }

  follow(bid: string): Promise<string> {
    return this.clickAway(bid);
  }

  submit(_doc: Doc, _form: VElement, submitter: VElement): Promise<string> {
    return this.clickAway(bidOf(submitter));
  }

  async fill(bid: string, text: string): Promise<void> {
    await (await this.start()).page.fill(sel(bid), text);
  }

  async click(bid: string): Promise<void> {
    await (await this.start()).page.click(sel(bid));
  }

  async select(bid: string, label: string): Promise<void> {
    await (await this.start()).page.selectOption(sel(bid), { label });
  }

  async focus(bid: string): Promise<void> {
    await (await this.start()).page.focus(sel(bid));
  }

  async text(): Promise<string> {
    const r = await this.start();
    const ax = (await r.cdp.send('Accessibility.getFullAXTree')) as { nodes: CdpAxNode[] };
    const dom = (await r.cdp.send('DOM.getDocument', { depth: -1 })) as { root: DomNode };
    const bids = new Map<number, string>();
    const walk = (n: DomNode) => {
      const a = n.attributes ?? [];
      for (let i = 0; i + 1 < a.length; i += 2) if (a[i] === 'bid') bids.set(n.backendNodeId, a[i + 1]);
      for (const c of n.children ?? []) walk(c);
    };
    walk(dom.root);
    return flattenAx(axFromCdp(ax.nodes, bids));
  }

  /** Opens `url` and sets each control that differs from what the server wrote. */
  async sync(url: string, doc: Doc, fields: Fields): Promise<void> {
    const r = await this.start();
    await r.page.goto(r.origin + url);
    const initial = initialFields(doc);
    for (const el of doc.order) {
      const id = bidOf(el);
      if (fields[id] === initial[id]) continue;
      const kind = controlKind(el);
      if (kind === 'text') await r.page.fill(sel(id), String(fields[id]));
      else if (kind === 'checkbox') await r.page.setChecked(sel(id), fields[id] === true);
      // A radio is unchecked by checking another of its group.
      else if (kind === 'radio' && fields[id] === true) await r.page.check(sel(id));
      else if (kind === 'select') {
        const o = optionsOf(el).find((x) => optionValue(x) === fields[id]);
        if (o !== undefined) await r.page.selectOption(sel(id), { label: textOf(o) });
      }
    }
  }

  async close(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    if (running === undefined) return;
    // A launch that failed has already said so (at reset); there is nothing of it to close.
    await running.then(
      (r) => r.stop(),
      () => {},
    );
  }
}
