// RATELIMIT.UPDATE and shadow mode: the vectors of docs/ratelimit.md (U1-U6, S1-S4) through the
// typed API (rateLimitUpdate, rateLimitCreate's shadow option, the shadow and totalShadowDenied
// fields of rateLimitStats) with their validation errors: RESP2 and RESP3, int64 "number" and
// "bigint", directly and inside MULTI (the node-redis module), and through HotKVCluster on the
// two-node stand-in of cluster.test.mjs.
//
// The vectors are written here as data. Limiter names carry one hash tag so that the cluster
// runner finds them all on one node: the docs' a, w, z, tb, ... become {v}a, {v}w, ... Each
// block starts from an empty server (FLUSHALL drops limiters); the clock is set with DEBUG
// CLOCK SET, as the docs' tables say.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer } from './helpers/server.mjs';
import { RATELIMIT_OPS, runBlocks, vectorTests, withClusterStandIn } from './helpers/runner.mjs';

const E_SYNTAX = 'ERR syntax error';
const E_LIMIT = 'ERR invalid limit: must be a positive integer';
const E_RATE = 'ERR invalid rate: must be a positive number';
const E_ALGO = 'ERR invalid option: ALGO cannot be changed (drop and create the limiter)';
const E_NOTFOUND = 'ERR limiter not found';
const E_ARITY = "ERR wrong number of arguments for 'ratelimit.update' command";

// leaseId is "0" (number mode; inMode makes it 0n for bigint mode): these limiters take no leases.
const r = (a, remaining, retryAfterMs, limit, current, leaseId = '0') => ({
  allowed: a === 1, remaining, retryAfterMs, limit, current, leaseId,
  unknownLimiter: limit === 0, tooLarge: a !== 1 && retryAfterMs === -1,
});

