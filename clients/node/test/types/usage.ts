// Compiled (never run) by test/types.test.mjs with tsc --strict against the built declarations
// (dist/*/index.d.ts through package.json "exports"): the public API's types as users see them.
import express from 'express';
import Fastify from 'fastify';
import { createClient } from 'redis';
import {
  HotKV, HotKVCluster, hotkvModule, hotkvExpress, hotkvFastify, gcra, limiter, keySlot,
  type GCRAResult, type GCRALimitAllResult, type GCRALimitSpec, type RateLimitResult, type RateLimitStats, type RateLimitUpdateOptions, type ThrottleResult, type Decision,
} from '@hotkv/client';

export async function usage(): Promise<void> {
  const client = new HotKV({ url: 'hotkv://127.0.0.1:6379', RESP: 3, socket: { connectTimeout: 1000 } });
  const g: GCRAResult = await client.gcraLimit('k', 60000, 10);
  const n: number = g.remaining + g.retryAfterMs;
  const t: ThrottleResult = await client.clThrottle('k', 4, 1, 1, 0);
  const r: RateLimitResult = await client.rateLimitCheck('api', 'user:42', 2);
  const s: RateLimitStats = await client.rateLimitStats('api');
  const rate: number | undefined = s.refillPerSec ?? s.drainPerSec;
  await client.rateLimitCreate('tb', 20, 4000, { algo: 'token_bucket', refill: 5 });
  const shadowCreated: 'OK' = await client.rateLimitCreate('sh', 10, 1000, { shadow: true });
  const updated: 'OK' = await client.rateLimitUpdate('tb', { limit: 30, windowMs: 2000, refill: '2.5', shadow: false });
  const upd: RateLimitUpdateOptions = { drain: 1, shadow: true };
  const shadowInfo: [boolean, number] = [s.shadow, s.totalShadowDenied];
  void [shadowCreated, updated, upd, shadowInfo];
  const names: string[] = await client.rateLimitList();
  const reset: number = await client.gcraReset('a', 'b');
  void [n, t, r, rate, names, reset];
  const limits: GCRALimitSpec[] = [{ key: '{u42}:sec', periodMs: 1000, burst: 5 }, { key: '{u42}:day', periodMs: 86400000, burst: 1000 }];
  const all: GCRALimitAllResult = await client.gcraLimitAll(limits, 2);
  const perLimit: GCRAResult[] = all.limits;
  const refunded: GCRAResult = await client.gcraRefund('k', 60000, 10);
  const [queued] = await client.multi().hotkv.gcraLimitAll(limits).hotkv.gcraRefund('k', 60000, 10, 2).exec();
  void [all.denied, all.retryAfterMs, all.tooLarge, perLimit, refunded, queued];

  const big = new HotKV({ url: 'hotkv://127.0.0.1:6379', int64: 'bigint' });
  const limit: bigint = (await big.gcraLimit('k', 60000, 9223372036854775807n)).limit;
  const allRetry: bigint = (await big.gcraLimitAll([{ key: 'k', periodMs: 60000, burst: 10 }])).retryAfterMs;
  const refundLimit: bigint = (await big.gcraRefund('k', 60000, 10, 9223372036854775807n)).limit;
  const bigShadowDenied: bigint = (await big.rateLimitStats('api')).totalShadowDenied;
  void [limit, allRetry, refundLimit, bigShadowDenied];

  // Concurrency limiters: lease ids are exact in both modes (string / bigint).
  await client.rateLimitCreate('jobs', 4, 600000, { algo: 'concurrency' });
  const lease = await client.rateLimitCheck('jobs', 'tenant');
  const leaseText: string = lease.leaseId;
  const released: boolean = await client.rateLimitRelease('jobs', 'tenant', lease.leaseId);
  const bigLease: bigint = (await big.rateLimitCheck('jobs', 'tenant')).leaseId;
  await big.rateLimitRelease('jobs', 'tenant', bigLease);
  // @ts-expect-error a number-mode lease id is a string, not a number
  const lossy: number = lease.leaseId;
  void [leaseText, released, lossy];

  // The node-redis client stays available, and the typed commands work in MULTI.
  await client.redis.set('plain', 'value');
  const [a, b] = await client.multi().hotkv.gcraLimit('k', 1000, 1).hotkv.rateLimitPeek('api', 'u').exec();
  void [a, b];

  const own = createClient({ modules: { hotkv: hotkvModule() } });
  const viaModule: GCRAResult = await own.hotkv.gcraLimit('k', 1000, 1);
  void viaModule;

  const cluster = new HotKVCluster({ rootNodes: [{ url: 'hotkv://127.0.0.1:7000' }] });
  const slot: number = cluster.slot('{user:42}') + keySlot('x');
  void slot;

  const app = express();
  app.use(hotkvExpress({ client, limits: [gcra('api', 60000, 100), limiter('hourly')], key: (req) => req.ip ?? '' }));
  app.get('/', (_req, res) => { const d = res.locals.rateLimit as Decision; res.json(d.results); });

  const f = Fastify();
  f.addHook('onRequest', hotkvFastify({ client, limits: [gcra('api', 60000, 100)], failOpen: true }));
}

export async function inference(): Promise<void> {
  // int64 decides the result types, inferred from the option.
  const n = new HotKV({ url: 'hotkv://127.0.0.1:6379' });
  const asNumber: number = (await n.gcraLimit('k', 1000, 1)).remaining;
  const b = new HotKV({ url: 'hotkv://127.0.0.1:6379', int64: 'bigint' });
  const asBigint: bigint = (await b.gcraLimit('k', 1000, 1)).remaining;
  // @ts-expect-error a bigint client's results are not numbers
  const wrong: number = (await b.gcraLimit('k', 1000, 1)).remaining;
  const w = HotKV.wrap(createClient(), { int64: 'bigint' });
  const viaWrap: bigint = await w.gcraReset('k');
  const c = new HotKVCluster({ rootNodes: [], int64: 'bigint' });
  const viaCluster: bigint = (await c.rateLimitStats('x')).limit;
  void [asNumber, asBigint, wrong, viaWrap, viaCluster];
}
