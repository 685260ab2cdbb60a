// Concurrency limiters (algo "concurrency"): the vectors C1-C8 of docs/ratelimit.md
// ("Concurrency limits: in-flight requests") through the typed API (rateLimitCreate,
// RateLimitResult.leaseId, rateLimitRelease) in RESP2 and RESP3, int64 "number" (lease ids as
// exact decimal strings) and "bigint" (bigints), through the node-redis module in a pipeline,
// and through HotKVCluster on the two-node stand-in; then 20 workers on a limit of 3 (never more
// in flight), and the Express and Fastify middlewares giving a request's lease back.
//
// Each block starts from an empty server with the clock set by DEBUG CLOCK SET, so lease ids
// are deterministic: id(t) = (t0 + t) * 1000000. Limiter names carry the {v} hash tag so that
// the cluster runner finds them on one node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import Fastify from 'fastify';
import request from 'supertest';
import { HotKV, HotKVError, gcra, limiter, hotkvExpress, hotkvFastify } from '@hotkv/client';
import { useServer } from './helpers/server.mjs';
import { T0, atT0, RATELIMIT_OPS, runBlocks, vectorTests, withClusterStandIn } from './helpers/runner.mjs';

const id = (t) => (BigInt(T0) + BigInt(t)) * 1000000n;
const E_SYNTAX = 'ERR syntax error';
const E_BIG = 'ERR invalid limit: must be at most 100000 for ALGO concurrency';
const E_LEASE = 'ERR invalid lease: must be a positive integer';
const E_NOTFOUND = 'ERR limiter not found';
const E_NOTCONC = 'ERR limiter is not a concurrency limiter';
const E_ARITY = "ERR wrong number of arguments for 'ratelimit.release' command";
const CONC = { algo: 'concurrency' };

// An expected result; lease is a bigint (0n: none) and is converted to the mode's type.
const r = (a, remaining, retryAfterMs, limit, current, lease = 0n) => ({
  allowed: a === 1, remaining, retryAfterMs, limit, current, leaseId: lease,
  unknownLimiter: limit === 0, tooLarge: a !== 1 && retryAfterMs === -1,
});

