// The client beyond the vectors: URLs and option pass-through, lazy and explicit connect,
// server errors surfacing with their exact text, MULTI/pipelines with typed replies, the
// node-redis module on a client of your own, HotKV.wrap, result flags, rates and int64.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, createClientPool, ErrorReply, TimeoutError } from 'redis';
import { HotKV, HotKVError, hotkvModule, toRedisUrl, formatRate, REPLY_TYPE_MAPPING } from '@hotkv/client';
import { useServer, freePort } from './helpers/server.mjs';

const T0 = 1700000000000;
const server = useServer();

async function fresh(c) {
  await c.connect();
  await c.redis.sendCommand(['FLUSHALL']);
  for (const n of await c.rateLimitList()) await c.rateLimitDrop(n);
  await c.redis.sendCommand(['DEBUG', 'CLOCK', 'SET', String(T0)]);
  return c;
}

test('URL translation', () => {
  assert.equal(toRedisUrl('hotkv://127.0.0.1:6379'), 'redis://127.0.0.1:6379');
  assert.equal(toRedisUrl('hotkvs://user:pa%40ss@db.example:6380/2'), 'rediss://user:pa%40ss@db.example:6380/2');
  assert.equal(toRedisUrl('HOTKV://h:1'), 'redis://h:1');
  assert.equal(toRedisUrl('redis://h:1'), 'redis://h:1');
  assert.equal(toRedisUrl('rediss://h:1'), 'rediss://h:1');
  assert.throws(() => toRedisUrl('http://h:1'), HotKVError);
  assert.throws(() => new HotKV({ url: 'h:1' }), /unsupported URL scheme/);
});

test('hotkvs:// gives node-redis a TLS connection', async () => {
  // No TLS server here: connecting a TLS client to the plain port must fail in the TLS
  // handshake, which shows the translated rediss:// URL reached node-redis as TLS.
  const c = new HotKV({ url: `hotkvs://127.0.0.1:${server.port}`, socket: { reconnectStrategy: false, connectTimeout: 2000 } });
  await assert.rejects(c.connect(), (err) => /SSL|TLS|EPROTO|wrong version|socket|closed/i.test(String(err?.message ?? err)));
  c.destroy();
});

test('the product snippet pattern: no connect() needed, and connect() is idempotent', async () => {
  const c = new HotKV({ url: server.url });
  try {
    const [a, b] = await Promise.all([c.gcraLimit('lazy', 60000, 10), c.gcraPeek('lazy', 60000, 10)]);
    assert.equal(a.denied, false);
    assert.equal(b.denied, false);
    await Promise.all([c.connect(), c.connect()]);
    assert.equal((await c.connect()).isReady, true);
  } finally {
    await c.close();
  }
  // Closed explicitly: commands fail instead of reconnecting behind the application's back.
  await assert.rejects(c.gcraLimit('lazy', 60000, 10), /closed/i);
});

test('node-redis options pass through (database, RESP)', async () => {
  const c = await new HotKV({ url: server.url, database: 3, RESP: 3 }).connect();
  const d0 = await new HotKV({ url: server.url, RESP: 2 }).connect();
  try {
    await d0.redis.sendCommand(['FLUSHALL']);
    await c.gcraLimit('in-db3', 60000, 10);
    assert.equal(await d0.redis.sendCommand(['EXISTS', 'in-db3']), 0);
    assert.equal(await c.redis.sendCommand(['EXISTS', 'in-db3']), 1);
    // RESP3 really is on: a raw STATS is a map (an object under node-redis's default mapping).
    await c.rateLimitCreate('r3', 10, 1000);
    const raw = await c.redis.sendCommand(['RATELIMIT.STATS', 'r3']);
    assert.equal(Array.isArray(raw), false);
    assert.equal(raw.name, 'r3');
    assert.ok(Array.isArray(await d0.redis.sendCommand(['RATELIMIT.STATS', 'r3'])));
  } finally {
    await c.close();
    await d0.close();
  }
});

