// The Express and Fastify middlewares against a real server: real apps (Express through
// supertest, Fastify through fastify.inject), the server's clock frozen so the header values are
// exact. Header expectations follow clients/go/httplimit (spec section 12).
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import Fastify from 'fastify';
import request from 'supertest';
import { HotKV, gcra, limiter, hotkvExpress, hotkvFastify, hotkvFastifyPlugin, UnknownLimiterError, ceilDiv, normalizeIP } from '@hotkv/client';
import { startServer, freePort } from './helpers/server.mjs';

const T0 = 1700000000000;
let server;
let client;
before(async () => {
  server = await startServer();
  client = await new HotKV({ url: server.url }).connect();
});
after(async () => {
  await client?.close();
  await server?.stop();
});
beforeEach(async () => {
  await client.redis.sendCommand(['FLUSHALL']);
  for (const n of await client.rateLimitList()) await client.rateLimitDrop(n);
  await client.redis.sendCommand(['DEBUG', 'CLOCK', 'SET', String(T0)]);
});

const byHeader = (name) => (req) => String(req.headers[name] ?? '');

function expressApp(opts) {
  const app = express();
  app.use(hotkvExpress(opts));
  app.get('/', (_req, res) => res.json({ ok: true, decision: res.locals.rateLimit ?? null }));
  return app;
}

async function fastifyApp(opts, { plugin = false } = {}) {
  const app = Fastify();
  if (plugin) await app.register(hotkvFastifyPlugin, opts);
  else app.addHook('onRequest', hotkvFastify(opts));
  app.get('/', async (req) => ({ ok: true, decision: req.rateLimit ?? null }));
  await app.ready();
  return app;
}

// One interface over both frameworks: resolves to { status, headers, text }.
const frameworks = {
  express: async (opts) => {
    const app = expressApp(opts);
    return {
      get: async (headers = {}) => {
        const r = await request(app).get('/').set(headers);
        return { status: r.status, headers: r.headers, text: r.text };
      },
      close: async () => {},
    };
  },
  fastify: async (opts, o) => {
    const app = await fastifyApp(opts, o);
    return {
      get: async (headers = {}) => {
        const r = await app.inject({ method: 'GET', url: '/', headers });
        return { status: r.statusCode, headers: r.headers, text: r.body };
      },
      close: () => app.close(),
    };
  },
};

