// Every shared vector (clients/testdata/vectors.json, the specification's tables) through the
// typed API, as clients/go/vectors_test.go does: in RESP2 and RESP3, with int64 "bigint" (exact
// for every value) and int64 "number" (the default), where a reply outside the safe integer
// range must be refused with a HotKVError rather than rounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HotKVError } from '@hotkv/client';
import { useServer } from './helpers/server.mjs';
import { loadVectors } from './helpers/vectors.mjs';
import { inMode, caller, vectorTests } from './helpers/runner.mjs';

const vf = loadVectors();
const server = useServer();

const isUnsafe = (v) => typeof v === 'bigint';
function hasUnsafe(v) {
  if (isUnsafe(v)) return true;
  if (v && typeof v === 'object') return Object.values(v).some(hasUnsafe);
  return false;
}

const orOne = (v) => v ?? 1;

// One step of the file through the typed API (via: see caller), its reply in the file's
// snake_case shape.
async function runStep(c, s, via) {
  const call = caller(c, via);
  const a = s.args ?? {};
  switch (s.op) {
    case 'gcra_limit':
    case 'gcra_peek': {
      const r = await call(s.op === 'gcra_limit' ? 'gcraLimit' : 'gcraPeek', a.key, a.period_ms, a.burst, a.count);
      return { denied: r.denied, limit: r.limit, remaining: r.remaining, retry_after_ms: r.retryAfterMs, reset_after_ms: r.resetAfterMs };
    }
    case 'gcra_reset':
      return call('gcraReset', ...a.keys);
    case 'cl_throttle': {
      const r = await call('clThrottle', a.key, a.max_burst, a.count_per_period, a.period_s, a.quantity);
      return { limited: r.limited, limit: r.limit, remaining: r.remaining, retry_after_s: r.retryAfterSec, reset_after_s: r.resetAfterSec };
    }
    case 'ratelimit_create': {
      const opts = {};
      if (a.algo) opts.algo = a.algo;
      // Rates are decimal strings in the file; the API takes numbers (written back as plain
      // decimals) or strings. Numbers are what applications pass, so the vectors use them.
      if (a.refill) opts.refill = Number(a.refill);
      if (a.drain) opts.drain = Number(a.drain);
      return call('rateLimitCreate', a.name, a.limit, a.window_ms, Object.keys(opts).length ? opts : undefined);
    }
    case 'ratelimit_check':
    case 'ratelimit_peek': {
      const r = s.op === 'ratelimit_check' ? await call('rateLimitCheck', a.name, a.key, a.cost) : await call('rateLimitPeek', a.name, a.key);
      return { allowed: r.allowed, remaining: r.remaining, retry_after_ms: r.retryAfterMs, limit: r.limit, current: r.current };
    }
    case 'ratelimit_reset':
      return call('rateLimitReset', a.name, a.key);
    case 'ratelimit_stats': {
      const r = await call('rateLimitStats', a.name);
      const m = { name: r.name, algo: r.algo, limit: r.limit, window_ms: r.windowMs, unique_keys: r.uniqueKeys, total_allowed: r.totalAllowed, total_denied: r.totalDenied };
      if (r.refillPerSec !== undefined) m.refill_per_sec = r.refillPerSec;
      if (r.drainPerSec !== undefined) m.drain_per_sec = r.drainPerSec;
      return m;
    }
    case 'ratelimit_drop':
      return call('rateLimitDrop', a.name);
    case 'ratelimit_list':
      return call('rateLimitList');
    case 'raw':
      // Raw replies are compared as the vectors write them: integers are safe in every raw step,
      // and a big GET value is a string.
      return c.redis.sendCommand(s.cmd.map(String));
    default:
      throw new Error(`unknown op ${s.op}`);
  }
}

async function runCase(c, mode, vc, via) {
  const r = c.redis;
  await r.sendCommand(['FLUSHALL']);
  for (const n of await c.rateLimitList()) await c.rateLimitDrop(n);
  const config = { ...vf.defaults, ...(vc.config ?? {}) };
  for (const [k, v] of Object.entries(config)) await r.sendCommand(['CONFIG', 'SET', k, v]);
  try {
    for (const [i, s] of vc.steps.entries()) {
      await r.sendCommand(['DEBUG', 'CLOCK', 'SET', String(vf.t0 + s.at)]);
      const where = `${vc.name} step ${i} (${s.op} at t0+${s.at})`;
      if (s.error !== undefined) {
        await assert.rejects(runStep(c, s, via), (err) => {
          assert.equal(err.message, s.error, where);
          return true;
        }, where);
        continue;
      }
      // Not representable as a number: refused, never rounded. Inside MULTI the same holds in
      // bigint mode: node-redis 6.3.1 decodes EXEC's reply without the command's type mapping,
      // so integers reach the client as numbers and those beyond 2^53 are inexact (README).
      if ((mode === 'number' || via) && s.op !== 'raw' && hasUnsafe(s.expect)) {
        await assert.rejects(runStep(c, s, via), (err) => err instanceof HotKVError && /safe integer range|inexact/.test(err.message), where);
        continue;
      }
      const got = await runStep(c, s, via);
      const want = s.op === 'raw' ? s.expect : inMode(s.expect, mode);
      assert.deepStrictEqual(got, want, where);
    }
  } finally {
    for (const [k, v] of Object.entries(vf.defaults)) await r.sendCommand(['CONFIG', 'SET', k, v]);
  }
}

// Directly in both int64 modes, and as the only command of a MULTI through the node-redis
// module (hotkv.*), the path transactions and pipelines take.
vectorTests({
  server,
  modes: ['bigint', 'number'],
  name: (RESP, mode, via) => (via
    ? `shared vectors through MULTI (the node-redis module), RESP${RESP}, int64 bigint`
    : `shared vectors, RESP${RESP}, int64 ${mode}`),
}, async (c, mode, via, t) => {
  for (const vc of vf.cases) await t.test(vc.name, () => runCase(c, mode, vc, via));
});

test('vector file: every case ran and big values kept exactly', () => {
  assert.equal(vf.cases.length, 48);
  assert.equal(vf.cases.reduce((n, c) => n + c.steps.length, 0), 416);
  const v16 = vf.cases.find((c) => c.name === 'V16');
  assert.equal(v16.steps[0].expect.limit, 9223372036854775807n);
});
