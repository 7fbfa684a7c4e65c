// Reading README.md and docs/*.md for the docs test: fenced blocks, the commands in them with their
// shown output, the markers before blocks, and the relative links with their anchors.

/** A marker on the line before a fenced block: `<!-- docs-test: heavy SCRIPT — reason -->` (not run in
 * the suite; SCRIPT runs each command), `<!-- docs-test: output varies — reason -->` (run, must exit 0,
 * shows no output: timings), `<!-- docs-test: chromium — reason -->` (run where Debian's chromium is, as
 * the browser tests are) or `<!-- docs-test: not run — reason -->` (illustrative). */
export type Marker =
  | { kind: 'run' }
  | { kind: 'heavy'; script: string }
  | { kind: 'output varies' }
  | { kind: 'chromium' }
  | { kind: 'not run' };

export interface Command {
  page: string;
  /** 1-based line of the `$ ` line. */
  line: number;
  /** The command as sh reads it: the `$ ` taken off, continuation lines (after a ` \`) kept. */
  text: string;
  /** A server: the command ended in ` &` (taken off `text`). */
  background: boolean;
  marker: Marker;
  /** The shown output: lines [outStart, outEnd) of the page (0-based), up to the next `$ ` line or the
   * block's end. */
  outStart: number;
  outEnd: number;
}

export interface Page {
  name: string;
  lines: string[];
  commands: Command[];
  /** Lines of unmarked shell blocks that look like commands but are not `$ ` commands (so never run). */
  unrun: { line: number; text: string }[];
  /** Relative link targets outside code: [line, target]. */
  links: [number, string][];
  /** GitHub's anchors of the page's headings. */
  anchors: Set<string>;
}

const SHELL = new Set(['', 'sh', 'console', 'shell', 'bash']);
const FENCE = /^(`{3,}|~{3,})\s*([\w-]*)/;
const MARKER = /^<!-- docs-test: (.*) -->$/;
const LOOKS_LIKE_COMMAND = /^(\w+=\S*\s+)*(turnwise|npx|npm|node|curl)\s/;

function parseMarker(text: string, where: string): Marker {
  const heavy = /^heavy (\S+) — .+/.exec(text);
  if (heavy) return { kind: 'heavy', script: heavy[1] };
  if (/^not run — .+/.test(text)) return { kind: 'not run' };
  if (/^output varies — .+/.test(text)) return { kind: 'output varies' };
  if (/^chromium — .+/.test(text)) return { kind: 'chromium' };
  throw new Error(
    `${where}: marker "${text}": expected "heavy SCRIPT — reason", "output varies — reason", "chromium — reason" or "not run — reason"`,
  );
}

/** GitHub's heading anchor: lower case, punctuation dropped (hyphens and underscores kept), spaces to
 * hyphens; a repeated anchor gets -1, -2, … */
export function anchorsOf(lines: readonly string[]): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fence: string | undefined;
  for (const line of lines) {
    const f = FENCE.exec(line);
    if (f && (fence === undefined || f[1].startsWith(fence))) fence = fence === undefined ? f[1] : undefined;
    const h = fence === undefined ? /^#{1,6}\s+(.*?)\s*#*$/.exec(line) : null;
    if (!h) continue;
    const text = h[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

export function parsePage(name: string, text: string): Page {
  const lines = text.split('\n');
  const page: Page = { name, lines, commands: [], unrun: [], links: [], anchors: anchorsOf(lines) };
  let i = 0;
  while (i < lines.length) {
    const open = FENCE.exec(lines[i]);
    if (!open) {
      // Links outside code (inline code spans are not links).
      const prose = lines[i].replace(/`[^`]*`/g, '');
      for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g))
        if (!/^[a-z]+:/.test(m[1])) page.links.push([i + 1, m[1]]);
      i++;
      continue;
    }
    let before = i - 1;
    while (before >= 0 && lines[before].trim() === '') before--;
    const m = before >= 0 ? MARKER.exec(lines[before].trim()) : null;
    const marker: Marker = m ? parseMarker(m[1], `${name}:${before + 1}`) : { kind: 'run' };
    let end = i + 1;
    while (end < lines.length && !lines[end].startsWith(open[1])) end++;
    if (SHELL.has(open[2])) readBlock(page, i + 1, end, marker);
    i = end + 1;
  }
  return page;
}

/** The commands of one shell block (lines [start, end) of the page). */
function readBlock(page: Page, start: number, end: number, marker: Marker) {
  const { lines } = page;
  let i = start;
  while (i < end && !lines[i].startsWith('$ ')) {
    if (
      (marker.kind === 'run' || marker.kind === 'output varies' || marker.kind === 'chromium') &&
      LOOKS_LIKE_COMMAND.test(lines[i])
    )
      page.unrun.push({ line: i + 1, text: lines[i] });
    i++;
  }
  while (i < end) {
    const first = i;
    let text = lines[i].slice(2);
    while (text.endsWith('\\') && i + 1 < end) text += `\n${lines[++i]}`;
    i++;
    const outStart = i;
    while (i < end && !lines[i].startsWith('$ ')) i++;
    const background = /\s&$/.test(text);
    if (background) text = text.replace(/\s*&$/, '');
    page.commands.push({ page: page.name, line: first + 1, text, background, marker, outStart, outEnd: i });
  }
}