// Steps: ['flush']; ['at', ms] sets the clock to t0+ms; ['create', name, limit, windowMs,
// options]; ['update', name, options]; ['check', name, key, cost, want]; ['peek', name, key,
// want]; ['stats', name, {field: want}]; ['raw', argv, want]; ['err', 'update' | 'raw', args, text].
const BLOCKS = [
  ['U1', [
    ['flush'], ['at', 0],
    ['create', '{v}a', 5, 1000, undefined],
    ['check', '{v}a', 'u', 4, r(1, 1, 0, 5, 0)],
    ['at', 100],
    ['update', '{v}a', { limit: 2 }],
    ['check', '{v}a', 'u', undefined, r(0, 0, 900, 2, 4)],
    ['peek', '{v}a', 'u', r(0, 0, 900, 2, 4)],
    ['at', 999],
    ['check', '{v}a', 'u', 1, r(0, 0, 1, 2, 4)],
    ['at', 1000],
    ['check', '{v}a', 'u', 1, r(1, 1, 0, 2, 0)],
    ['stats', '{v}a', { limit: 2, windowMs: 1000, totalAllowed: 5, totalDenied: 2 }],
  ]],
  ['U2', [
    ['flush'], ['at', 0],
    ['create', '{v}w', 3, 10000, undefined],
    ['check', '{v}w', 'u', 3, r(1, 0, 0, 3, 0)],
    ['at', 5000],
    ['check', '{v}w', 'u', 1, r(0, 0, 5000, 3, 3)],
    ['update', '{v}w', { windowMs: 2000 }],
    ['check', '{v}w', 'u', 1, r(1, 2, 0, 3, 0)],
    ['update', '{v}w', { windowMs: 10000 }],
    ['at', 14999],
    ['check', '{v}w', 'u', 1, r(1, 1, 0, 3, 1)],
  ]],
  ['U3', [
    ['flush'], ['at', 0],
    ['create', '{v}z', 1, 1000, undefined],
    ['check', '{v}z', 'u', 1, r(1, 0, 0, 1, 0)],
    ['at', 1500],
    ['update', '{v}z', { windowMs: 5000 }],
    ['check', '{v}z', 'u', 1, r(1, 0, 0, 1, 0)],
  ]],
  ['U4', [
    ['flush'], ['at', 0],
    ['create', '{v}tb', 10, 1000, { algo: 'token_bucket' }],
    ['check', '{v}tb', 'u', 6, r(1, 4, 0, 10, 0)],
    ['at', 100],
    ['peek', '{v}tb', 'u', r(1, 5, 0, 10, 5)],
    // U4a: default rate 20/s, ttl 500 -> 250 ms.
    ['update', '{v}tb', { limit: 20 }],
    ['peek', '{v}tb', 'u', r(1, 15, 0, 20, 5)],
    // U4b: 5 units in use clamped to 3.
    ['update', '{v}tb', { limit: 3 }],
    ['peek', '{v}tb', 'u', r(0, 0, 334, 3, 3)],
    // U4c: an explicit rate.
    ['update', '{v}tb', { refill: 1 }],
    ['peek', '{v}tb', 'u', r(0, 0, 1000, 3, 3)],
    ['at', 1100],
    ['check', '{v}tb', 'u', 1, r(1, 0, 0, 3, 2)],
    // U4d: the explicit rate is kept across a WINDOW change.
    ['update', '{v}tb', { windowMs: 5000 }],
    ['peek', '{v}tb', 'u', r(0, 0, 1000, 3, 3)],
    ['stats', '{v}tb', { windowMs: 5000, refillPerSec: 1, limit: 3, shadow: false, totalShadowDenied: 0 }],
  ]],
  ['U5', [
    ['flush'], ['at', 0],
    ['create', '{v}lb', 4, 1000, { algo: 'leaky_bucket' }],
    ['check', '{v}lb', 'u', 2, r(1, 2, 0, 4, 0)],
    ['check', '{v}lb', 'v', 1, r(1, 3, 0, 4, 0)],
    ['at', 250],
    ['update', '{v}lb', { drain: 2 }],
    ['peek', '{v}lb', 'u', r(1, 3, 0, 4, 1)],
    ['peek', '{v}lb', 'v', r(1, 4, 0, 4, 0)],
    ['at', 749],
    ['peek', '{v}lb', 'u', r(1, 3, 0, 4, 1)],
    ['at', 750],
    ['peek', '{v}lb', 'u', r(1, 4, 0, 4, 0)],
    ['stats', '{v}lb', { drainPerSec: 2, refillPerSec: undefined }],
  ]],
  ['U6', [
    ['flush'], ['at', 0],
    ['create', '{v}api', 10, 1000, undefined],
    ['err', 'raw', ['RATELIMIT.UPDATE'], E_ARITY],
    ['err', 'update', ['{v}api', {}], E_SYNTAX],
    ['err', 'update', ['{v}nolimiter', { limit: 5 }], E_NOTFOUND],
    ['err', 'update', ['{v}nolimiter', { limit: 0 }], E_LIMIT],
    ['err', 'raw', ['RATELIMIT.UPDATE', '{v}api', 'ALGO', 'token_bucket'], E_ALGO],
    ['err', 'raw', ['RATELIMIT.UPDATE', '{v}api', 'ALGO'], E_SYNTAX],
    ['err', 'raw', ['RATELIMIT.UPDATE', '{v}api', 'SHADOW', 'maybe'], E_SYNTAX],
    ['err', 'update', ['{v}api', { refill: 5 }], E_SYNTAX],
    ['err', 'update', ['{v}api', { refill: 'abc' }], E_RATE],
    ['err', 'update', ['{v}api', { drain: 5 }], E_SYNTAX],
    ['create', '{v}tb', 10, 1000, { algo: 'token_bucket', refill: 0.00000001 }],
    ['err', 'update', ['{v}tb', { limit: 11 }], E_RATE],
    // Nothing changed by any failure.
    ['stats', '{v}tb', { limit: 10, refillPerSec: 0.00000001 }],
    ['stats', '{v}api', { limit: 10, windowMs: 1000, shadow: false }],
  ]],
  ['S1-S3', [
    ['flush'], ['at', 0],
    ['create', '{v}s', 2, 1000, { shadow: true }],
    ['check', '{v}s', 'u', undefined, r(1, 1, 0, 2, 0)],
    ['check', '{v}s', 'u', 1, r(1, 0, 0, 2, 1)],
    ['check', '{v}s', 'u', 1, r(1, 0, 1000, 2, 2)],
    ['check', '{v}s', 'u', 3, r(1, 0, -1, 2, 2)],
    ['peek', '{v}s', 'u', r(1, 0, 1000, 2, 2)],
    ['stats', '{v}s', { totalAllowed: 2, totalDenied: 4, shadow: true, totalShadowDenied: 4 }],
    // S2: enforced, the state is what shadow mode measured.
    ['update', '{v}s', { shadow: false }],
    ['check', '{v}s', 'u', 1, r(0, 0, 1000, 2, 2)],
    ['stats', '{v}s', { totalDenied: 5, shadow: false, totalShadowDenied: 4 }],
    ['at', 1000],
    ['check', '{v}s', 'u', 1, r(1, 1, 0, 2, 0)],
    // S3
    ['update', '{v}s', { shadow: true }],
    ['check', '{v}s', 'u', 2, r(1, 1, 1000, 2, 1)],
    ['stats', '{v}s', { totalDenied: 7, shadow: true, totalShadowDenied: 6 }],
  ]],
  ['S4', [
    ['flush'], ['at', 0],
    // The flag anywhere among the options, any case: raw, as the typed API sends it last.
    ['raw', ['RATELIMIT.CREATE', '{v}sb', '1', '1000', 'shadow', 'ALGO', 'token_bucket'], 'OK'],
    ['check', '{v}sb', 'u', 1, r(1, 0, 0, 1, 0)],
    ['check', '{v}sb', 'u', 1, r(1, 0, 1000, 1, 1)],
    ['create', '{v}sb2', 1, 1000, { algo: 'token_bucket', shadow: true }],
    ['check', '{v}sb2', 'u', 1, r(1, 0, 0, 1, 0)],
    ['check', '{v}sb2', 'u', 1, r(1, 0, 1000, 1, 1)],
    ['stats', '{v}sb2', { algo: 'token_bucket', shadow: true, totalShadowDenied: 1 }],
    ['err', 'raw', ['RATELIMIT.CREATE', '{v}x', '1', '1000', 'SHADOW', 'SHADOW'], E_SYNTAX],
    ['err', 'raw', ['RATELIMIT.CREATE', '{v}x', '1', '1000', 'SHADOW', '1'], E_SYNTAX],
    // shadow: false sends no flag: an enforced limiter.
    ['create', '{v}e', 1, 1000, { shadow: false }],
    ['check', '{v}e', 'u', 1, r(1, 0, 0, 1, 0)],
    ['check', '{v}e', 'u', 1, r(0, 0, 1000, 1, 1)],
    ['stats', '{v}e', { shadow: false, totalShadowDenied: 0, totalDenied: 1 }],
  ]],
];

