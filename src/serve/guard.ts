// What every HTTP edge of turnwise (serve for discrete and tool envs, the recording proxy) does before and
// after its routes: with an API key configured, every route — /health and the unknown ones included —
// answers 401 without `Authorization: Bearer <key>` (compared in constant time); a request body over the
// stated limit is a 413 before it is read whole; an unknown route is a 404; and an error no handler
// expected is a 500 whose body says only that — the message (V8's own words, a stack's worth of internals)
// goes to `onInternalError`, which the CLI prints on stderr.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { errorBody } from './protocol.ts';

/** The largest request body serve and the proxy read by default: 32 MiB, room for a long conversation
 * with images; a stream of larger ones is refused before it can fill the process. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface EdgeOptions {
  /** When set, every route answers 401 without `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** The largest request body accepted, in bytes (default MAX_BODY_BYTES); a larger one is a 413. */
  maxBodyBytes?: number;
  /** Receives each error no handler expected; the client gets a 500 without its message. */
  onInternalError?: (e: Error) => void;
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** `n` bytes as a person reads them: 32 MiB, 1000 bytes. */
const bytes = (n: number) => (n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`);

/** Before the routes: the key on every route, then the body limit. */
export function guardRoutes(app: Hono, o: EdgeOptions): void {
  if (o.apiKey !== undefined) {
    const want = digest(`Bearer ${o.apiKey}`);
    app.use('*', async (c, next) => {
      if (!timingSafeEqual(digest(c.req.header('authorization') ?? ''), want)) {
        return c.json(errorBody('invalid or missing API key', 'invalid_request_error'), 401);
      }
      await next();
    });
  }
  const max = o.maxBodyBytes ?? MAX_BODY_BYTES;
  app.use(
    '*',
    bodyLimit({
      maxSize: max,
      // Answered before the body is read: the connection closes, since the rest of the body is still
      // on its way and would be taken for the next request.
      onError: (c) =>
        c.json(
          errorBody(
            `the request body is larger than ${bytes(max)}, this server's limit (--max-body-mb)`,
            'invalid_request_error',
          ),
          413,
          { connection: 'close' },
        ),
    }),
  );
}

/** After the routes: 404 for an unknown route, and a clean 500 for an error no handler expected. */
export function protocolFallbacks(app: Hono, onInternalError?: (e: Error) => void): void {
  app.notFound((c) =>
    c.json(errorBody(`no route ${c.req.method} ${c.req.path}`, 'invalid_request_error'), 404),
  );
  app.onError((e, c) => {
    onInternalError?.(e);
    return c.json(errorBody('internal server error', 'server_error'), 500);
  });
}
