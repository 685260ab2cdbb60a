// GCRA.LIMITALL and GCRA.REFUND: the vectors of docs/ratelimit.md (LA1-LA8, RF1-RF7) through
// the typed API (gcraLimitAll, gcraRefund) with their validation errors: RESP2 and RESP3,
// int64 "number" and "bigint", directly and inside MULTI (the node-redis module), and through
// HotKVCluster on the two-node stand-in of cluster.test.mjs.
//
// The vectors are written here as data. Keys carry one hash tag so that a cluster client may
// send a LIMITALL's keys together: the spec's u, o, a, b, k become {v}u, {v}o, ... Each block
// starts from an empty database; the clock is set with DEBUG CLOCK SET, as the spec says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HotKVError } from '@hotkv/client';
import { useServer } from './helpers/server.mjs';
import { T0, atT0, runBlocks, vectorTests, withClusterStandIn } from './helpers/runner.mjs';

const MAX = 9223372036854775807n;
const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';
const E_NUMLIMITS = 'ERR invalid numlimits: must be an integer from 1 to 256';
const E_SYNTAX = 'ERR syntax error';
const E_BURST = 'ERR invalid burst: must be a positive integer';
const E_PERIOD = 'ERR invalid period: must be a positive integer (milliseconds)';
const E_COUNT = 'ERR invalid count: must be a positive integer';
const arity = (cmd) => `ERR wrong number of arguments for '${cmd}' command`;

const spec = (key, periodMs, burst) => ({ key, periodMs, burst });
const U = spec('{v}u', 60000, 10);
const O = spec('{v}o', 1000, 2);
const K = spec('{v}k', 60000, 10);
const g = (d, limit, remaining, retryAfterMs, resetAfterMs) => ({ denied: d === 1, limit, remaining, retryAfterMs, resetAfterMs, tooLarge: d === 1 && retryAfterMs === -1 });
const la = (d, retryAfterMs, ...limits) => ({ denied: d === 1, retryAfterMs, limits: limits.map((l) => g(...l)), tooLarge: d === 1 && retryAfterMs === -1 });

