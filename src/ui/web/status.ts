/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The line at the top right of every page: loading, errors, the end of a list reached.

export function setStatus(text: string, error = false): void {
  const s = document.getElementById('status');
  if (s === null) return;
  s.textContent = text;
  s.classList.toggle('error', error);
}
