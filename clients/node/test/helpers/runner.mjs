// The machinery the vector test files share (vectors.test.mjs, concurrency.test.mjs,
// ratelimit-update.test.mjs, limitall-refund.test.mjs): expected values in the client's integer
// type, a typed call made directly or through the node-redis module, the step runner for vectors
// written as data blocks, the RESP x int64 parametrisation, and the two-node cluster stand-in
// with plain clients to each node. Each test file keeps only its vectors and its special cases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from 'redis';
import { HotKV, HotKVCluster, keySlot } from '@hotkv/client';
import { startFakeCluster } from './fakecluster.mjs';

/** The clock every block's ['at', ms] step is relative to (DEBUG CLOCK SET t0+ms). */
export const T0 = 1700000000000;

// Rates are doubles, numbers in every int64 mode whatever their value looks like: the typed
// results name them ...PerSec, the shared vectors file ..._per_sec.
const isRate = (k) => /(PerSec|_per_sec)$/.test(k);

/**
 * An expected value in the client's types: integers as number or bigint (mode), rates stay
 * numbers, and a leaseId is a decimal string in number mode (ids exceed 2^53) or a bigint.
 * A bigint expectation in number mode becomes a number only for the comparisons the callers
 * make after checking the value is safe.
 */
export function inMode(v, mode) {
  if (typeof v === 'number' && Number.isInteger(v)) return mode === 'bigint' ? BigInt(v) : v;
  if (typeof v === 'bigint') return mode === 'bigint' ? v : Number(v);
  if (Array.isArray(v)) return v.map((x) => inMode(x, mode));
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k,
      isRate(k) ? x : k === 'leaseId' ? (mode === 'bigint' ? BigInt(x) : String(x)) : inMode(x, mode)]));
  }
  return v;
}

/**
 * call(name, ...args) runs one typed command of c: directly (via undefined), as the only command
 * of a MULTI through the node-redis module (via 'multi', the path transactions take), or in a
 * pipeline through that module (via 'pipeline'), which reads integers exactly where exec() of a
 * MULTI does not (node-redis 6.3.1 decodes EXEC's reply without the command's type mapping).
 */
export function caller(c, via) {
  if (!via) return (name, ...args) => c[name](...args);
  if (via === 'pipeline') {
    return async (name, ...args) => {
      const [res] = await c.multi().hotkv[name](...args).execAsPipeline();
      if (res instanceof Error) throw res;
      return res;
    };
  }
  return async (name, ...args) => {
    try {
      const [res] = await c.multi().hotkv[name](...args).exec();
      return res;
    } catch (e) {
      // A failed command inside EXEC: node-redis's MultiErrorReply holds the server's error.
      if (e?.replies && e.errorIndexes?.length === 1) throw e.replies[e.errorIndexes[0]];
      throw e;
    }
  };
}

/** The steps of RATELIMIT.* blocks and the typed method each runs. */
export const RATELIMIT_OPS = {
  create: 'rateLimitCreate',
  update: 'rateLimitUpdate',
  check: 'rateLimitCheck',
  peek: 'rateLimitPeek',
  release: 'rateLimitRelease',
  reset: 'rateLimitReset',
  stats: 'rateLimitStats',
};

// create and update steps carry no expected value: their reply is OK.
const OK_OPS = new Set(['create', 'update']);

const show = (s) => JSON.stringify(s, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)).slice(0, 140);

/**
 * Runs one block [name, steps] of vectors written as data. Steps:
 *   ['flush']                   FLUSHALL (drops limiters too)
 *   ['at', ms]                  DEBUG CLOCK SET t0+ms
 *   ['raw', argv, want]         argv through admin, the reply compared as written
 *   ['err', op, args, text]     ops[op](...args), or admin(args) for op 'raw', fails with text
 *   ['stats', name, {f: want}]  only the fields named are compared (then checkStats, if given)
 *   ['create' | 'update', ...args]   the reply is OK
 *   [op, ...args, want]         ops[op](...args), want in the mode's types (inMode)
 * admin(argv) runs FLUSHALL, DEBUG and raw commands on the node holding the keys.
 */
