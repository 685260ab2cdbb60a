// ioredis's Cluster against a SHARDED HotKV cluster: 3 shards x 3 nodes, each shard a Raft group,
// the slot map in the meta Raft group (test/helpers/shardedcluster.mjs forms it as
// scripts/cluster-demo.sh does). One cluster serves the file (startup ~10 s). The first test
// drives the workload over all three shards (SET/GET, hash-tagged MSET/MGET, CROSSSLOT,
// GCRA.LIMIT bursts); the second SIGKILLs one shard's Raft leader while the workload runs and
// checks the client keeps working within a bound and that no GCRA admission is granted twice;
// the third moves slots 0-3000 from s1 to s2 and back (CLUSTERX MIGRATE) under a
// SET/GET/GCRA.LIMIT workload on keys in that range.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, Command } from 'ioredis';
import { keySlot } from '@hotkv/client';
import {
  startShardedCluster, SHARDS, NODES, SLOT_RANGES, shardOfSlot, waitFor, cmd, moveSlots,
} from './helpers/shardedcluster.mjs';

const HOUR_MS = 3600000;
// How long the client may take to get through a leader's SIGKILL (election ~1 s, slot map
// update ~1 s; the rest is room for a loaded 2-core machine).
const FAILOVER_BOUND_MS = 20000;

let sc;
let failed = false;
before(async () => {
  sc = await startShardedCluster();
});
after(async () => {
  if (failed) console.error(sc?.logs());
  await sc?.stop();
});

function newCluster() {
  // Options for a fast reaction to a failover:
  // - slotsRefreshInterval 1000 (default 5000): CLUSTER SLOTS is reloaded every second, so a
  //   new leader that the slot map already names is found even without a redirect.
  // - retryDelayOnFailover / retryDelayOnClusterDown / retryDelayOnTryAgain 100 ms (the
  //   defaults, stated): a command that met a closed connection, -CLUSTERDOWN or -TRYAGAIN is
  //   retried after 100 ms, the first two after a slot reload.
  // - maxRedirections 200 (default 16): every such retry counts as a redirection, and 16 x
  //   100 ms is shorter than an election on a loaded machine; 200 bounds it at ~20 s.
  // - connectTimeout 1000: a connection attempt to a dead node gives up quickly.
  const c = new Cluster(sc.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })), {
    slotsRefreshInterval: 1000,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    maxRedirections: 200,
    redisOptions: { connectTimeout: 1000 },
  });
  c.on('error', () => {}); // node errors during the failover; commands report their own
  return c;
}

// GCRA.LIMIT is unknown to ioredis's command table, so it would go to a random master and
// follow -MOVED; routed by its key (the first argument), it goes to the owner directly.
class KeyedCommand extends Command {
  constructor(name, args) {
    super(name, args, { replyEncoding: 'utf8' });
    this.routingKey = String(args[0]);
  }
  getKeys() {
    return [this.routingKey];
  }
}
async function gcraLimit(c, key, periodMs, burst) {
  const command = new KeyedCommand('GCRA.LIMIT', [key, periodMs, burst]);
  c.sendCommand(command);
  return command.promise; // [denied, limit, remaining, retry_after_ms, reset_after_ms]
}

function keysPerShard(prefix, perShard) {
  const out = Object.fromEntries(Array.from({ length: SHARDS }, (_, k) => [k + 1, []]));
  for (let i = 0; Object.values(out).some((v) => v.length < perShard); i++) {
    const k = `${prefix}:${i}`;
    const s = shardOfSlot(keySlot(k));
    if (out[s].length < perShard) out[s].push(k);
  }
  return out;
}