// Steps: ['flush'] empties the database; ['at', ms] sets the clock to t0+ms; ['all', limits,
// count, want]; ['limit' | 'refund', key, period, burst, count, want]; ['raw', argv, want];
// ['err', 'all' | 'refund' | 'raw', args, text].
const BLOCKS = [
  ['LA1-LA3c', [
    ['flush'], ['at', 0],
    ['all', [U, O], undefined, la(0, -1, [0, 10, 9, -1, 6000], [0, 2, 1, -1, 500])],
    ['all', [U, O], undefined, la(0, -1, [0, 10, 8, -1, 12000], [0, 2, 0, -1, 1000])],
    ['all', [U, O], undefined, la(1, 500, [0, 10, 7, -1, 18000], [1, 2, 0, 500, 1000])],
    ['raw', ['GET', '{v}u'], '1700000012000000000'],
    ['at', 499],
    ['all', [U, O], 1, la(1, 1, [0, 10, 7, -1, 17501], [1, 2, 0, 1, 501])],
    ['at', 500],
    ['all', [U, O], 1, la(0, -1, [0, 10, 7, -1, 17500], [0, 2, 0, -1, 1000])],
    ['raw', ['GET', '{v}u'], '1700000018000000000'],
  ]],
  ['LA4', [
    ['flush'], ['at', 0],
    ['all', [U, O], 3, la(1, -1, [0, 10, 7, -1, 18000], [1, 2, 0, -1, 0])],
    ['raw', ['EXISTS', '{v}u', '{v}o'], 0],
  ]],
  ['LA5-LA5c', [
    ['flush'], ['at', 0],
    ['limit', '{v}a', 1000, 1, 1, g(0, 1, 0, -1, 1000)],
    ['limit', '{v}b', 3000, 1, 1, g(0, 1, 0, -1, 3000)],
    ['all', [spec('{v}a', 1000, 1), spec('{v}b', 3000, 1)], 1, la(1, 3000, [1, 1, 0, 1000, 1000], [1, 1, 0, 3000, 3000])],
    ['at', 3000],
    ['all', [spec('{v}a', 1000, 1), spec('{v}b', 3000, 1)], 1, la(0, -1, [0, 1, 0, -1, 1000], [0, 1, 0, -1, 3000])],
  ]],
  ['LA6-LA6b', [
    ['flush'], ['at', 0],
    ['all', [K, K], 5, la(0, -1, [0, 10, 5, -1, 30000], [0, 10, 0, -1, 60000])],
    ['raw', ['GET', '{v}k'], '1700000060000000000'],
    ['at', 6000],
    ['all', [K, K], undefined, la(1, 6000, [0, 10, 0, -1, 60000], [1, 10, 0, 6000, 60000])],
    ['raw', ['GET', '{v}k'], '1700000060000000000'],
  ]],
  ['LA7', [
    ['flush'], ['at', 0],
    ['all', [K], undefined, la(0, -1, [0, 10, 9, -1, 6000])],
    ['raw', ['PTTL', '{v}k'], 6000],
  ]],
  ['LA8', [
    ['flush'], ['at', 0],
    // numlimits the typed API can send: 257 limits; no limit at all ("GCRA.LIMITALL 0" alone,
    // count left out) is an arity error.
    ['err', 'all', [Array(257).fill(K), 1], E_NUMLIMITS],
    ['err', 'all', [[], undefined], arity('gcra.limitall')],
    // The other numlimits spellings and the shapes the typed API cannot produce, raw.
    ...['0', '257', '-1', 'x', '01'].map((n) => ['err', 'raw', ['GCRA.LIMITALL', n, '{v}k', '60000', '10'], E_NUMLIMITS]),
    ['err', 'raw', ['GCRA.LIMITALL', '2', '{v}k', '60000', '10'], E_SYNTAX],
    ['err', 'raw', ['GCRA.LIMITALL', '1', '{v}k', '60000', '10', 'COUNT'], E_SYNTAX],
    ['err', 'all', [[spec('{v}k', 60000, 0), spec('{v}j', 0, 10)], 1], E_BURST],
    ['err', 'all', [[spec('{v}k', 0, 10)], undefined], E_PERIOD],
    ['err', 'all', [[K], 0], E_COUNT],
    ['raw', ['SET', '{v}s', 'hello'], 'OK'],
    ['err', 'all', [[K, spec('{v}s', 60000, 10)], 1], WRONGTYPE],
    ['raw', ['EXISTS', '{v}k'], 0],
  ]],
  ['RF1-RF3', [
    ['flush'], ['at', 0],
    ['limit', '{v}k', 60000, 10, 3, g(0, 10, 7, -1, 18000)],
    ['refund', '{v}k', 60000, 10, undefined, g(0, 10, 8, -1, 12000)],
    ['raw', ['PTTL', '{v}k'], 12000],
    ['refund', '{v}k', 60000, 10, 5, g(0, 10, 10, -1, 0)],
    ['raw', ['EXISTS', '{v}k'], 0],
    ['refund', '{v}k', 60000, 10, 1, g(0, 10, 10, -1, 0)],
    ['raw', ['EXISTS', '{v}k'], 0],
  ]],
  ['RF4', [
    ['flush'], ['at', 0],
    ['raw', ['SET', '{v}n', '123'], 'OK'],
    ['refund', '{v}n', 60000, 10, undefined, g(0, 10, 10, -1, 0)],
    ['raw', ['GET', '{v}n'], '123'],
    ['raw', ['PTTL', '{v}n'], -1],
  ]],
  ['RF5', [
    ['flush'], ['at', 0],
    ['limit', '{v}k', 1000, 3, 1, g(0, 3, 2, -1, 334)],
    ['limit', '{v}k', 1000, 3, 1, g(0, 3, 1, -1, 667)],
    ['at', 100],
    ['refund', '{v}k', 1000, 3, undefined, g(0, 3, 2, -1, 234)],
    ['raw', ['GET', '{v}k'], '1700000000333333333'],
  ]],
  ['RF6', [
    ['flush'], ['at', 0],
    ['raw', ['SET', '{v}big', MAX.toString()], 'OK'],
    ['refund', '{v}big', 60000, 10, undefined, g(0, 10, 0, -1, 7523372030855)],
    ['refund', '{v}big', 60000, 10, MAX, g(0, 10, 10, -1, 0)],
    ['raw', ['EXISTS', '{v}big'], 0],
  ]],
  ['RF7', [
    ['flush'], ['at', 0],
    ['err', 'raw', ['GCRA.REFUND', '{v}k', '60000'], arity('gcra.refund')],
    ['err', 'refund', ['{v}k', 0, 10], E_PERIOD],
    ['err', 'refund', ['{v}k', 60000, 0], E_BURST],
    ['err', 'refund', ['{v}k', 60000, 10, 0], E_COUNT],
    ['raw', ['SET', '{v}s', 'hello'], 'OK'],
    ['err', 'refund', ['{v}s', 60000, 10, 1], WRONGTYPE],
    ['raw', ['GET', '{v}s'], 'hello'],
  ]],
];

