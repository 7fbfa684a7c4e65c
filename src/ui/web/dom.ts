/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// What every page draws with: markup as strings (escaped through the report's own escapers, as the
// report builds its pages), numbers through the report's formatNumber, links to the pages' routes.
import { escapeAttr, escapeText, formatNumber } from '../../report/html.ts';

export { escapeAttr as attr, escapeText as esc, formatNumber as fmt };

/** The route of a page, as the hash of a link (`#/run/ID/t/3?credit=grpo`). */
export function route(path: readonly (string | number)[], query: Record<string, string | undefined> = {}) {
  const q = Object.entries(query)
    .filter((e): e is [string, string] => e[1] !== undefined && e[1] !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');
  return `#/${path.map((p) => encodeURIComponent(String(p))).join('/')}${q === '' ? '' : `?${q}`}`;
}

export const runRoute = (id: string) => route(['run', id]);

/** A link to a route; `label` is text (escaped). */
export function link(href: string, label: string, attrs = ''): string {
  return `<a href="${escapeAttr(href)}"${attrs}>${escapeText(label)}</a>`;
}

/** 75 s → "1 min 15 s"; null → "n/a". */
export function duration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return 'n/a';
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m} min ${Math.round(seconds - m * 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** An ISO time as the reader's local date and time to the minute. */
export function when(iso: string | null): string {
  if (iso === null) return 'n/a';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (x: number) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** A value of unknown shape as short text: numbers formatted, objects as compact JSON. */
export function short(x: unknown, digits = 3): string {
  if (typeof x === 'number') return Number.isInteger(x) ? String(x) : formatNumber(x, digits);
  if (typeof x === 'string') return x;
  if (x === null || x === undefined) return 'n/a';
  return JSON.stringify(x);
}

/** An env and its params in one line: `frozenlake 4x4 slippery`. */
export function envText(env: { env: string; params?: unknown } | null): string {
  if (env === null) return 'n/a';
  const p = (env.params ?? {}) as Record<string, unknown>;
  const parts = Object.entries(p).map(([k, v]) =>
    v === true ? k : v === false ? '' : `${k}=${typeof v === 'number' ? String(v) : short(v)}`,
  );
  return [env.env, ...parts.filter((s) => s !== '')].join(' ');
}

/** A policy as recorded (a spec string, or a training config's object) in one line. */
export function policyText(policy: unknown): string {
  if (typeof policy === 'string') return policy;
  if (policy !== null && typeof policy === 'object' && 'kind' in policy) {
    const { kind, ...rest } = policy as Record<string, unknown>;
    const more = Object.entries(rest).map(([k, v]) => `${k}=${short(v)}`);
    return more.length === 0 ? String(kind) : `${String(kind)} (${more.join(', ')})`;
  }
  return short(policy);
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T | null {
  return document.getElementById(id) as T | null;
}
