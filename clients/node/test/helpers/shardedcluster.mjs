// Starts a SHARDED HotKV cluster for a test file, formed as scripts/cluster-demo.sh forms it:
// SHARDS x NODES hotkv-server processes, every shard a Raft group, the slot map in the meta
// Raft group, the 16384 slots spread evenly. Node i (1-based) is n<i> of shard
// s<(i-1)/NODES+1> with client port BASE+i, Raft port BASE+100+i and meta port BASE+10100+i;
// BASE is picked at random in 20000-40000 among ranges whose 27 ports are all free. The
// processes are SIGKILLed and the data removed by stop(), and also when the process exits.
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, readFileSync, openSync, closeSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { serverBin } from './server.mjs';

export const SHARDS = 3;
export const NODES = 3;
/** Shard s (1-based) owns SLOT_RANGES[s-1], as cluster-demo.sh assigns them. */
export const SLOT_RANGES = Array.from({ length: SHARDS }, (_, k) => [
  Math.floor((k * 16384) / SHARDS), Math.floor(((k + 1) * 16384) / SHARDS) - 1,
]);
export const shardOfSlot = (slot) => SLOT_RANGES.findIndex(([lo, hi]) => slot >= lo && slot <= hi) + 1;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(what, timeoutMs, check) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

function portFree(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

async function freeBase() {
  const total = SHARDS * NODES;
  for (let attempt = 0; attempt < 200; attempt++) {
    const base = 20000 + 10 * Math.floor(Math.random() * 2000);
    let ok = true;
    for (const off of [0, 100, 10100]) {
      for (let i = 1; i <= total && ok; i++) ok = await portFree(base + off + i);
    }
    if (ok) return base;
  }
  throw new Error('no free port range for the cluster');
}

/** One command on a fresh connection to port; errors reject (no retries, no offline queue). */
export async function cmd(port, ...args) {
  const c = new Redis({
    port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null,
    maxRetriesPerRequest: 0, enableOfflineQueue: false, connectTimeout: 1000, commandTimeout: 2000,
  });
  c.on('error', () => {});
  try {
    await c.connect();
    return await c.call(...args);
  } finally {
    c.disconnect();
  }
}

async function answers(port, args, want) {
  try {
    const reply = await cmd(port, ...args);
    const lines = Array.isArray(reply) ? reply.map(String) : String(reply).replace(/\r/g, '').split('\n');
    return lines.includes(want);
  } catch {
    return false;
  }
}

const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function startShardedCluster() {
  const bin = serverBin();
  const root = mkdtempSync(path.join(os.tmpdir(), 'hotkv-node-sharded-'));
  const base = await freeBase();
  const nodes = [];
  const cluster = {
    base, nodes,
    async roleOf(n) {
      try {
        const st = await cmd(n.port, 'RAFT', 'STATUS');
        return String(st[st.indexOf('role') + 1]);
      } catch {
        return '';
      }
    },
    /** The one live node of shard s that says it leads. */
    async leaderOf(s) {
      let found = [];
      await waitFor(`one leader in shard s${s}`, 30000, async () => {
        found = [];
        for (const n of nodes) {
          if (n.shard === s && !n.exited && (await cluster.roleOf(n)) === 'leader') found.push(n);
        }
        return found.length === 1;
      });
      return found[0];
    },
    logs() {
      return nodes.map((n) => {
        let text = '';
        try { text = readFileSync(n.logPath, 'utf8').slice(-3000); } catch { /* gone */ }
        return `---- log of ${n.id} (shard s${n.shard}, port ${n.port}) ----\n${text}`;
      }).join('\n');
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.kill()));
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    for (let i = 1; i <= SHARDS * NODES; i++) {
      const shard = Math.floor((i - 1) / NODES) + 1;
      const n = { i, id: `n${i}`, shard, port: base + i, raftPort: base + 100 + i, exited: false };
      const dir = path.join(root, n.id);
      mkdirSync(dir);
      n.logPath = path.join(dir, 'hotkv.log');
      const args = ['--port', String(n.port), '--bind', '127.0.0.1', '--dir', dir, '--save', '',
        '--raft-port', String(n.raftPort), '--raft-node-id', n.id,
        '--cluster-enabled', 'yes', '--cluster-shard-id', `s${shard}`];
      if ((i - 1) % NODES === 0) args.push('--raft-bootstrap', 'yes');
      if (i === 1) args.push('--cluster-meta-bootstrap', 'yes');
      const log = openSync(n.logPath, 'a');
      const child = spawn(bin, args, { stdio: ['ignore', log, log] });
      closeSync(log);
      running.add(child);
      const gone = new Promise((r) => child.once('exit', () => { n.exited = true; running.delete(child); r(); }));
      n.kill = async () => {
        if (!n.exited) child.kill('SIGKILL');
        await gone;
      };
      nodes.push(n);
    }
    // Each shard's first node leads its new group; the others join it.
    for (let s = 1; s <= SHARDS; s++) {
      const first = nodes[(s - 1) * NODES];
      await waitFor(`${first.id} to lead its shard`, 30000, () => answers(first.port, ['RAFT', 'STATUS'], 'leader'));
      for (const n of nodes.slice(first.i, first.i + NODES - 1)) {
        await cmd(first.port, 'RAFT', 'ADD', n.id, `127.0.0.1:${n.raftPort}`);
      }
    }
    const n1 = nodes[0];
    await waitFor('n1 to lead the meta group', 30000, () => answers(n1.port, ['CLUSTERX', 'STATUS'], 'leader'));
    // The first node of each shard joins before the second ones (the meta group's voters).
    for (let k = 0; k < NODES; k++) {
      for (let s = 0; s < SHARDS; s++) {
        const n = nodes[s * NODES + k];
        if (n !== n1) await cmd(n.port, 'CLUSTERX', 'JOIN', '127.0.0.1', String(n1.port));
      }
    }
    for (let s = 1; s <= SHARDS; s++) {
      const [lo, hi] = SLOT_RANGES[s - 1];
      await cmd(n1.port, 'CLUSTERX', 'ASSIGN', `s${s}`, String(lo), String(hi));
    }
    for (const n of nodes) {
      await waitFor(`${n.id} to report cluster_state:ok`, 30000, () => answers(n.port, ['CLUSTER', 'INFO'], 'cluster_state:ok'));
    }
    return cluster;
  } catch (err) {
    console.error(cluster.logs());
    await cluster.stop();
    throw err;
  }
}

