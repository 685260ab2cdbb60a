/** HTTP middlewares: Express and Fastify, sharing one decision engine (core.ts). */
export { gcra, limiter, headersFor, ceilSec, ceilDiv, normalizeIP, UnknownLimiterError, DecisionEngine } from './core.js';
export type { Limit, KeyFn, CoreOptions, Decision, LimitResult, LimiterClient } from './core.js';
export { hotkvExpress, expressClientIP } from './express.js';
export type { ExpressOptions, ExpressRequestLike, ExpressResponseLike, NextFn } from './express.js';
export { hotkvFastify, hotkvFastifyPlugin, fastifyClientIP } from './fastify.js';
export type { FastifyOptions, FastifyRequestLike, FastifyReplyLike } from './fastify.js';