// The steps' typed methods (['raw', ...] and ['err', 'raw', ...] go to the node directly).
const OPS = { all: 'gcraLimitAll', limit: 'gcraLimit', refund: 'gcraRefund' };

const server = useServer();

vectorTests({
  server,
  name: (RESP, mode, via) => (via
    ? `GCRA.LIMITALL and GCRA.REFUND vectors through MULTI (the node-redis module), RESP${RESP}`
    : `GCRA.LIMITALL and GCRA.REFUND vectors, RESP${RESP}, int64 ${mode}`),
}, (c, mode, via, t) => runBlocks(t, BLOCKS, { client: c, mode, via, ops: OPS }));

test('gcraLimitAll and gcraRefund in one pipeline', () => atT0(server, {}, async (c) => {
  const out = await c.multi()
    .hotkv.gcraLimitAll([U, O]).hotkv.gcraLimitAll([U, O]).hotkv.gcraLimitAll([U, O])
    .hotkv.gcraLimit('{v}r', 60000, 10, 3).hotkv.gcraRefund('{v}r', 60000, 10)
    .execAsPipeline();
  assert.deepStrictEqual(out, [
    la(0, -1, [0, 10, 9, -1, 6000], [0, 2, 1, -1, 500]),
    la(0, -1, [0, 10, 8, -1, 12000], [0, 2, 0, -1, 1000]),
    la(1, 500, [0, 10, 7, -1, 18000], [1, 2, 0, 500, 1000]),
    g(0, 10, 7, -1, 18000),
    g(0, 10, 8, -1, 12000),
  ]);
}));

test('HotKVCluster: the vectors on the node of the {v} slot; cross-slot LIMITALL refused client-side', (t) => withClusterStandIn({}, async ({ cluster, owner, other }) => {
  await runBlocks(t, BLOCKS, { client: cluster, admin: (a) => owner.sendCommand(a), mode: 'number', ops: OPS });
  // The keys were written on the owner of {v}'s slot only.
  await owner.sendCommand(['DEBUG', 'CLOCK', 'SET', String(T0)]);
  await cluster.gcraLimitAll([U, O]);
  assert.equal(await owner.exists(['{v}u', '{v}o']), 2);
  assert.equal(await other.exists(['{v}u', '{v}o']), 0);
  // foo (slot 12182) and bar (5061) are on different nodes.
  await assert.rejects(cluster.gcraLimitAll([spec('foo', 1000, 1), spec('bar', 1000, 1)]), (e) => e instanceof HotKVError && /CROSSSLOT/.test(e.message));
}));

test('parsing: tooLarge and malformed replies', async () => {
  // An internal module (not exported by the package), from the build.
  const { parseGCRALimitAll } = await import('../dist/esm/results.js');
  assert.equal(parseGCRALimitAll(['1', '-1', ['0', '10', '7', '-1', '18000'], ['1', '2', '0', '-1', '0']], 'number').tooLarge, true);
  for (const bad of [[], ['0', '-1'], ['0', '-1', ['0', '1']], 'OK']) {
    assert.throws(() => parseGCRALimitAll(bad, 'number'), HotKVError);
  }
});
