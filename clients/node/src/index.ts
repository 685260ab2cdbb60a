/**
 * @hotkv/client: HotKV's rate-limiting commands (GCRA.LIMIT, GCRA.PEEK, GCRA.LIMITALL,
 * GCRA.REFUND, GCRA.RESET, CL.THROTTLE, RATELIMIT.*) as typed methods on node-redis, plus
 * Express and Fastify middlewares. Everything else is node-redis: connection handling, TLS, reconnection, RESP2 and
 * RESP3, cluster, pipelines and transactions.
 */
export { HotKV, HotKVCluster, RateLimitCommands, WrappedClient, toRedisUrl, REPLY_TYPE_MAPPING } from './client.js';
export type { CommandSender, HotKVOptions, HotKVClusterOptions, HotKVExtraOptions, HotKVRedisClient, HotKVRedisCluster } from './client.js';
export { hotkvModule } from './commands.js';
export type { GCRALimitSpec, HotKVModule, RateLimitCreateOptions, RateLimitUpdateOptions } from './commands.js';
export type { GCRAResult, GCRALimitAllResult, ThrottleResult, RateLimitResult, RateLimitStats, Algorithm } from './results.js';
export { HotKVError } from './errors.js';
export { formatRate } from './int64.js';
export type { Int, Int64Mode, IntArg, IntOf, LeaseIdArg, LeaseIdOf } from './int64.js';
export { keySlot, crc16, hashTag, SLOT_COUNT } from './slot.js';
export type { KeyLike } from './slot.js';
export * from './middleware/index.js';
