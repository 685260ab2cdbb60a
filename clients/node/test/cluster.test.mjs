// HotKVCluster over node-redis's cluster client. HotKV has no cluster mode yet, so this runs
// against a stand-in (test/helpers/fakecluster.mjs): two real servers behind proxies that
// report a two-node topology in CLUSTER SLOTS. What it proves: each command is routed to the
// node owning the slot of its routing key (the key for GCRA.*/CL.THROTTLE, the limiter name for
// RATELIMIT.*), that slot is the one the client computes (keySlot), multi-key GCRA.RESET is
// refused client-side across slots, RATELIMIT.LIST merges every node, and MULTI runs on one
// node. Not covered until HotKV has cluster mode: MOVED/ASK redirections and resharding, and
// server-side CROSSSLOT errors.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';
import express from 'express';
import request from 'supertest';
import { HotKVCluster, HotKVError, keySlot, hotkvExpress, gcra, limiter } from '@hotkv/client';
import { startFakeCluster } from './helpers/fakecluster.mjs';

let fc;
const direct = []; // plain clients straight to each node's server
before(async () => {
  fc = await startFakeCluster();
  for (const n of fc.nodes) {
    const c = createClient({ socket: { port: n.server.port, host: '127.0.0.1' }, RESP: 2 });
    c.on('error', () => {});
    await c.connect();
    direct.push(c);
  }
});
after(async () => {
  for (const c of direct) await c.close();
  await fc?.stop();
});

const serverIndexOf = (key) => fc.nodes.indexOf(fc.ownerOf(keySlot(key)));

async function flush() {
  for (const c of direct) {
    await c.sendCommand(['FLUSHALL']);
  }
}

for (const RESP of [2, 3]) {
  test(`RESP${RESP}: commands land on the node owning their key's slot`, async () => {
    await flush();
    const cluster = new HotKVCluster({ rootNodes: [{ url: `hotkv://127.0.0.1:${fc.nodes[0].port}` }], RESP });
    try {
      // Known slots: foo is 12182 (node B), bar 5061 (node A).
      assert.equal(serverIndexOf('foo'), 1);
      assert.equal(serverIndexOf('bar'), 0);
      const keys = ['foo', 'bar', '{user1000}.following', '{user1000}.followers'];
      for (let i = 0; i < 40; i++) keys.push(`k:${randomBytes(6).toString('hex')}`);
      for (const k of keys) {
        const r = await cluster.gcraLimit(k, 60000, 10);
        assert.equal(r.remaining, 9, k);
        const want = serverIndexOf(k);
        assert.equal(await direct[want].exists(k), 1, `${k} (slot ${keySlot(k)}) on node ${want}`);
        assert.equal(await direct[1 - want].exists(k), 0, `${k} not on node ${1 - want}`);
        assert.equal((await cluster.nodeFor(k)).port, fc.nodes[want].port);
      }
      assert.ok(keys.some((k) => serverIndexOf(k) === 0) && keys.some((k) => serverIndexOf(k) === 1));
      // The other GCRA commands route the same way.
      assert.equal((await cluster.gcraPeek('foo', 60000, 10)).remaining, 8);
      const t = await cluster.clThrottle('foo', 9, 10, 60);
      assert.equal(t.remaining, 8);
      assert.equal(await cluster.gcraReset('foo'), 1);
      assert.equal(await direct[1].exists('foo'), 0);
    } finally {
      await cluster.close();
    }
  });

  test(`RESP${RESP}: limiters live on the node of their name; LIST merges all nodes`, async () => {
    await flush();
    const cluster = await new HotKVCluster({ rootNodes: [{ url: `hotkv://127.0.0.1:${fc.nodes[1].port}` }], RESP }).connect();
    try {
      const names = ['api', 'uploads', '{tenant:7}:api', '{tenant:7}:search', 'b', 'A'];
      for (const n of names) {
        await cluster.rateLimitCreate(n, 10, 60000, { algo: 'token_bucket', refill: 2.5 });
        const want = serverIndexOf(n);
        const onNode = await direct[want].sendCommand(['RATELIMIT.LIST']);
        assert.ok(onNode.includes(n), `${n} on node ${want}`);
        assert.ok(!(await direct[1 - want].sendCommand(['RATELIMIT.LIST'])).includes(n));
        // The per-limiter key does not route: any key is checked on the name's node.
        for (const key of ['user:1', 'user:2', '{other}']) {
          assert.equal((await cluster.rateLimitCheck(n, key, 3)).remaining, 7);
        }
        assert.equal((await cluster.rateLimitPeek(n, 'user:1')).remaining, 7);
        const st = await cluster.rateLimitStats(n);
        assert.deepEqual([st.uniqueKeys, st.totalAllowed, st.refillPerSec], [3, 9, 2.5]);
        assert.equal(await cluster.rateLimitReset(n, 'user:1'), 1);
      }
      assert.deepEqual(await cluster.rateLimitList(), [...names].sort());
      assert.equal(await cluster.rateLimitDrop('api'), 'OK');
      assert.ok(!(await cluster.rateLimitList()).includes('api'));
      for (const n of await cluster.rateLimitList()) await cluster.rateLimitDrop(n);
      assert.deepEqual(await cluster.rateLimitList(), []);
    } finally {
      await cluster.close();
    }
  });

  test(`RESP${RESP}: multi-key GCRA.RESET needs one slot; MULTI on one node`, async () => {
    await flush();
    const cluster = new HotKVCluster({ rootNodes: [{ url: `hotkv://127.0.0.1:${fc.nodes[0].port}` }], RESP, int64: 'bigint' });
    try {
      // foo and bar are on different nodes: refused before anything is sent.
      await assert.rejects(cluster.gcraReset('foo', 'bar'), (e) => e instanceof HotKVError && /CROSSSLOT/.test(e.message));
      // Same hash tag, same slot: allowed, on the tag's node.
      await cluster.gcraLimit('rl:{user:42}:sec', 1000, 10);
      await cluster.gcraLimit('rl:{user:42}:hour', 3600000, 1000);
      assert.equal(await direct[serverIndexOf('user:42')].exists('rl:{user:42}:sec'), 1);
      assert.equal(await cluster.gcraReset('rl:{user:42}:sec', 'rl:{user:42}:hour', 'rl:{user:42}:none'), 2n);
      // A transaction for one slot, routed by its key; typed, exact results.
      const [a, b] = await cluster.multi('{user:42}')
        .hotkv.gcraLimit('rl:{user:42}:sec', 1000, 1)
        .hotkv.gcraLimit('rl:{user:42}:sec', 1000, 1)
        .exec();
      assert.deepEqual([a.denied, b.denied, b.retryAfterMs], [false, true, 1000n]);
      assert.equal(await direct[serverIndexOf('user:42')].exists('rl:{user:42}:sec'), 1);
      // Server errors come back unchanged through the cluster client.
      await assert.rejects(cluster.gcraLimit('foo', 0, 1), { message: 'ERR invalid period: must be a positive integer (milliseconds)' });
    } finally {
      await cluster.close();
    }
  });
}