// Every stats result has both shadow fields, in the client's integer type.
function checkStats(got, mode, where) {
  assert.equal(typeof got.shadow, 'boolean', where);
  assert.equal(typeof got.totalShadowDenied, mode === 'bigint' ? 'bigint' : 'number', where);
}

const server = useServer();

vectorTests({
  server,
  name: (RESP, mode, via) => (via
    ? `RATELIMIT.UPDATE and shadow-mode vectors through MULTI (the node-redis module), RESP${RESP}`
    : `RATELIMIT.UPDATE and shadow-mode vectors, RESP${RESP}, int64 ${mode}`),
}, (c, mode, via, t) => runBlocks(t, BLOCKS, { client: c, mode, via, ops: RATELIMIT_OPS, checkStats }));

test('rateLimitUpdate and rateLimitCreate send only the options given', async () => {
  const { commandDefs } = await import('../dist/esm/commands.js');
  const defs = commandDefs();
  const line = (d, ...args) => {
    const p = { args: [], keys: [], push(...a) { this.args.push(...a); }, pushKey(k) { this.args.push(k); this.keys.push(k); } };
    d.parse(p, ...args);
    return [p.args, p.keys];
  };
  assert.deepStrictEqual(line(defs.rateLimitUpdate, 'n', { limit: 3 }), [['RATELIMIT.UPDATE', 'n', 'LIMIT', '3'], ['n']]);
  assert.deepStrictEqual(line(defs.rateLimitUpdate, 'n', { windowMs: 5000, shadow: false })[0], ['RATELIMIT.UPDATE', 'n', 'WINDOW', '5000', 'SHADOW', 'OFF']);
  assert.deepStrictEqual(line(defs.rateLimitUpdate, 'n', { refill: 0.5, shadow: true })[0], ['RATELIMIT.UPDATE', 'n', 'REFILL', '0.5', 'SHADOW', 'ON']);
  assert.deepStrictEqual(line(defs.rateLimitUpdate, 'n', { drain: 1e-8 })[0], ['RATELIMIT.UPDATE', 'n', 'DRAIN', '0.00000001']);
  assert.deepStrictEqual(line(defs.rateLimitUpdate, 'n', { limit: 9223372036854775807n, windowMs: 2, refill: '2.5', shadow: true, drain: undefined })[0],
    ['RATELIMIT.UPDATE', 'n', 'LIMIT', '9223372036854775807', 'WINDOW', '2', 'REFILL', '2.5', 'SHADOW', 'ON']);
  assert.deepStrictEqual(line(defs.rateLimitUpdate, 'n', {})[0], ['RATELIMIT.UPDATE', 'n']);
  assert.deepStrictEqual(line(defs.rateLimitCreate, 'n', 1, 1000, { algo: 'token_bucket', shadow: true })[0],
    ['RATELIMIT.CREATE', 'n', '1', '1000', 'ALGO', 'token_bucket', 'SHADOW']);
  assert.deepStrictEqual(line(defs.rateLimitCreate, 'n', 1, 1000, { shadow: false })[0], ['RATELIMIT.CREATE', 'n', '1', '1000']);
});