// Steps: ['flush']; ['at', ms]; ['create', name, limit, windowMs, options]; ['update', name,
// options]; ['check', name, key, cost, want]; ['peek', name, key, want]; ['release', name, key,
// leaseId, want]; ['reset', name, key, want]; ['stats', name, {field: want}];
// ['err', 'create' | 'update' | 'release' | 'raw', args, text].
const BLOCKS = [
  ['C1-C3', [
    ['flush'], ['at', 0],
    ['create', '{v}c', 3, 1000, CONC],
    ['check', '{v}c', 'u', undefined, r(1, 2, 0, 3, 0, id(0))],
    ['check', '{v}c', 'u', 1, r(1, 1, 0, 3, 1, id(0) + 1n)],
    ['at', 100],
    ['check', '{v}c', 'u', 1, r(1, 0, 0, 3, 2, id(100))],
    ['at', 200],
    ['check', '{v}c', 'u', 1, r(0, 0, 800, 3, 3)],
    ['peek', '{v}c', 'u', r(0, 0, 800, 3, 3)],
    // C2
    ['release', '{v}c', 'u', id(0) + 1n, true],
    ['release', '{v}c', 'u', id(0) + 1n, false],
    ['peek', '{v}c', 'u', r(1, 1, 0, 3, 2)],
    ['check', '{v}c', 'u', 1, r(1, 0, 0, 3, 2, id(200))],
    ['at', 300],
    ['release', '{v}c', 'v', id(0), false], // another key's
    ['release', '{v}c', 'u', 42, false], // never issued
    // C3: the t0 lease expires at exactly t0+1000.
    ['at', 999],
    ['check', '{v}c', 'u', 1, r(0, 0, 1, 3, 3)],
    ['at', 1000],
    ['check', '{v}c', 'u', 1, r(1, 0, 0, 3, 2, id(1000))],
    ['release', '{v}c', 'u', id(0), false], // expired
    ['stats', '{v}c', { algo: 'concurrency', limit: 3, windowMs: 1000, uniqueKeys: 1, totalAllowed: 5, totalDenied: 2, refillPerSec: undefined, drainPerSec: undefined }],
    ['at', 2200],
    ['stats', '{v}c', { uniqueKeys: 0, totalAllowed: 5, totalDenied: 2 }],
  ]],
  ['C4-C5', [
    ['flush'], ['at', 0],
    ['create', '{v}d', 10, 1000, CONC],
    ['check', '{v}d', 'u', 4, r(1, 6, 0, 10, 0, id(0))],
    ['at', 200],
    ['check', '{v}d', 'u', 4, r(1, 2, 0, 10, 4, id(200))],
    ['at', 400],
    ['check', '{v}d', 'u', 4, r(0, 2, 600, 10, 8)],
    ['check', '{v}d', 'u', 11, r(0, 2, -1, 10, 8)],
    ['release', '{v}d', 'u', id(0), true],
    ['check', '{v}d', 'u', 4, r(1, 2, 0, 10, 4, id(400))],
    ['peek', '{v}d', 'u', r(1, 2, 0, 10, 8)],
    // C5: RESET drops every lease; ids never repeat.
    ['reset', '{v}d', 'u', 1],
    ['reset', '{v}d', 'u', 0],
    ['peek', '{v}d', 'u', r(1, 10, 0, 10, 0)],
    ['check', '{v}d', 'u', 1, r(1, 9, 0, 10, 0, id(400) + 1n)],
    ['stats', '{v}d', { totalAllowed: 13, totalDenied: 15 }],
  ]],
  ['C6', [
    ['flush'], ['at', 0],
    ['create', '{v}s', 1, 1000, { algo: 'concurrency', shadow: true }],
    ['check', '{v}s', 'u', 1, r(1, 0, 0, 1, 0, id(0))],
    ['check', '{v}s', 'u', 1, r(1, 0, 1000, 1, 1)], // shadow-denied: let through, no lease
    ['peek', '{v}s', 'u', r(1, 0, 1000, 1, 1)],
    ['release', '{v}s', 'u', id(0), true],
    ['check', '{v}s', 'u', 1, r(1, 0, 0, 1, 0, id(0) + 1n)],
    ['stats', '{v}s', { algo: 'concurrency', shadow: true, totalAllowed: 2, totalDenied: 1, totalShadowDenied: 1 }],
  ]],
  ['C7', [
    ['flush'], ['at', 0],
    ['create', '{v}w', 3, 10000, CONC],
    ['check', '{v}w', 'u', 3, r(1, 0, 0, 3, 0, id(0))],
    ['at', 5000],
    ['check', '{v}w', 'u', 1, r(0, 0, 5000, 3, 3)],
    ['update', '{v}w', { windowMs: 2000 }],
    ['check', '{v}w', 'u', 1, r(1, 2, 0, 3, 0, id(5000))], // the t0 lease is out of a 2 s window
    ['update', '{v}w', { limit: 1 }],
    ['check', '{v}w', 'u', 1, r(0, 0, 2000, 1, 1)],
    ['err', 'update', ['{v}w', { limit: 100001 }], E_BIG],
    ['err', 'update', ['{v}w', { refill: 5 }], E_SYNTAX],
    ['err', 'raw', ['RATELIMIT.UPDATE', '{v}w', 'DRAIN', '5', 'LIMIT', '100001'], E_SYNTAX],
    ['err', 'update', ['{v}w', { limit: 100001, drain: 5 }], E_SYNTAX],
    ['stats', '{v}w', { limit: 1, windowMs: 2000 }],
  ]],
  ['C8', [
    ['flush'], ['at', 0],
    ['err', 'create', ['{v}x', 100001, 1000, CONC], E_BIG],
    ['err', 'create', ['{v}x', 100001, 1000, { algo: 'concurrency', drain: 5 }], E_SYNTAX],
    ['err', 'create', ['{v}x', 100001, 1000, { algo: 'concurrency', refill: 5 }], E_SYNTAX],
    ['create', '{v}x', 100000, 1000, { algo: 'CONCURRENCY' }],
    ['err', 'raw', ['RATELIMIT.RELEASE', '{v}x', 'u'], E_ARITY],
    ['err', 'raw', ['RATELIMIT.RELEASE', '{v}x', 'u', '1', '2'], E_ARITY],
    ['err', 'release', ['{v}x', 'u', 0], E_LEASE],
    ['err', 'release', ['{v}x', 'u', -1], E_LEASE],
    ['err', 'release', ['{v}x', 'u', 'abc'], E_LEASE],
    ['err', 'release', ['{v}x', 'u', 9223372036854775808n], E_LEASE],
    ['err', 'release', ['{v}nolimiter', 'u', 'abc'], E_LEASE], // arguments first
    ['err', 'release', ['{v}nolimiter', 'u', 1], E_NOTFOUND],
    ['create', '{v}api', 10, 1000, undefined],
    ['err', 'release', ['{v}api', 'u', 1], E_NOTCONC],
    // Other algorithms and an unknown limiter reply five fields: no lease.
    ['check', '{v}api', 'u', 1, r(1, 9, 0, 10, 0)],
    ['check', '{v}nolimiter', 'u', 1, r(0, 0, 0, 0, 0)],
    ['release', '{v}x', 'u', 1, false],
    ['release', '{v}x', 'u', '9223372036854775807', false],
    ['stats', '{v}x', { algo: 'concurrency', limit: 100000 }],
  ]],
];