test('cluster: hotkv:// URLs in rootNodes and defaults', async () => {
  const cluster = new HotKVCluster({
    rootNodes: [{ url: `hotkv://127.0.0.1:${fc.nodes[0].port}` }],
    defaults: { socket: { connectTimeout: 2000 } },
  });
  try {
    assert.equal(cluster.slot('foo'), 12182);
    assert.equal((await cluster.nodeFor('foo')).port, fc.nodes[1].port);
  } finally {
    await cluster.close();
  }
  assert.throws(() => new HotKVCluster({ rootNodes: [{ url: 'http://x:1' }] }), /unsupported URL scheme/);
});

test('cluster: the Express middleware on a cluster client', async () => {
  await flush();
  const cluster = await new HotKVCluster({ rootNodes: [{ url: `hotkv://127.0.0.1:${fc.nodes[0].port}` }] }).connect();
  try {
    await cluster.rateLimitCreate('daily', 2, 86400000);
    const app = express();
    app.use(hotkvExpress({ client: cluster, key: (req) => String(req.headers['x-user']), limits: [gcra('sec', 1000, 5), limiter('daily')] }));
    app.get('/', (_req, res) => res.send('ok'));
    for (const user of ['u1', 'u2', 'u3', 'u4']) {
      assert.equal((await request(app).get('/').set('x-user', user)).status, 200);
      assert.equal((await request(app).get('/').set('x-user', user)).status, 200);
      const r = await request(app).get('/').set('x-user', user);
      assert.equal(r.status, 429);
      assert.equal(r.headers['ratelimit'], '"sec";r=3;t=1, "daily";r=0;t=86400');
      // The GCRA state is on the node of its own key, the limiter on the node of its name.
      assert.equal(await direct[serverIndexOf(`rl:sec:${user}`)].exists(`rl:sec:${user}`), 1);
    }
    assert.equal((await cluster.rateLimitStats('daily')).uniqueKeys, 4);
  } finally {
    await cluster.close();
  }
});