test('server errors surface with their exact text', async () => {
  const c = await fresh(new HotKV({ url: server.url }));
  try {
    const cases = [
      [() => c.gcraLimit('k', 0, 10), 'ERR invalid period: must be a positive integer (milliseconds)'],
      [() => c.gcraLimit('k', 60000, 0), 'ERR invalid burst: must be a positive integer'],
      [() => c.gcraLimit('k', 60000, 10, 1.5), 'ERR invalid count: must be a positive integer'],
      [() => c.gcraLimit('k', NaN, 10), 'ERR invalid period: must be a positive integer (milliseconds)'],
      [() => c.gcraReset(), "ERR wrong number of arguments for 'gcra.reset' command"],
      [() => c.clThrottle('k', 1, 0, 1), 'ERR zero rates are not supported'],
      [() => c.rateLimitCreate('x', 10, 1000, { refill: 5 }), 'ERR syntax error'],
      [() => c.rateLimitCreate('x', 10, 1000, { algo: 'token_bucket', refill: 0 }), 'ERR invalid rate: must be a positive number'],
      [() => c.rateLimitCreate('', 10, 1000), 'ERR invalid name: must be 1 to 512 bytes'],
      [() => c.rateLimitCheck('x', 'k', 0), 'ERR invalid cost: must be a positive integer'],
      [() => c.rateLimitStats('nope'), 'ERR limiter not found'],
    ];
    for (const [fn, message] of cases) {
      await assert.rejects(fn(), (err) => err instanceof ErrorReply && err.message === message, message);
    }
    await c.redis.sendCommand(['RPUSH', 'list', 'a']);
    await assert.rejects(c.gcraLimit('list', 60000, 10), { message: 'WRONGTYPE Operation against a key holding the wrong kind of value' });
    assert.deepEqual(await c.redis.sendCommand(['LRANGE', 'list', '0', '-1']), ['a']);
  } finally {
    await c.close();
  }
});

test('result flags: tooLarge and unknownLimiter', async () => {
  const c = await fresh(new HotKV({ url: server.url }));
  try {
    const g = await c.gcraLimit('k', 1000, 5, 6);
    assert.deepEqual([g.denied, g.retryAfterMs, g.tooLarge], [true, -1, true]);
    const ok = await c.gcraLimit('k', 1000, 5);
    assert.deepEqual([ok.denied, ok.retryAfterMs, ok.tooLarge], [false, -1, false]);
    const t = await c.clThrottle('t', 4, 1, 1, 6);
    assert.deepEqual([t.limited, t.tooLarge, t.remaining], [true, true, 5]);
    const t0 = await c.clThrottle('t', 4, 1, 1, 0);
    assert.deepEqual([t0.limited, t0.tooLarge], [false, false]);
    await c.rateLimitCreate('api', 100, 60000);
    const big = await c.rateLimitCheck('api', 'x', 101);
    assert.deepEqual([big.allowed, big.retryAfterMs, big.tooLarge, big.unknownLimiter], [false, -1, true, false]);
    const none = await c.rateLimitPeek('missing', 'x');
    assert.deepEqual([none.allowed, none.limit, none.unknownLimiter], [false, 0, true]);
  } finally {
    await c.close();
  }
});

test('rates are written as plain decimals', async () => {
  assert.equal(formatRate(0.5), '0.5');
  assert.equal(formatRate(5), '5');
  assert.equal(formatRate(2.5), '2.5');
  assert.equal(formatRate(0.00000001), '0.00000001');
  assert.equal(formatRate(1.5e-10), '0.00000000015');
  assert.equal(formatRate(1e21), '1000000000000000000000');
  assert.equal(formatRate(1.25e22), '12500000000000000000000');
  assert.equal(formatRate('0.1'), '0.1');
  const c = await fresh(new HotKV({ url: server.url }));
  try {
    await c.rateLimitCreate('slow', 10, 1000, { algo: 'token_bucket', refill: 0.00000001 });
    assert.equal((await c.rateLimitStats('slow')).refillPerSec, 0.00000001);
    await c.rateLimitCreate('third', 10, 1000, { algo: 'LEAKY_BUCKET', drain: '333.3333333333333' });
    const st = await c.rateLimitStats('third');
    assert.equal(st.algo, 'leaky_bucket');
    assert.equal(st.drainPerSec, 333.3333333333333);
  } finally {
    await c.close();
  }
});

