// A web task = (params, seed) → one app (shop, booking, admin) with its data and a goal in words.
// Params:
//   domain   'shop' | 'booking' | 'admin' | 'mixed' (default): the app; mixed draws it per task;
//   level    1 | 2 | 3 | 'mixed' (default): how much the goal asks (the apps' headers say what);
//   variant  an integer ≥ 0 (default 0, the canonical app) or 'mixed' (each task its own variant ≥ 1):
//            labels, widget kinds, layout and flow order of the same app logic (skin.ts);
//   browser  true: the same apps served over loopback HTTP and driven in Debian's chromium, the
//            observation read from chromium's accessibility tree (browser.ts); default false;
//   misuse   how many malformed or impossible actions (an unknown tool, bad arguments, an id not on
//            the page, typing into a button) end the episode (default 3; earlier ones are errors the
//            agent sees).
// Worlds are cached per (domain, level, variant, seed): immutable, shared by env instances.
import { z } from 'zod';
import { Rng, STREAM } from '../../core/rng.ts';
import type { Task } from '../../core/types.ts';
import { fromZod } from '../../core/validate.ts';
import { APP_IDS, type AppId, type WebApp } from './app.ts';
import { buildAdmin } from './apps/admin.ts';
import { buildBooking } from './apps/booking.ts';
import { buildShop } from './apps/shop.ts';
import { Skin } from './skin.ts';

const ParamsSchema = z
  .object({
    domain: z.union([z.enum(['shop', 'booking', 'admin']), z.literal('mixed')]).optional(),
    level: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal('mixed')]).optional(),
    variant: z.union([z.number().int().min(0).max(1_000_000), z.literal('mixed')]).optional(),
    browser: z.boolean().optional(),
    misuse: z.number().int().min(1).max(100).optional(),
  })
  .strict();

export type WebLevel = 1 | 2 | 3;
export interface WebParams {
  domain: AppId | 'mixed';
  level: WebLevel | 'mixed';
  variant: number | 'mixed';
  browser: boolean;
  misuse: number;
}

export function webParams(raw: Record<string, unknown>): WebParams {
  const p = fromZod(ParamsSchema, raw, 'params');
  return {
    domain: p.domain ?? 'mixed',
    level: p.level ?? 'mixed',
    variant: p.variant ?? 0,
    browser: p.browser ?? false,
    misuse: p.misuse ?? 3,
  };
}

export interface WebWorld {
  params: WebParams;
  seed: number;
  app: WebApp;
  level: WebLevel;
  variant: number;
}

const BUILD = { shop: buildShop, booking: buildBooking, admin: buildAdmin } as const;

export function buildWebWorld(params: WebParams, seed: number): WebWorld {
  const rng = Rng.derive(seed, STREAM.task, 0x3eb);
  const domain = params.domain === 'mixed' ? APP_IDS[rng.int(APP_IDS.length)] : params.domain;
  const level: WebLevel = params.level === 'mixed' ? ((1 + rng.int(3)) as WebLevel) : params.level;
  const variant = params.variant === 'mixed' ? 1 + rng.int(1_000_000) : params.variant;
  const app = BUILD[domain](
    Rng.derive(seed, STREAM.task, 0x3eb, APP_IDS.indexOf(domain), level),
    level,
    new Skin(variant),
  );
  return { params, seed, app, level, variant };
}

const cache = new Map<string, WebWorld>();
const MAX_WORLDS = 1024;

export function webWorld(task: Task): WebWorld {
  const params = webParams(task.params);
  // `browser` and `misuse` do not change the world; the world carries the params it was asked with.
  const key = JSON.stringify([params, task.seed]);
  let world = cache.get(key);
  if (world === undefined) {
    world = buildWebWorld(params, task.seed);
    if (cache.size >= MAX_WORLDS) cache.delete(cache.keys().next().value as string);
    cache.set(key, world);
  }
  return world;
}