test('ioredis Cluster: workload over three shards', async (t) => {
  t.after(() => { failed ||= t.passed === false; });
  const c = newCluster();
  try {
    // The client sees three masters, each with its shard's slot range.
    await waitFor('the cluster client to be ready', 30000, () => c.status === 'ready');
    assert.equal(c.nodes('master').length, SHARDS);
    // cluster_state:ok needs every shard's leader, not every follower's address: a follower
    // shows in CLUSTER SLOTS once its address is in the map, a moment later. Reload until all are.
    await waitFor('every node in the client\'s slot map', 15000, async () => {
      if (c.nodes('all').length === SHARDS * NODES) return true;
      await new Promise((resolve) => c.refreshSlotsCache(() => resolve()));
      return false;
    });
    assert.equal(c.nodes('all').length, SHARDS * NODES);
    const byPort = new Map(sc.nodes.map((n) => [n.port, n]));
    for (const [k, [lo, hi]] of SLOT_RANGES.entries()) {
      for (const slot of [lo, hi]) {
        const [master, ...replicas] = c.slots[slot];
        assert.equal(byPort.get(Number(master.split(':')[1])).shard, k + 1, `slot ${slot}`);
        assert.equal(replicas.length, NODES - 1);
      }
    }

    // SET/GET on many keys, spread over every shard.
    const keys = Array.from({ length: 600 }, (_, i) => `key:${i}`);
    const perShard = { 1: 0, 2: 0, 3: 0 };
    for (const k of keys) perShard[shardOfSlot(keySlot(k))]++;
    assert.ok(Object.values(perShard).every((n) => n > 150), JSON.stringify(perShard));
    assert.deepEqual(new Set(await Promise.all(keys.map((k) => c.set(k, `v-${k}`)))), new Set(['OK']));
    assert.deepEqual(await Promise.all(keys.map((k) => c.get(k))), keys.map((k) => `v-${k}`));

    // Multi-key commands within one hash tag run on the tag's shard.
    assert.equal(await c.mset('{user:1}:a', '1', '{user:1}:b', '2'), 'OK');
    assert.deepEqual(await c.mget('{user:1}:a', '{user:1}:b', '{user:1}:none'), ['1', '2', null]);
    assert.equal(await c.del('{user:1}:a', '{user:1}:b'), 2);

    // Across slots ioredis sends the command to the first key's node and surfaces the
    // server's -CROSSSLOT unchanged; nothing is written.
    const a = 'key:0';
    const b = keys.find((k) => shardOfSlot(keySlot(k)) !== shardOfSlot(keySlot(a)));
    await assert.rejects(c.mset(a, 'x', b, 'y'), (e) => e.name === 'ReplyError'
      && e.message === "CROSSSLOT Keys in request don't hash to the same slot");
    await assert.rejects(c.mget(a, b), /^ReplyError: CROSSSLOT Keys in request don't hash to the same slot$/);
    assert.deepEqual([await c.get(a), await c.get(b)], [`v-${a}`, `v-${b}`]);

    // GCRA.LIMIT with a burst on keys in all three shards: exactly `burst` admissions.
    const burst = 7;
    for (const [s, gkeys] of Object.entries(keysPerShard('gcra:w', 3))) {
      for (const k of gkeys) {
        const replies = [];
        for (let i = 0; i < burst + 5; i++) replies.push(await gcraLimit(c, k, HOUR_MS, burst));
        assert.deepEqual(replies.map((r) => r[0]), [...Array(burst).fill(0), ...Array(5).fill(1)], `${s} ${k}`);
        assert.deepEqual(replies.slice(0, burst).map((r) => r[2]), Array.from({ length: burst }, (_, i) => burst - 1 - i));
        assert.ok(replies.slice(burst).every((r) => r[1] === burst && r[3] > 0));
        // The key lives on its shard's leader: a plain connection there sees it.
        const leader = await sc.leaderOf(Number(s));
        assert.equal(await cmd(leader.port, 'EXISTS', k), 1);
      }
    }
  } finally {
    c.disconnect();
  }
});

test('ioredis Cluster: a shard leader SIGKILLed under the workload', async (t) => {
  t.after(() => { failed ||= t.passed === false; });
  const c = newCluster();
  const burst = 40;
  const victimShard = 2;
  try {
    await waitFor('the cluster client to be ready', 30000, () => c.status === 'ready');
    const gkeys = keysPerShard('gcra:f', 3);
    const skeys = keysPerShard('kv:f', 1);
    const allowed = new Map(Object.values(gkeys).flat().map((k) => [k, 0]));
    const unknown = new Map([...allowed.keys()].map((k) => [k, 0])); // calls whose reply was lost
    const errors = [];

    // fn() retried beyond the client's own retries, up to the bound; each error is kept.
    async function bounded(what, fn) {
      const start = Date.now();
      for (;;) {
        try {
          return await fn();
        } catch (e) {
          errors.push(`${what}: ${e.message}`);
          if (Date.now() - start > FAILOVER_BOUND_MS) throw new Error(`${what}: no recovery within ${FAILOVER_BOUND_MS} ms: ${e.message}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    }
    async function gcra(k) {
      let r;
      try {
        r = await gcraLimit(c, k, HOUR_MS, burst);
      } catch (e) {
        // The kill may have eaten the reply: admitted or not, it is not counted.
        unknown.set(k, unknown.get(k) + 1);
        errors.push(`GCRA.LIMIT ${k}: ${e.message}`);
        return;
      }
      assert.equal(r[1], burst);
      if (r[0] === 0) allowed.set(k, allowed.get(k) + 1);
      assert.ok(allowed.get(k) <= burst, `${k}: ${allowed.get(k)} admissions`);
    }

    let victim;
    let killedAt;
    const killer = (async () => {
      await new Promise((r) => setTimeout(r, 1000));
      victim = await sc.leaderOf(victimShard); // the leader now (a loaded machine can move it)
      await victim.kill(); // resolves once the process is gone
      killedAt = Date.now();
    })();

    // The workload: every iteration writes and reads a key in each shard and spends one unit
    // of each GCRA key; it runs until 3 s after the victim's shard served a write again.
    let it = 0;
    let recoveredAt;
    let firstWriteAfterKill;
    while (recoveredAt === undefined || Date.now() - recoveredAt < 3000) {
      for (let s = 1; s <= SHARDS; s++) {
        const k = `{${skeys[s][0]}}:${it}`; // the tag keeps it on shard s
        assert.equal(shardOfSlot(keySlot(k)), s, k);
        const t0 = Date.now();
        await bounded(`SET ${k}`, () => c.set(k, String(it)));
        assert.equal(await bounded(`GET ${k}`, () => c.get(k)), String(it));
        if (killedAt !== undefined && s === victimShard && t0 > killedAt && firstWriteAfterKill === undefined) {
          firstWriteAfterKill = Date.now() - killedAt;
        }
        await Promise.all(gkeys[s].map(gcra));
      }
      if (recoveredAt === undefined && firstWriteAfterKill !== undefined) recoveredAt = Date.now();
      assert.ok(killedAt === undefined || Date.now() - killedAt < FAILOVER_BOUND_MS + 10000, 'workload stuck');
      it++;
      await new Promise((r) => setTimeout(r, 10));
    }
    await killer;
    const newLeader = await sc.leaderOf(victimShard);
    assert.notEqual(newLeader, victim);
    console.log(`victim ${victim.id}: new leader ${newLeader.id}; first write to its shard ${firstWriteAfterKill} ms`
      + ` after the SIGKILL; ${it} iterations; ${errors.length} errors: ${errors.slice(0, 5).join(' | ')}`);

    // Every key written before, during and after the failover reads back.
    for (let s = 1; s <= SHARDS; s++) {
      for (let j = 0; j < it; j++) {
        const k = `{${skeys[s][0]}}:${j}`;
        assert.equal(await bounded(`GET ${k}`, () => c.get(k)), String(j), k);
      }
    }

    // After the failover: spend the rest of each budget; once `burst` admissions are counted
    // the next call must be denied, and a denial must come no later than that.
    for (const [s, ks] of Object.entries(gkeys)) {
      for (const k of ks) {
        for (;;) {
          const r = await bounded(`GCRA.LIMIT ${k}`, () => gcraLimit(c, k, HOUR_MS, burst));
          if (r[0] === 1) break;
          allowed.set(k, allowed.get(k) + 1);
          assert.ok(allowed.get(k) <= burst, `${k}: more than ${burst} admissions counted`);
        }
        if (Number(s) !== victimShard) {
          // Nothing was lost on a shard that kept its leader.
          assert.equal(allowed.get(k), burst, `${k} (${unknown.get(k)} failed calls)`);
        } else if (allowed.get(k) < burst) {
          // Admissions whose reply the kill took (or that ioredis retried on -TRYAGAIN).
          console.log(`${k}: ${burst - allowed.get(k)} admissions without a reply (${unknown.get(k)} calls failed)`);
        }
        const again = await gcraLimit(c, k, HOUR_MS, burst);
        assert.deepEqual([again[0], again[2]], [1, 0], k);
      }
    }
  } finally {
    c.disconnect();
  }
});

// The slot range moved under load: every key of the test hashes into it, s1 owns it at first.
const MOVE_LO = 0;
const MOVE_HI = 3000;
const NEVER_REFILLS_MS = 1e9; // a GCRA period no test outlives: nothing refills

// ioredis handles the moves itself: -TRYAGAIN while the source fences the range is retried
// after retryDelayOnTryAgain (100 ms), -MOVED once the meta group gave the range away updates
// the slot and reloads CLUSTER SLOTS; both count against maxRedirections (200). The test's
// loop does NOT retry, so any error reaching it fails the test.
test('ioredis Cluster: slot moves under load', async (t) => {
  t.after(() => { failed ||= t.passed === false; });
  const c = newCluster();
  try {
    await waitFor('the cluster client to be ready', 30000, () => c.status === 'ready');
    const inRange = [];
    for (let i = 0; inRange.length < 44; i++) {
      const k = `mv:${i}`;
      if (keySlot(k) >= MOVE_LO && keySlot(k) <= MOVE_HI) inRange.push(k);
    }
    const skeys = inRange.slice(0, 40);
    const gkeys = inRange.slice(40);
    assert.deepEqual(new Set(inRange.map((k) => shardOfSlot(keySlot(k)))), new Set([1]));
    // One unit of each GCRA key per iteration: the smaller bursts are spent before or during
    // the moves (their denials must survive them), the largest after them.
    const bursts = new Map(gkeys.map((k, j) => [k, [4, 10, 20, 1000][j]]));
    const allowed = new Map(gkeys.map((k) => [k, 0]));
    const deniedFrom = new Map(); // per GCRA key: the iteration of its first denial
    const last = new Map();

    let it = 0;
    let stop = false;
    const moved = [];
    const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
    const mover = (async () => {
      try {
        await sleep(500); // the workload runs on s1 first
        moved.push(await moveSlots(sc, MOVE_LO, MOVE_HI, 2, 1));
        // A few iterations on s2: the keys (and the limiters' state) are there now.
        const seen = it;
        await waitFor('the workload to run on s2', 20000, () => it >= seen + 3);
        const s2 = await sc.leaderOf(2);
        const missing = [];
        for (const k of [...skeys, ...gkeys]) if ((await cmd(s2.port, 'EXISTS', k)) !== 1) missing.push(k);
        assert.deepEqual(missing, [], 'keys not on s2 after the move');
        await sleep(500);
        moved.push(await moveSlots(sc, MOVE_LO, MOVE_HI, 1, 2));
        await sleep(500); // and on s1 again
      } finally {
        stop = true;
      }
    })();

    try {
      while (!stop) {
        await Promise.all(skeys.map(async (k) => {
          const v = `${k}=${it}`;
          assert.equal(await c.set(k, v), 'OK');
          last.set(k, v);
          assert.equal(await c.get(k), v, k);
        }));
        for (const k of gkeys) {
          const burst = bursts.get(k);
          const r = await gcraLimit(c, k, NEVER_REFILLS_MS, burst);
          assert.equal(r[1], burst, `${k}: ${r}`);
          if (r[0] === 0) {
            assert.ok(!deniedFrom.has(k), `${k}: admitted again after a denial at iteration ${deniedFrom.get(k)}`);
            allowed.set(k, allowed.get(k) + 1);
            assert.equal(r[2], burst - allowed.get(k), `${k}: ${r}`);
          } else {
            if (!deniedFrom.has(k)) deniedFrom.set(k, it);
            assert.deepEqual([allowed.get(k), r[2]], [burst, 0], `${k}: ${r}`);
          }
        }
        it++;
      }
    } finally {
      stop = true;
      await mover.catch(() => {});
    }
    await mover; // its failure, if any
    assert.equal(moved.length, 2);
    console.log(`${it} iterations; moves: ${moved.join(' | ')}; GCRA admissions ${JSON.stringify([...allowed])}`
      + `, denied from iteration ${JSON.stringify([...deniedFrom])}`);

    // Every key reads back the last value written.
    assert.deepEqual(await Promise.all(skeys.map((k) => c.get(k))), skeys.map((k) => last.get(k)));
    // Each GCRA key gave exactly `burst` admissions, then denials only.
    for (const k of gkeys) {
      const burst = bursts.get(k);
      while (allowed.get(k) < burst) {
        const r = await gcraLimit(c, k, NEVER_REFILLS_MS, burst);
        assert.equal(r[0], 0, `${k}: ${r} after ${allowed.get(k)} admissions`);
        allowed.set(k, allowed.get(k) + 1);
      }
      const again = await gcraLimit(c, k, NEVER_REFILLS_MS, burst);
      assert.deepEqual([again[0], again[2]], [1, 0], k);
    }
    // The client's own slot map routes the range to s1's leader again: the keys' slots at
    // once (their -MOVED updated them), the range's ends after a slot reload (every 1 s).
    const s1 = `127.0.0.1:${(await sc.leaderOf(1)).port}`;
    for (const k of inRange) assert.equal(c.slots[keySlot(k)][0], s1, k);
    await waitFor('the client\'s slot map to name s1\'s leader for the range', 5000,
      () => c.slots[MOVE_LO][0] === s1 && c.slots[MOVE_HI][0] === s1);
  } finally {
    c.disconnect();
  }
});
