// FrozenLake as a registered env: parameter validation, tasks → worlds (cached), env construction.
import { z } from 'zod';
import { InputError } from '../../core/errors.ts';
import type { Task } from '../../core/types.ts';
import { fromZod } from '../../core/validate.ts';
import { DEFAULT_SUCCESS_RATE, type FrozenLakeConfig, FrozenLakeEnv, FrozenLakeWorld } from './env.ts';
import { checkFogMap, FogFrozenLakeEnv, fogSpec } from './fog.ts';
import { generateRandomMap, parseMap } from './map.ts';

export * from './env.ts';
export * from './fog.ts';
export * from './map.ts';

const ParamsSchema = z
  .object({
    map: z.string().optional().describe('4x4, 8x8 or rows such as SFFF,FHFH,FFFH,HFFG'),
    random: z.boolean().optional().describe('a random valid map per task, drawn from the task seed'),
    size: z.number().int().min(2).max(64).optional().describe('side of a random map'),
    p: z.number().gt(0).lte(1).optional().describe('probability that a random cell is frozen'),
    slippery: z.boolean().optional(),
    successRate: z.number().min(0).max(1).optional(),
    fog: z
      .number()
      .int()
      .min(0)
      .max(64)
      .optional()
      .describe('fog radius R: only cells within Chebyshev distance R are seen (0 or absent: no fog)'),
  })
  .strict();

export type FrozenLakeParams = z.infer<typeof ParamsSchema>;

/** Validates raw params and returns the canonical form written into trajectories. */
export function frozenLakeParams(raw: Record<string, unknown>): FrozenLakeParams {
  const p = fromZod(ParamsSchema, raw, 'params');
  const out: FrozenLakeParams = {};
  if (p.random) {
    if (p.map !== undefined)
      throw new InputError('--map', p.map, 'a map cannot be given together with --random');
    out.random = true;
    out.size = p.size ?? 8;
    out.p = p.p ?? 0.8;
  } else {
    if (p.size !== undefined) throw new InputError('--size', p.size, '--size goes with --random');
    if (p.p !== undefined) throw new InputError('--p', p.p, '--p goes with --random');
    const map = p.map ?? '4x4';
    const desc = parseMap(map);
    out.map = map === '4x4' || map === '8x8' ? map : desc.join(',');
  }
  out.slippery = p.slippery ?? false;
  if (p.successRate !== undefined && p.successRate !== DEFAULT_SUCCESS_RATE) {
    if (!out.slippery)
      throw new InputError('--success-rate', p.successRate, '--success-rate goes with --slippery');
    out.successRate = p.successRate;
  }
  // fog 0 is no fog: the params (and so every trajectory's bytes) stay today's.
  if (p.fog !== undefined && p.fog > 0) {
    const cells = out.random ? (out.size ?? 8) ** 2 : parseMap(out.map ?? '4x4').join('').length;
    checkFogMap(cells, p.fog);
    out.fog = p.fog;
  }
  return out;
}

/** The map and dynamics of a task (random maps come from the task seed). */
export function frozenLakeConfig(task: Task): FrozenLakeConfig {
  const p = task.params as FrozenLakeParams;
  const desc = p.random ? generateRandomMap(p.size ?? 8, p.p ?? 0.8, task.seed) : parseMap(p.map ?? '4x4');
  return { desc, slippery: p.slippery ?? false, successRate: p.successRate ?? DEFAULT_SUCCESS_RATE };
}

// Worlds are immutable, so env instances on the same map share one (transition table, oracle, views).
// A task holds its world (byTask) for as long as the task lives; byKey only lets tasks made again from
// the same parameters (a worker's copy, a reread file) find it, so it keeps the most recent few. It
// must not keep every map a process ever saw: a world's oracle tables grow with the horizon asked
// ((h + 1)·nS·5 doubles: 82 KB for a 4x4 map at h = 100), so 4096 kept worlds held most of a
// study's memory.
const byTask = new WeakMap<Task, FrozenLakeWorld>();
const byKey = new Map<string, FrozenLakeWorld>();
const MAX_WORLDS = 256;

export function frozenLakeWorld(task: Task): FrozenLakeWorld {
  let world = byTask.get(task);
  if (world !== undefined) return world;
  const p = task.params as FrozenLakeParams;
  const key = JSON.stringify([
    p.map,
    p.random,
    p.size,
    p.p,
    p.slippery,
    p.successRate,
    p.random ? task.seed : 0,
  ]);
  world = byKey.get(key);
  if (world === undefined) {
    world = new FrozenLakeWorld(frozenLakeConfig(task));
    if (byKey.size >= MAX_WORLDS) byKey.delete(byKey.keys().next().value as string);
    byKey.set(key, world);
  }
  byTask.set(task, world);
  return world;
}

export function makeFrozenLake(task: Task): FrozenLakeEnv | FogFrozenLakeEnv {
  const fog = (task.params as FrozenLakeParams).fog;
  const world = frozenLakeWorld(task);
  return fog !== undefined && fog > 0 ? new FogFrozenLakeEnv(world, fog) : new FrozenLakeEnv(world);
}

/** The spec of a task's env: the world's, or the fog view's (no oracle, (cell, revealed) observations). */
export function frozenLakeSpec(task: Task) {
  const fog = (task.params as FrozenLakeParams).fog;
  const world = frozenLakeWorld(task);
  return fog !== undefined && fog > 0 ? fogSpec(world, fog) : world.spec;
}
