/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The JSON API as the pages read it (app.ts answers; docs/ui.md describes it). Types are the server's
// own, imported as types only (nothing of the server is bundled).
import type { Trajectory } from '../../core/types.ts';
import type { RunComparison } from '../compare.ts';
import type { DiagnosticsAnswer } from '../diagnostics.ts';
import type { Divergence } from '../groups.ts';
import type { RunInfo } from '../runs.ts';
import type { TokenText } from '../tokens.ts';
import type { TrajectoryPage } from '../trajectories.ts';
import type { EnvView } from '../views.ts';

export type { DiagnosticsAnswer, EnvView, RunComparison, RunInfo, TokenText, Trajectory, TrajectoryPage };

export interface RunDetails extends RunInfo {
  config: unknown;
  final: unknown;
}

export interface Metrics {
  run: string;
  iterations: { iter: number; [key: string]: number | null }[];
}

export interface TrajectoryAnswer {
  run: string;
  index: number;
  trajectory: Trajectory;
  credit: Record<string, number[]>;
  view: EnvView | null;
  /** Labels of the token chips (null: no turn records tokens). */
  tokenText: TokenText | null;
}

export interface GroupAnswer extends Divergence {
  run: string;
  task: Trajectory['task'];
  samples: number;
  indices: number[];
  trajectories: Trajectory[];
  credit: Record<string, number[][]>;
  view: EnvView | null;
}

export interface Methods {
  methods: { name: string; summary: string }[];
  exact: string;
}

/** An answer that is not 200: the API's one-line message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The query parameter a 400 names. */
    readonly field?: string,
  ) {
    super(message);
  }
}

export async function get<T>(path: string): Promise<T> {
  const r = await fetch(path, { headers: { accept: 'application/json' } });
  const body = (await r.json().catch(() => ({ error: `${r.status} ${r.statusText}` }))) as T & {
    error?: string;
    field?: string;
  };
  if (!r.ok) throw new ApiError(r.status, body.error ?? `${r.status}`, body.field);
  return body;
}

export const runPath = (id: string) => `/api/runs/${encodeURIComponent(id)}`;

let methods: Promise<Methods> | undefined;
/** The registry's credit methods (asked once per page load). */
export function creditMethods(): Promise<Methods> {
  methods ??= get<Methods>('/api/methods');
  return methods;
}