test('int64: numbers by default, bigint on request, never rounded', async () => {
  const n = await fresh(new HotKV({ url: server.url }));
  const b = await new HotKV({ url: server.url, int64: 'bigint' }).connect();
  try {
    const max = 9223372036854775807n;
    const r = await b.gcraLimit('big', 60000, max);
    assert.equal(r.limit, max);
    assert.equal(r.remaining, max - 1n);
    assert.equal(typeof (await b.gcraReset('big')), 'bigint');
    await assert.rejects(n.gcraLimit('big', 60000, max), (e) => e instanceof HotKVError && /int64: "bigint"/.test(e.message));
    // 2^53 - 1 is the largest value the number mode returns.
    const safe = await n.gcraLimit('safe', 60000, Number.MAX_SAFE_INTEGER);
    assert.equal(safe.limit, Number.MAX_SAFE_INTEGER);
    assert.throws(() => new HotKV({ url: server.url, int64: 'float' }), HotKVError);
  } finally {
    await n.close();
    await b.close();
  }
});

test('MULTI and pipelines with typed replies', async () => {
  for (const RESP of [2, 3]) {
    const c = await fresh(new HotKV({ url: server.url, RESP, int64: 'bigint' }));
    try {
      // One transaction shares one time sample (spec V28), even while the wall clock moves.
      await c.redis.sendCommand(['DEBUG', 'CLOCK', 'RESUME']).catch(() => {});
      const tx = await c.multi()
        .hotkv.gcraLimit('tx', 1000, 1)
        .hotkv.gcraLimit('tx', 1000, 1)
        .hotkv.rateLimitList()
        .exec();
      assert.deepEqual(tx.map((r) => r.denied), [false, true, undefined]);
      assert.equal(tx[1].retryAfterMs, 1000n);
      assert.deepEqual(tx[2], []);
      // Exact 64-bit values in a pipeline (the typed connection's type mapping applies to its
      // commands). In MULTI, node-redis 6.3.1 decodes EXEC's reply without it, so a value
      // beyond 2^53 arrives inexact and is refused rather than rounded.
      await assert.rejects(c.multi().hotkv.gcraLimit('big', 60000, 9223372036854775807n).exec(), (e) => e instanceof HotKVError && /inexact/.test(e.message));
      await c.redis.sendCommand(['DEBUG', 'CLOCK', 'SET', String(T0)]);
      await c.rateLimitCreate('tb', 20, 4000, { algo: 'token_bucket', refill: 5 });
      const [big, stats, check] = await c.multi()
        .hotkv.gcraLimit('big', 60000, 9223372036854775807n)
        .hotkv.rateLimitStats('tb')
        .hotkv.rateLimitCheck('tb', 'u', 3)
        .execAsPipeline();
      assert.equal(big.limit, 9223372036854775807n);
      assert.equal(stats.refillPerSec, 5);
      assert.equal(stats.algo, 'token_bucket');
      assert.equal(check.remaining, 17n);
      // A command error inside MULTI: exec rejects, the error carries the server's text.
      // The other commands still ran and keep their typed replies.
      await assert.rejects(c.multi().hotkv.gcraLimit('e', 0, 1).hotkv.gcraLimit('e', 1000, 1).exec(), (err) => {
        assert.deepEqual(err.errorIndexes, [0]);
        assert.equal(err.replies[0].message, 'ERR invalid period: must be a positive integer (milliseconds)');
        assert.equal(err.replies[1].denied, false);
        return true;
      });
    } finally {
      await c.close();
    }
  }
});