const server = useServer();

// The node-redis module runs the vectors in a pipeline: a lease id read by exec() of a MULTI is
// inexact (see the test below).
vectorTests({
  server,
  via: 'pipeline',
  name: (RESP, mode, via) => (via
    ? `concurrency vectors through the node-redis module in a pipeline, RESP${RESP}`
    : `concurrency vectors C1-C8, RESP${RESP}, int64 ${mode}`),
}, (c, mode, via, t) => runBlocks(t, BLOCKS, { client: c, mode, via, ops: RATELIMIT_OPS }));

test('lease ids are never rounded: exec() refuses them, unsafe numbers are not sent', () => atT0(server, {}, async (c) => {
  await c.rateLimitCreate('c', 3, 1000, CONC);
  const first = await c.rateLimitCheck('c', 'u');
  assert.equal(first.leaseId, String(id(0)));
  assert.equal(typeof first.leaseId, 'string');
  // JSON-safe in number mode: the id is text.
  assert.equal(JSON.parse(JSON.stringify(first)).leaseId, '1700000000000000000');
  // node-redis 6.3.1 decodes EXEC's reply without the type mapping: the sixth field arrives
  // as an inexact number, which is refused rather than rounded.
  await assert.rejects(c.multi().hotkv.rateLimitCheck('c', 'u').exec(), HotKVError);
  // A number beyond 2^53 has lost digits already: refused before sending.
  await assert.rejects(c.rateLimitRelease('c', 'u', 1700000000000000001), HotKVError);
  assert.equal((await c.rateLimitPeek('c', 'u')).current, 2);
  // The exact forms release.
  assert.equal(await c.rateLimitRelease('c', 'u', first.leaseId), true);
  assert.equal(await c.rateLimitRelease('c', 'u', id(0) + 1n), true);
  assert.equal((await c.rateLimitPeek('c', 'u')).current, 0);
  // A released lease's id is gone.
  assert.equal(await c.rateLimitRelease('c', 'u', first.leaseId), false);
}));

test('parsing: five or six fields', async () => {
  const { parseRateLimit } = await import('../dist/esm/results.js');
  assert.equal(parseRateLimit(['1', '9', '0', '10', '0'], 'number').leaseId, '0');
  assert.equal(parseRateLimit(['1', '9', '0', '10', '0'], 'bigint').leaseId, 0n);
  assert.equal(parseRateLimit(['1', '2', '0', '3', '0', '1700000000000000001'], 'number').leaseId, '1700000000000000001');
  assert.equal(parseRateLimit(['1', '2', '0', '3', '0', '1700000000000000001'], 'bigint').leaseId, 1700000000000000001n);
  assert.throws(() => parseRateLimit(['1', '2', '0', '3', '0', '1', '7'], 'number'), HotKVError);
  assert.throws(() => parseRateLimit(['1', '2', '0', '3'], 'number'), HotKVError);
  assert.throws(() => parseRateLimit([1, 2, 0, 3, 0, 1700000000000000001], 'bigint'), HotKVError);
});

test('HotKVCluster: the vectors on the node of the {v} slot', (t) => withClusterStandIn({ int64: 'bigint' }, async ({ cluster, owner }) => {
  await runBlocks(t, BLOCKS, { client: cluster, admin: (a) => owner.sendCommand(a), mode: 'bigint', ops: RATELIMIT_OPS });
}));

for (const mode of ['number', 'bigint']) {
  test(`20 workers on a limit of 3 never have more than 3 in flight (int64 ${mode})`, async () => {
    const c = new HotKV({ url: server.url, int64: mode });
    await c.connect();
    try {
      await c.redis.sendCommand(['FLUSHALL']);
      await c.redis.sendCommand(['DEBUG', 'CLOCK', 'RESET']);
      await c.rateLimitCreate('jobs', 3, 60000, CONC);
      let inFlight = 0;
      let peak = 0;
      let acquired = 0;
      let denied = 0;
      const ids = new Set();
      const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
      const worker = async () => {
        for (let i = 0; i < 15; i++) {
          const res = await c.rateLimitCheck('jobs', 'tenant');
          if (!res.allowed) {
            assert.equal(String(res.leaseId), '0');
            denied++;
            await sleep(1);
            continue;
          }
          inFlight++;
          acquired++;
          peak = Math.max(peak, inFlight);
          ids.add(String(res.leaseId));
          await sleep(2);
          // Leave before releasing: the test's count never lags the server's.
          inFlight--;
          assert.equal(await c.rateLimitRelease('jobs', 'tenant', res.leaseId), true);
        }
      };
      await Promise.all(Array.from({ length: 20 }, worker));
      assert.ok(peak >= 1 && peak <= 3, `peak ${peak}`);
      assert.ok(acquired > 0);
      assert.equal(acquired + denied, 300);
      assert.equal(ids.size, acquired, 'a lease id was issued twice');
      assert.equal(Number((await c.rateLimitPeek('jobs', 'tenant')).current), 0);
      const st = await c.rateLimitStats('jobs');
      assert.deepStrictEqual([Number(st.totalAllowed), Number(st.totalDenied), Number(st.uniqueKeys)], [acquired, denied, 0]);
    } finally {
      await c.close();
    }
  });
}