export async function runBlock([name, steps], { client, admin, mode, via, ops, checkStats }) {
  const call = caller(client, via);
  const typed = (op, args) => {
    if (!ops[op]) throw new Error(`${name}: unknown op ${op}`);
    return call(ops[op], ...args);
  };
  for (const [i, s] of steps.entries()) {
    const where = `${name} step ${i} ${show(s)}`;
    const [op] = s;
    if (op === 'flush') { await admin(['FLUSHALL']); continue; }
    if (op === 'at') { await admin(['DEBUG', 'CLOCK', 'SET', String(T0 + s[1])]); continue; }
    if (op === 'err') {
      const run = s[1] === 'raw' ? admin(s[2]) : typed(s[1], s[2]);
      await assert.rejects(run, (err) => { assert.equal(err.message, s[3], where); return true; }, where);
      continue;
    }
    if (op === 'raw') { assert.deepStrictEqual(await admin(s[1]), s[2], where); continue; }
    if (OK_OPS.has(op)) { assert.equal(await typed(op, s.slice(1)), 'OK', where); continue; }
    const got = await typed(op, s.slice(1, -1));
    const want = inMode(s.at(-1), mode);
    if (op === 'stats') {
      assert.deepStrictEqual(Object.fromEntries(Object.keys(want).map((k) => [k, got[k]])), want, where);
      checkStats?.(got, mode, where);
    } else assert.deepStrictEqual(got, want, where);
  }
}

/**
 * Registers the tests that run a file's vectors on server (useServer of helpers/server.mjs)
 * with a HotKV client for each RESP version: one per int64 mode, then one through the node-redis
 * module (via, int64 bigint), each named by name(RESP, mode, via). run(c, mode, via, t) runs the
 * vectors; the client is connected before and closed after, with the server clock reset.
 */
export function vectorTests({ server, name, modes = ['number', 'bigint'], via = 'multi' }, run) {
  const one = (RESP, mode, v) => test(name(RESP, mode, v), async (t) => {
    const c = new HotKV({ url: server.url, RESP, int64: mode });
    await c.connect();
    try {
      await run(c, mode, v, t);
    } finally {
      await c.redis.sendCommand(['DEBUG', 'CLOCK', 'RESET']);
      await c.close();
    }
  });
  for (const RESP of [2, 3]) {
    for (const mode of modes) one(RESP, mode, undefined);
    one(RESP, 'bigint', via);
  }
}

/**
 * Runs fn(c) with a connected HotKV client (options added to server's url) on an emptied server
 * whose clock is frozen at T0, for the special cases next to the vectors; the clock is reset and
 * the client closed after, also on failure.
 */
export async function atT0(server, options, fn) {
  const c = new HotKV({ url: server.url, ...options });
  await c.connect();
  try {
    await c.redis.sendCommand(['FLUSHALL']);
    await c.redis.sendCommand(['DEBUG', 'CLOCK', 'SET', String(T0)]);
    await fn(c);
  } finally {
    await c.redis.sendCommand(['DEBUG', 'CLOCK', 'RESET']);
    await c.close();
  }
}

/**
 * Runs every block as a subtest of t with runBlock's options; admin defaults to the client's own
 * node-redis connection (a HotKV client on one server).
 */
export async function runBlocks(t, blocks, options) {
  const admin = options.admin ?? ((a) => options.client.redis.sendCommand(a));
  for (const b of blocks) await t.test(b[0], () => runBlock(b, { ...options, admin }));
}

/**
 * Runs fn({ cluster, owner, other }) on the two-node cluster stand-in (helpers/fakecluster.mjs):
 * cluster is a HotKVCluster (options added to its own), owner a plain node-redis client to the
 * node owning the {v} hash tag's slot, other one to the other node. The blocks' keys all carry
 * {v}, so FLUSHALL, DEBUG CLOCK and raw steps go to owner while typed calls go through cluster.
 * Every clock is reset and everything closed after, also on failure.
 */
export async function withClusterStandIn(options, fn) {
  const fc = await startFakeCluster();
  const direct = [];
  const cluster = new HotKVCluster({ rootNodes: [{ url: `hotkv://127.0.0.1:${fc.nodes[0].port}` }], ...options });
  try {
    for (const n of fc.nodes) {
      const d = createClient({ socket: { port: n.server.port, host: '127.0.0.1' } });
      d.on('error', () => {});
      await d.connect();
      direct.push(d);
    }
    const owner = direct[fc.nodes.indexOf(fc.ownerOf(keySlot('{v}')))];
    await fn({ cluster, owner, other: direct.find((d) => d !== owner) });
  } finally {
    for (const d of direct) {
      await d.sendCommand(['DEBUG', 'CLOCK', 'RESET']).catch(() => {});
      await d.close();
    }
    await cluster.close();
    await fc.stop();
  }
}