/** CLUSTERX STATUS of the node on port, as an object. */
export async function clusterxStatus(port) {
  const v = await cmd(port, 'CLUSTERX', 'STATUS');
  const out = {};
  for (let k = 0; k + 1 < v.length; k += 2) out[String(v[k])] = String(v[k + 1]);
  return out;
}

/** The master port that the node on port names for slot in CLUSTER SLOTS (0 when none). */
export async function slotOwnerPort(port, slot) {
  for (const entry of await cmd(port, 'CLUSTER', 'SLOTS')) {
    if (Number(entry[0]) <= slot && slot <= Number(entry[1])) return Number(entry[2][1]);
  }
  return 0;
}

/**
 * CLUSTERX MIGRATE lo hi s<target>, sent to a node of s3 (neither shard of the tests' moves),
 * then waits until the meta epoch is bumped, no migration runs on any live node and every
 * live node's CLUSTER SLOTS names the target's leader for both ends of the range. Resolves
 * to a line for the test's log: how long it took and the source leader's last_move.
 */
export async function moveSlots(cluster, lo, hi, target, sourceShard) {
  const live = () => cluster.nodes.filter((n) => !n.exited);
  const other = live().find((n) => n.shard === SHARDS);
  const epoch = Number((await clusterxStatus(other.port)).epoch);
  const t0 = Date.now();
  const ok = await cmd(other.port, 'CLUSTERX', 'MIGRATE', String(lo), String(hi), `s${target}`);
  if (ok !== 'OK') throw new Error(`CLUSTERX MIGRATE ${lo} ${hi} s${target}: ${ok}`);
  const leader = await cluster.leaderOf(target);
  await waitFor(`slots ${lo}-${hi} to move to s${target}`, 20000, async () => {
    try {
      if (Number((await clusterxStatus(other.port)).epoch) <= epoch) return false;
      for (const n of live()) {
        if ((await clusterxStatus(n.port)).migrations !== '0') return false;
        for (const slot of [lo, hi]) if ((await slotOwnerPort(n.port, slot)) !== leader.port) return false;
      }
      return true;
    } catch {
      return false;
    }
  });
  const source = await cluster.leaderOf(sourceShard);
  return `to s${target} in ${Date.now() - t0} ms (${(await clusterxStatus(source.port)).last_move})`;
}