for (const [fw, make] of Object.entries(frameworks)) {
  test(`${fw}: spec example V4b (one GCRA limit)`, async () => {
    const app = await make({ client, limits: [gcra('api', 60000, 10)], key: byHeader('x-user') });
    try {
      for (let i = 0; i < 10; i++) {
        const r = await app.get({ 'x-user': 'u42' });
        assert.equal(r.status, 200);
        assert.equal(r.headers['ratelimit-policy'], '"api";q=10;w=60');
        assert.equal(r.headers['ratelimit'], `"api";r=${9 - i};t=${6 * (i + 1)}`);
        assert.equal(r.headers['retry-after'], undefined);
      }
      const r = await app.get({ 'x-user': 'u42' });
      assert.equal(r.status, 429);
      assert.equal(r.headers['retry-after'], '6');
      assert.equal(r.headers['ratelimit-policy'], '"api";q=10;w=60');
      assert.equal(r.headers['ratelimit'], '"api";r=0;t=6');
      assert.equal(r.text, 'rate limit exceeded');
      // State lives in rl:<name>:<key>; another key has its own budget.
      assert.equal(await client.redis.sendCommand(['EXISTS', 'rl:api:u42']), 1);
      assert.equal((await app.get({ 'x-user': 'other' })).status, 200);
    } finally {
      await app.close();
    }
  });

  test(`${fw}: default key is the client IP`, async () => {
    const app = await make({ client, limits: [gcra('ip', 1000, 1)] });
    try {
      assert.equal((await app.get()).status, 200);
      assert.equal((await app.get()).status, 429);
      const keys = await client.redis.sendCommand(['KEYS', 'rl:ip:*']);
      assert.deepEqual(keys, ['rl:ip:127.0.0.1']);
    } finally {
      await app.close();
    }
  });

  test(`${fw}: GCRA plus a named limiter; a refusal counts nothing elsewhere`, async () => {
    await client.rateLimitCreate('hourly', 2, 3600000);
    const app = await make({ client, key: byHeader('x-user'), limits: [gcra('sec', 1000, 5), limiter('hourly')], legacyHeaders: true });
    try {
      let r = await app.get({ 'x-user': 'a' });
      assert.equal(r.status, 200);
      assert.equal(r.headers['ratelimit-policy'], '"sec";q=5;w=1, "hourly";q=2;w=3600');
      // A named limiter that allows has no reset time: t is omitted for it.
      assert.equal(r.headers['ratelimit'], '"sec";r=4;t=1, "hourly";r=1');
      assert.equal(r.headers['x-ratelimit-limit'], '2');
      assert.equal(r.headers['x-ratelimit-remaining'], '1');
      assert.equal(r.headers['x-ratelimit-reset'], undefined);
      assert.equal((await app.get({ 'x-user': 'a' })).status, 200);
      r = await app.get({ 'x-user': 'a' });
      assert.equal(r.status, 429);
      assert.equal(r.headers['retry-after'], '3600');
      assert.equal(r.headers['ratelimit'], '"sec";r=3;t=1, "hourly";r=0;t=3600');
      assert.equal(r.headers['x-ratelimit-reset'], '3600');
      // The GCRA limit was not charged for the refused request (3 left, not 2), and the
      // limiter recorded the refusal.
      assert.equal((await client.gcraPeek('rl:sec:a', 1000, 5)).remaining, 2);
      const st = await client.rateLimitStats('hourly');
      assert.equal(st.totalAllowed, 2);
      assert.equal(st.totalDenied, 1);
    } finally {
      await app.close();
    }
  });

  test(`${fw}: token bucket window, costs, exemptions, too-large requests`, async () => {
    await client.rateLimitCreate('tb', 20, 4000, { algo: 'token_bucket', refill: 5 });
    const app = await make({ client, key: () => 'k', limits: [limiter('tb')], cost: (req) => Number(req.headers['x-cost'] ?? 1) });
    try {
      let r = await app.get({ 'x-cost': '4' });
      assert.equal(r.status, 200);
      assert.equal(r.headers['ratelimit-policy'], '"tb";q=20;w=4'); // ceil(20 / 5)
      assert.equal(r.headers['ratelimit'], '"tb";r=16');
      r = await app.get({ 'x-cost': '0' });
      assert.equal(r.status, 200);
      assert.equal(r.headers['ratelimit'], undefined);
      r = await app.get({ 'x-cost': '21' });
      assert.equal(r.status, 429);
      assert.equal(r.headers['retry-after'], undefined);
      assert.equal(r.text, 'request exceeds the rate limit');
      r = await app.get({ 'x-cost': '17' });
      assert.equal(r.status, 429);
      assert.equal(r.headers['retry-after'], '1'); // one token at 200 ms, rounded up
    } finally {
      await app.close();
    }
  });

  test(`${fw}: unknown limiter and server errors fail closed (503) by default`, async () => {
    const errors = [];
    const app = await make({ client, limits: [limiter('missing')], onError: (e) => errors.push(e) });
    try {
      const r = await app.get();
      assert.equal(r.status, 503);
      assert.equal(r.text, 'rate limiter unavailable');
      assert.ok(errors[0] instanceof UnknownLimiterError);
    } finally {
      await app.close();
    }
    // A server error reply (WRONGTYPE on the state key) is an error too.
    await client.redis.sendCommand(['RPUSH', 'rl:w:127.0.0.1', 'x']);
    const app2 = await make({ client, limits: [gcra('w', 1000, 1)], onError: (e) => errors.push(e) });
    try {
      assert.equal((await app2.get()).status, 503);
      assert.match(errors[1].message, /^WRONGTYPE/);
    } finally {
      await app2.close();
    }
  });

  test(`${fw}: failOpen lets requests through without headers`, async () => {
    const app = await make({ client, limits: [limiter('missing')], failOpen: true });
    try {
      const r = await app.get();
      assert.equal(r.status, 200);
      assert.equal(r.headers['ratelimit'], undefined);
    } finally {
      await app.close();
    }
  });

  test(`${fw}: an unreachable server, fail-closed and fail-open`, async () => {
    const port = await freePort(); // nothing listens there
    const down = new HotKV({ url: `hotkv://127.0.0.1:${port}`, socket: { reconnectStrategy: false, connectTimeout: 1000 } });
    const seen = [];
    const closed = await make({ client: down, limits: [gcra('x', 1000, 1)], onError: (e) => seen.push(e) });
    const open = await make({ client: down, limits: [gcra('x', 1000, 1)], failOpen: true, onError: (e) => seen.push(e) });
    try {
      assert.equal((await closed.get()).status, 503);
      assert.equal((await open.get()).status, 200);
      assert.equal(seen.length, 2);
      assert.match(String(seen[0].message), /ECONNREFUSED/);
    } finally {
      await closed.close();
      await open.close();
      down.destroy();
    }
  });
}

