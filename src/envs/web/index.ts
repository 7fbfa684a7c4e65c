// The web env as a registered env: params (browser mode refused where chromium is missing), tasks →
// worlds (cached), env construction, and the task's description (with the oracle's path as `gold`).
import type { StepResult, Task, ToolCall } from '../../core/types.ts';
import type { User } from './apps/admin.ts';
import type { Room } from './apps/booking.ts';
import type { Product } from './apps/shop.ts';
import { requireChromium } from './browser.ts';
import { WebEnv, type WebObservation } from './env.ts';
import { type WebParams, webParams, webWorld } from './task.ts';
import { actionText } from './tools.ts';

export * from './app.ts';
export * from './axtree.ts';
export * from './browser.ts';
export * from './dom.ts';
export * from './driver.ts';
export * from './env.ts';
export * from './skin.ts';
export * from './task.ts';
export * from './tools.ts';

/** The params as the registry checks them: browser mode needs chromium, refused before any work. */
export function webEnvParams(raw: Record<string, unknown>): WebParams {
  const p = webParams(raw);
  if (p.browser) requireChromium();
  return p;
}

export function makeWebEnv(task: Task): WebEnv {
  return new WebEnv(webWorld(task));
}

/** The oracle's path through a task in process: each action with the page line of its element. */
export function goldPath(
  task: Task,
  maxTurns = 80,
): { action: ToolCall; text: string; target?: string; quality: number }[] {
  const env = new WebEnv(webWorld(task), false);
  // In process every call returns a plain value.
  let obs = env.reset(0) as WebObservation;
  const out: { action: ToolCall; text: string; target?: string; quality: number }[] = [];
  for (let t = 0; t < maxTurns; t++) {
    const action = env.oracleAction();
    const id = (action.arguments as { id?: unknown }).id;
    const target =
      id === undefined
        ? undefined
        : obs.page
            .split('\n')
            .find((l) => l.trimStart().startsWith(`[${id}] `))
            ?.trim();
    const r = env.step(action) as StepResult<WebObservation>;
    out.push({ action, text: actionText(action), target, quality: r.info.quality as number });
    obs = r.observation;
    if (r.terminated) break;
  }
  return out;
}

/** Plain data describing a task: its app, level, variant and goal, the app's data; with `gold` the
 * oracle's actions and the sub-goals. */
export function describeWeb(task: Task, gold = false): Record<string, unknown> {
  const w = webWorld(task);
  const out: Record<string, unknown> = {
    app: w.app.id,
    level: w.level,
    variant: w.variant,
    goal: w.app.goal,
    data: w.app.describe(),
  };
  if (gold) {
    const env = new WebEnv(w, false);
    env.reset(0);
    out.gold = {
      path: goldPath(task).map(({ action, text, target }) => ({ action, text, target })),
      subgoals: w.app.progress(env.state(), env.view()).subgoals.map((g) => g.name),
    };
  }
  return out;
}

/** An app's record as describe() gives it: the price as text. */
type Priced<T> = Omit<T, 'price'> & { price: string };

/** The description as lines of text (turnwise env describe). */
export function describeWebText(d: Record<string, unknown>): string[] {
  const data = d.data as Record<string, unknown>;
  const choices = Object.entries(data.variant as Record<string, string>)
    .map(([k, v]) => `${k}: ${v}`)
    .join('; ');
  const lines = [`${d.app}, level ${d.level}, variant ${d.variant} (${choices})`, `goal: ${d.goal}`];
  if (d.app === 'shop') {
    lines.push(`${data.shop}, ${(data.products as unknown[]).length} products:`);
    for (const p of data.products as Priced<Product>[])
      lines.push(`  ${p.id} ${p.name}, ${p.color}, ${p.price}`);
  } else if (d.app === 'booking') {
    const win = data.window as string[];
    lines.push(`${data.hotel}, stays from ${win[0]} to ${win[1]}:`);
    for (const r of data.rooms as Priced<Room>[])
      lines.push(
        `  ${r.id} ${r.name}, sleeps ${r.sleeps}, ${r.price} a night${r.soldOut.length > 0 ? `, sold out ${r.soldOut.join(' ')}` : ''}`,
      );
  } else {
    lines.push('users:');
    for (const u of data.users as User[])
      lines.push(`  ${u.id} ${u.name} <${u.email}> ${u.city} ${u.plan} ${u.status}`);
  }
  const gold = d.gold as { path: { text: string; target?: string }[]; subgoals: string[] } | undefined;
  if (gold !== undefined) {
    lines.push('gold:');
    gold.path.forEach((s, i) => {
      lines.push(`  ${i + 1}. ${s.text}${s.target === undefined ? '' : `  ${s.target}`}`);
    });
    lines.push(`sub-goals: ${gold.subgoals.join(', ')}`);
  }
  return lines;
}