test('parsing: the STATS shadow fields in both reply shapes, and servers without them', async () => {
  const { parseStats } = await import('../dist/esm/results.js');
  const base = ['name', 'x', 'algo', 'sliding_window', 'limit', '2', 'window_ms', '1000', 'unique_keys', '1', 'total_allowed', '2', 'total_denied', '4'];
  const old = { name: 'x', algo: 'sliding_window', limit: 2, windowMs: 1000, uniqueKeys: 1, totalAllowed: 2, totalDenied: 4, shadow: false, totalShadowDenied: 0 };
  assert.deepStrictEqual(parseStats(base, 'number'), old);
  assert.deepStrictEqual(parseStats(base, 'bigint').totalShadowDenied, 0n);
  const full = [...base, 'shadow', '1', 'total_shadow_denied', '9223372036854775807'];
  const want = { ...old, shadow: true, totalShadowDenied: 9223372036854775807n };
  assert.deepStrictEqual(parseStats(full, 'bigint'), { ...want, limit: 2n, windowMs: 1000n, uniqueKeys: 1n, totalAllowed: 2n, totalDenied: 4n });
  // RESP3 maps as node-redis gives them without the type mapping: an object or a Map.
  const obj = {};
  for (let i = 0; i < full.length; i += 2) obj[full[i]] = full[i + 1];
  assert.deepStrictEqual(parseStats(obj, 'bigint'), parseStats(full, 'bigint'));
  assert.deepStrictEqual(parseStats(new Map(Object.entries(obj)), 'bigint'), parseStats(full, 'bigint'));
  assert.equal(parseStats([...base, 'shadow', '0', 'total_shadow_denied', '3'], 'number').shadow, false);
  assert.throws(() => parseStats([...base, 'shadow', '2'], 'number'));
});

test('HotKVCluster: the vectors on the node of the {v} slot', (t) => withClusterStandIn({}, async ({ cluster, owner, other }) => {
  await runBlocks(t, BLOCKS, { client: cluster, admin: (a) => owner.sendCommand(a), mode: 'number', ops: RATELIMIT_OPS, checkStats });
  // The update reached the owner only.
  await cluster.rateLimitUpdate('{v}e', { limit: 4, shadow: true });
  const st = await cluster.rateLimitStats('{v}e');
  assert.equal(st.limit, 4);
  assert.equal(st.shadow, true);
  assert.deepStrictEqual(await other.sendCommand(['RATELIMIT.LIST']), []);
}));
