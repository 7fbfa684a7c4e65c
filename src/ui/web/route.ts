/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// What a page of the dashboard is: a function of its route that draws into the app's element.

export interface Route {
  /** The hash's path, decoded: [] for the runs, ['run', ID, 't', INDEX] for a trajectory … */
  path: string[];
  query: URLSearchParams;
}

export interface Shown {
  /** Run when the route changes (close a live stream). */
  undo?: () => void;
  /** Keys the page answers (`ArrowLeft`, `j` …), unless the reader is typing in a field. */
  keys?: Record<string, () => void>;
}

/** Draws the page of `route` into `app`; `current()` turns false once the reader has moved on. */
export type Page = (app: HTMLElement, route: Route, current: () => boolean) => Promise<Shown | undefined>;

/** Replaces the hash's query without drawing the page again (a turn chosen, a column added). */
export function replaceQuery(query: URLSearchParams): void {
  const base = location.hash.replace(/\?.*$/, '');
  const q = query.toString();
  history.replaceState(null, '', q === '' ? base : `${base}?${q}`);
}
