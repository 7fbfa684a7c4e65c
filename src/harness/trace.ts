// An in-process recording session: what the proxy does for an agent across HTTP, done inside a
// TypeScript agent by an SDK adapter (openai-sdk.ts, ai-sdk.ts, agents-sdk.ts). It records the same
// events (serve/proxy-record.ts) and builds the trajectory with the same function, so an adapter's
// trajectory and the proxy's for the same calls are equal — the tests check exactly that. The budget
// is enforced the same way: the (T+1)-th call throws `TurnBudgetExhausted` before reaching the model.
import type { Task, Trajectory } from '../core/types.ts';
import {
  type CallEvent,
  isTurnCall,
  type SessionMeta,
  sessionTrajectory,
  sessionTurns,
} from '../serve/proxy-record.ts';

/** The refusal of a call past the budget (the proxy's `turn_budget_exhausted` error body). */
export class TurnBudgetExhausted extends Error {
  readonly type = 'turn_budget_exhausted';
  readonly code = 'turn_budget_exhausted';

  constructor(budget: number) {
    super(`turn budget exhausted: this session allows ${budget} model calls`);
    this.name = 'TurnBudgetExhausted';
  }
}

export interface TraceSessionOptions {
  budget?: number;
  task?: Task;
  policy?: string;
}

/** One model call in progress: `end` records it (once). */
export interface OpenCall {
  /** `request` replaces the one given to begin() (an SDK that builds the body itself tells it after). */
  end(
    e: Pick<CallEvent, 'status'> & Partial<Pick<CallEvent, 'response' | 'error' | 'asked' | 'request'>>,
  ): void;
}

export class TraceSession {
  readonly meta: SessionMeta;
  readonly events: CallEvent[] = [];
  private inflight = 0;
  private next = 0;

  constructor(id: string, o: TraceSessionOptions = {}) {
    this.meta = { id, ended: false, truncated: false };
    if (o.budget !== undefined) this.meta.budget = o.budget;
    if (o.task !== undefined) this.meta.task = o.task;
    if (o.policy !== undefined) this.meta.policy = o.policy;
  }

  /** Admits a call (or throws TurnBudgetExhausted, recording the refusal) and starts its clock. An
   * adapter that only observes calls already under way (a trace processor) passes `admit` false: such a
   * call happens whatever the budget says, so it is recorded as made, never as refused. */
  begin(request: unknown, stream: boolean, path = '/chat/completions', admit = true): OpenCall {
    const turns = this.events.filter(isTurnCall).length;
    if (admit && this.meta.budget !== undefined && turns + this.inflight >= this.meta.budget) {
      throw this.refuse(request, stream, path);
    }
    const idx = this.next++;
    this.inflight++;
    const t0 = performance.now();
    let open = true;
    return {
      end: (e) => {
        if (!open) return;
        open = false;
        this.inflight--;
        this.push({
          idx,
          path,
          request: e.request ?? request,
          stream,
          retries: 0,
          latencyMs: performance.now() - t0,
          ...(e.asked !== undefined && Object.keys(e.asked).length > 0 ? { asked: e.asked } : {}),
          status: e.status,
          ...(e.response === undefined ? {} : { response: e.response }),
          ...(e.error === undefined ? {} : { error: e.error }),
        });
      },
    };
  }

  /** Records a call refused past the budget, as the proxy does (status 400, `turn_budget_exhausted`;
   * the session truncated), and returns the error to throw. For an adapter that counts calls itself. */
  refuse(request: unknown, stream: boolean, path = '/chat/completions'): TurnBudgetExhausted {
    const e = new TurnBudgetExhausted(this.meta.budget ?? 0);
    this.meta.truncated = true;
    this.push({
      idx: this.next++,
      path,
      request,
      stream,
      status: 400,
      latencyMs: 0,
      retries: 0,
      error: e.message,
      refused: 'turn_budget_exhausted',
    });
    return e;
  }

  private push(e: CallEvent): void {
    this.events.push(e);
    this.events.sort((a, b) => a.idx - b.idx);
  }

  reward(value: number, reason?: string, success?: boolean): void {
    this.meta.reward = {
      value,
      ...(reason === undefined ? {} : { reason }),
      ...(success === undefined ? {} : { success }),
    };
  }

  end(): void {
    this.meta.ended = true;
  }

  /** The merge mismatches so far (turn indices). */
  mergeMismatches(): number[] {
    return sessionTurns(this.events).mergeMismatches;
  }

  trajectory(): Trajectory & { mergeMismatches: number[] } {
    return sessionTrajectory(this.meta, this.events);
  }
}

/** A deep copy through JSON: what the proxy would have stored (SDK objects may carry getters). */
export const asJson = (x: unknown): unknown => (x === undefined ? undefined : JSON.parse(JSON.stringify(x)));
