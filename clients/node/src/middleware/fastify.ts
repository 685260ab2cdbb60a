/**
 * Fastify support (Fastify 4 and 5): an onRequest hook, and a plugin that installs it for the
 * whole instance.
 *
 * ```ts
 * app.addHook("onRequest", hotkvFastify({ client, limits: [gcra("api", 60000, 100)] }));
 * // or: await app.register(hotkvFastifyPlugin, { client, limits: [...] });
 * // or per route: app.get("/x", { onRequest: hotkvFastify({...}) }, handler)
 * ```
 *
 * Allowed requests continue with the RateLimit headers set; refused ones get 429 with
 * Retry-After. The decision is in request.rateLimit. The leases of concurrency limiters are
 * released when the response finishes or the connection closes (also after a handler error).
 */
import { asError, deniedText, headersFor, DecisionEngine, normalizeIP, onResponseDone, type CoreOptions, type Decision } from './core.js';

/** The parts of Fastify's request and reply the hook uses (structural: no Fastify types
 * needed at run time). */
export interface FastifyRequestLike {
  ip?: string;
  raw?: { socket?: { remoteAddress?: string } };
}
export interface FastifyReplyLike {
  header(name: string, value: string): unknown;
  code(status: number): FastifyReplyLike;
  type(t: string): FastifyReplyLike;
  send(body?: unknown): unknown;
  /** The Node response, whose end events release concurrency leases. */
  raw?: { once(event: string, fn: () => void): unknown };
}

export interface FastifyOptions<Req extends FastifyRequestLike = FastifyRequestLike, Rep extends FastifyReplyLike = FastifyReplyLike> extends CoreOptions<Req> {
  /** Sends a refusal; headers and Retry-After are already set. Default: 429, text body. */
  onDenied?: (request: Req, reply: Rep, decision: Decision) => unknown;
  /** Sends the fail-closed response. Default: 503, text body. */
  onUnavailable?: (request: Req, reply: Rep, err: Error) => unknown;
}

/** The default key: Fastify's request.ip (honours the trustProxy option), else the peer. */
export function fastifyClientIP(request: FastifyRequestLike): string {
  return normalizeIP(request.ip ?? request.raw?.socket?.remoteAddress);
}

/** An async onRequest (or preHandler) hook. */
export function hotkvFastify<Req extends FastifyRequestLike = FastifyRequestLike, Rep extends FastifyReplyLike = FastifyReplyLike>(
  options: FastifyOptions<Req, Rep>,
): (request: Req, reply: Rep) => Promise<unknown> {
  const limiter = new DecisionEngine<Req>(options, fastifyClientIP);
  return async (request, reply) => {
    const cost = limiter.cost(request);
    if (!(cost > 0)) return;
    let d: Decision;
    try {
      d = await limiter.decide(request, cost);
    } catch (e) {
      const err = asError(e);
      options.onError?.(err, request);
      if (options.failOpen) return;
      if (options.onUnavailable) return options.onUnavailable(request, reply, err);
      // Returning the reply after send() tells Fastify the hook answered the request.
      reply.code(503).type('text/plain').send('rate limiter unavailable');
      return reply;
    }
    if (limiter.holdsLeases(d)) {
      const release = () => void limiter.release(d, request);
      if (reply.raw) onResponseDone(reply.raw, release);
      else queueMicrotask(release);
    }
    for (const [k, v] of Object.entries(headersFor(d, options.legacyHeaders ?? false))) reply.header(k, v);
    (request as Req & { rateLimit?: Decision }).rateLimit = d;
    if (d.allowed) return;
    if (options.onDenied) return options.onDenied(request, reply, d);
    reply.code(429).type('text/plain').send(deniedText(d));
    return reply;
  };
}

/**
 * A Fastify plugin installing the hook on the instance it is registered on and, because it
 * skips Fastify's encapsulation (what fastify-plugin does, without the dependency), on the
 * parent too: register it on the root to limit every route.
 */
export const hotkvFastifyPlugin = Object.assign(
  async function hotkvFastifyPlugin(app: { addHook(name: 'onRequest', hook: (request: any, reply: any) => Promise<unknown>): unknown }, options: FastifyOptions<any, any>) {
    app.addHook('onRequest', hotkvFastify(options));
  },
  { [Symbol.for('skip-override')]: true, [Symbol.for('fastify.display-name')]: 'hotkv-rate-limit' },
);