// The middlewares: a slow request holds the only slot; the lease is released when the response
// is done, also when the handler fails, and when another limit refuses the request.
async function eventually(fn, what) {
  const deadline = Date.now() + 2000;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((res) => setTimeout(res, 5));
  }
}

function gate() {
  let open;
  const opened = new Promise((res) => { open = res; });
  let enter;
  const entered = new Promise((res) => { enter = res; });
  return { opened, open, entered, enter };
}

const frameworks = {
  express: (opts, handler) => {
    const app = express();
    app.use(hotkvExpress(opts));
    app.get('/', async (req, res, next) => {
      try {
        await handler(req);
        res.send('ok');
      } catch (e) {
        next(e);
      }
    });
    // A quiet error handler (Express's default logs the stack): 500.
    app.use((_err, _req, res, _next) => { res.status(500).send('error'); });
    return {
      get: async () => {
        const r = await request(app).get('/');
        return { status: r.status, headers: r.headers };
      },
      close: async () => {},
    };
  },
  fastify: async (opts, handler) => {
    const app = Fastify();
    app.addHook('onRequest', hotkvFastify(opts));
    app.get('/', async (req) => { await handler(req); return 'ok'; });
    await app.ready();
    return {
      get: async () => {
        const r = await app.inject({ method: 'GET', url: '/' });
        return { status: r.statusCode, headers: r.headers };
      },
      close: () => app.close(),
    };
  },
};

for (const [fw, make] of Object.entries(frameworks)) {
  test(`${fw}: a concurrency limiter's lease is released when the request is done`, () => atT0(server, { int64: fw === 'fastify' ? 'bigint' : 'number' }, async (c) => {
    const current = async () => Number((await c.rateLimitPeek('inflight', 'k')).current);
    await c.rateLimitCreate('inflight', 1, 60000, CONC);
    let g = gate();
    let fail = false;
    const errors = [];
    const app = await make({ client: c, key: () => 'k', limits: [limiter('inflight')], onError: (e) => errors.push(e) }, async () => {
      if (fail) {
        assert.equal(await current(), 1); // held while the handler runs
        throw new Error('handler failed');
      }
      g.enter();
      await g.opened;
    });
    try {
      const slow = app.get();
      await g.entered;
      assert.equal(await current(), 1);
      const refused = await app.get();
      assert.equal(refused.status, 429);
      assert.equal(refused.headers['ratelimit'], '"inflight";r=0;t=60');
      assert.equal(refused.headers['retry-after'], '60');
      g.open();
      const done = await slow;
      assert.equal(done.status, 200);
      assert.equal(done.headers['ratelimit'], '"inflight";r=0');
      await eventually(async () => (await current()) === 0, 'the lease to be released');

      // A handler that fails: the error response ends the request and frees the slot.
      fail = true;
      assert.equal((await app.get()).status, 500);
      await eventually(async () => (await current()) === 0, 'the failed request\'s lease to be released');
      fail = false;
      g = gate();
      g.open();
      assert.equal((await app.get()).status, 200);
      await eventually(async () => (await current()) === 0, 'the lease to be released');
      assert.deepStrictEqual(errors, []);
    } finally {
      await app.close();
    }

    // A GCRA limit that refuses: the concurrency limiter keeps nothing.
    const both = await make({ client: c, key: () => 'k', limits: [gcra('burst', 60000, 1), limiter('inflight')] }, async () => {});
    try {
      assert.equal((await both.get()).status, 200);
      assert.equal((await both.get()).status, 429);
      await eventually(async () => (await current()) === 0, 'no lease left');
    } finally {
      await both.close();
    }
    const st = await c.rateLimitStats('inflight');
    assert.deepStrictEqual([Number(st.totalAllowed), Number(st.totalDenied)], [4, 1]);
  }));
}
