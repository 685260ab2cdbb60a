/**
 * Express middleware (Express 4 and 5). Usage:
 *
 * ```ts
 * app.use(hotkvExpress({ client, limits: [gcra("per-second", 1000, 5), limiter("hourly")] }));
 * ```
 *
 * Allowed requests continue with the RateLimit headers set; refused ones get 429 with
 * Retry-After (or your onDenied). The decision is in res.locals.rateLimit. The leases of
 * concurrency limiters are released when the response finishes or the connection closes (also
 * when a handler failed and Express answered with an error).
 */
import { asError, deniedText, headersFor, DecisionEngine, normalizeIP, onResponseDone, type CoreOptions, type Decision } from './core.js';

/** The parts of Express's request and response the middleware uses (structural, so the
 * package needs no Express types at run time). */
export interface ExpressRequestLike {
  ip?: string;
  socket?: { remoteAddress?: string };
}
export interface ExpressResponseLike {
  locals: Record<string, unknown>;
  setHeader(name: string, value: string): unknown;
  status(code: number): ExpressResponseLike;
  send(body: string): unknown;
  type?(t: string): unknown;
  /** Node's response events, to release concurrency leases when the response is done. */
  once?(event: string, fn: () => void): unknown;
}
export type NextFn = (err?: unknown) => void;

export interface ExpressOptions<Req extends ExpressRequestLike = ExpressRequestLike, Res extends ExpressResponseLike = ExpressResponseLike> extends CoreOptions<Req> {
  /** Writes a refusal; headers and Retry-After are already set. Default: 429, text body. */
  onDenied?: (req: Req, res: Res, next: NextFn, decision: Decision) => void;
  /** Writes the fail-closed response. Default: 503, text body. */
  onUnavailable?: (req: Req, res: Res, next: NextFn, err: Error) => void;
}

/** The default key: Express's req.ip (honours app.set("trust proxy")), else the peer address. */
export function expressClientIP(req: ExpressRequestLike): string {
  return normalizeIP(req.ip ?? req.socket?.remoteAddress);
}

export function hotkvExpress<Req extends ExpressRequestLike = ExpressRequestLike, Res extends ExpressResponseLike = ExpressResponseLike>(
  options: ExpressOptions<Req, Res>,
): (req: Req, res: Res, next: NextFn) => Promise<void> {
  const limiter = new DecisionEngine<Req>(options, expressClientIP);
  return async (req, res, next) => {
    const cost = limiter.cost(req);
    if (!(cost > 0)) return next();
    let d: Decision;
    try {
      d = await limiter.decide(req, cost);
    } catch (e) {
      const err = asError(e);
      options.onError?.(err, req);
      if (options.failOpen) return next();
      if (options.onUnavailable) return options.onUnavailable(req, res, next, err);
      res.status(503);
      res.type?.('text/plain');
      res.send('rate limiter unavailable');
      return;
    }
    if (limiter.holdsLeases(d)) {
      const release = () => void limiter.release(d, req);
      // A response object without Node's events (not a real Express response) cannot say
      // when it is done: the lease is then given back as soon as the middleware chain returns.
      if (res.once) onResponseDone(res as { once(event: string, fn: () => void): unknown }, release);
      else queueMicrotask(release);
    }
    for (const [k, v] of Object.entries(headersFor(d, options.legacyHeaders ?? false))) res.setHeader(k, v);
    res.locals.rateLimit = d;
    if (d.allowed) return next();
    if (options.onDenied) return options.onDenied(req, res, next, d);
    res.status(429);
    res.type?.('text/plain');
    res.send(deniedText(d));
  };
}