test('the node-redis module on your own client, and HotKV.wrap', async () => {
  const own = createClient({ url: toRedisUrl(server.url), modules: { hotkv: hotkvModule() } });
  own.on('error', () => {});
  await own.connect();
  try {
    await own.sendCommand(['FLUSHALL']);
    const r = await own.hotkv.gcraLimit('own', 60000, 10);
    assert.deepEqual([r.denied, r.remaining], [false, 9]);
    const [x, y] = await own.multi().hotkv.gcraPeek('own', 60000, 10).hotkv.gcraReset('own').exec();
    assert.equal(x.remaining, 8);
    assert.equal(y, 1);
    // Exact values need the NUMBER: String mapping, which HotKV's own client applies.
    const exact = own.withTypeMapping(REPLY_TYPE_MAPPING);
    const bigMod = createClient({ url: toRedisUrl(server.url), modules: { hotkv: hotkvModule({ int64: 'bigint' }) } });
    bigMod.on('error', () => {});
    await bigMod.connect();
    try {
    const big = await bigMod.withTypeMapping(REPLY_TYPE_MAPPING).hotkv.gcraLimit('b', 1, 1000000000000n);
    assert.equal(big.limit, 1000000000000n);
    // Without it, an integer beyond 2^53 arrives inexact and is refused, not passed on rounded.
    await assert.rejects(bigMod.hotkv.gcraLimit('b2', 1, 9223372036854775807n), HotKVError);
    } finally {
      await bigMod.close();
    }
    assert.equal((await exact.hotkv.gcraLimit('own', 60000, 10)).remaining, 9);

    const w = HotKV.wrap(own);
    assert.equal((await w.gcraLimit('own', 60000, 10)).remaining, 8);
    assert.equal(w.redis, own);
    // A client pool (node-redis createClientPool) works the same way.
    const pool = createClientPool({ url: toRedisUrl(server.url) }, { minimum: 1, maximum: 3 });
    pool.on('error', () => {});
    await pool.connect();
    try {
      const wp = HotKV.wrap(pool, { int64: 'bigint' });
      const rs = await Promise.all([1, 2, 3].map(() => wp.gcraLimit('pooled', 60000, 10)));
      assert.deepEqual(rs.map((r) => r.remaining).sort(), [7n, 8n, 9n]);
    } finally {
      await pool.close();
    }
  } finally {
    await own.close();
  }
});

test('an unreachable server: commands fail within the command timeout, never hang', async () => {
  // node-redis's default reconnect strategy retries for ever; the lazy connect does not wait
  // for it, so the command is bounded by commandOptions.timeout.
  const port = await freePort();
  const c = new HotKV({ url: `hotkv://127.0.0.1:${port}`, commandOptions: { timeout: 300 } });
  const t = Date.now();
  await assert.rejects(c.gcraLimit('k', 1000, 1), TimeoutError);
  assert.ok(Date.now() - t < 3000);
  // An explicit connect() waits for the connection, as in node-redis; destroy ends it.
  c.destroy();
});

test('connection errors go to onError and reject the command', async () => {
  const port = await freePort(); // nothing listens there
  const seen = [];
  const c = new HotKV({ url: `hotkv://127.0.0.1:${port}`, socket: { reconnectStrategy: false }, onError: (e) => seen.push(e) });
  await assert.rejects(c.gcraLimit('k', 1000, 1), /ECONNREFUSED/);
  assert.ok(seen.length >= 1);
  c.destroy();
});

test('multi() also connects by itself', async () => {
  const c = new HotKV({ url: server.url });
  try {
    const [r] = await c.multi().hotkv.gcraPeek('lazy-multi', 60000, 10).exec();
    assert.equal(r.remaining, 9);
  } finally {
    await c.close();
  }
});