test('fastify: the plugin limits every route, also in child contexts', async () => {
  const app = Fastify();
  // Registered in its own context, the hook still applies to the root and its children: the
  // plugin skips encapsulation like fastify-plugin does.
  await app.register(hotkvFastifyPlugin, { client, limits: [gcra('plug', 60000, 1)], key: (req) => req.url });
  app.get('/root', async () => 'root');
  await app.register(async (child) => { child.get('/child', async () => 'child'); });
  await app.ready();
  try {
    for (const url of ['/root', '/child']) {
      assert.equal((await app.inject(url)).statusCode, 200, url);
      const r = await app.inject(url);
      assert.equal(r.statusCode, 429, url);
      assert.equal(r.headers['retry-after'], '60');
      assert.equal(r.body, 'rate limit exceeded');
    }
  } finally {
    await app.close();
  }
});

test('express: decisions reach the handler; custom onDenied', async () => {
  const app = express();
  app.use(hotkvExpress({
    client, limits: [gcra('d', 60000, 1)], key: () => 'same',
    onDenied: (_req, res, _next, d) => res.status(429).json({ retryAfter: d.retryAfter }),
  }));
  app.get('/', (_req, res) => res.json(res.locals.rateLimit));
  const ok = await request(app).get('/');
  assert.equal(ok.body.allowed, true);
  assert.equal(ok.body.results[0].policy, 'd');
  const no = await request(app).get('/');
  assert.equal(no.status, 429);
  assert.deepEqual(no.body, { retryAfter: 60 });
  assert.equal(no.headers['retry-after'], '60');
});

test('configuration errors are reported at construction', () => {
  assert.throws(() => hotkvExpress({ client, limits: [] }), /no limits/);
  assert.throws(() => hotkvExpress({ client, limits: [gcra('a', 1000, 1), limiter('a')] }), /duplicate policy/);
  assert.throws(() => hotkvFastify({ client, limits: [gcra('a', 0, 1)] }), /period/);
  assert.throws(() => hotkvFastify({ client, limits: [gcra('a\n', 1000, 1)] }), /printable/);
});

test('helpers: exact ceil(limit / rate) and IP normalisation', () => {
  assert.equal(ceilDiv(20, 5), 4);
  assert.equal(ceilDiv(10, 2.5), 4);
  assert.equal(ceilDiv(10, 3), 4);
  assert.equal(ceilDiv(1, 0.1), 10);
  assert.equal(ceilDiv(3, 0.00000001), 300000000);
  assert.equal(normalizeIP('::ffff:10.0.0.1'), '10.0.0.1');
  assert.equal(normalizeIP('::1'), '::1');
});
