// The product documentation's Node.js snippets, run verbatim against a real server, and its
// CLI sessions replayed through the typed API.
//
// The snippets are extracted from ../shared/product-docs/rate-limiting-guide.txt at test time
// (the "**Node.js**" fenced blocks), so a change to the docs is tested as it is written. The
// only substitution is the port in "hotkv://127.0.0.1:6379" (the test server listens on a free
// port). The blocks are TypeScript-fenced but contain no type syntax, so they run as ES modules;
// the second block continues the first (it uses its `client`), as the guide presents them, so
// they run as one module. The module lives inside this package so `import ... from
// "@hotkv/client"` resolves through package.json "exports" (the ESM build), as for a user.
// The snippet never closes its client (it is a fragment of an application), so the harness
// exits the child process once the module has finished evaluating.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { HotKV } from '@hotkv/client';
import { useServer, repoRoot } from './helpers/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const T0 = 1700000000000;

function guidePath() {
  // The repository's copy of the published guide (clients/go checks it against
  // ../shared/product-docs wherever that is beside the repository); HOTKV_PRODUCT_DOCS
  // overrides the folder.
  const candidates = [
    process.env.HOTKV_PRODUCT_DOCS && path.join(process.env.HOTKV_PRODUCT_DOCS, 'rate-limiting-guide.txt'),
    path.join(repoRoot, 'clients', 'testdata', 'product-docs', 'rate-limiting-guide.txt'),
  ].filter(Boolean);
  return candidates.find((p) => existsSync(p));
}

export function nodeSnippets(text) {
  const re = /\*\*Node\.js\*\*\s*\n+```(?:ts|js|typescript|javascript)\n([\s\S]*?)\n```/g;
  return [...text.matchAll(re)].map((m) => m[1]);
}

const guide = guidePath();
const server = useServer();

async function runSnippets(code) {
  const dir = path.join(here, '.tmp');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `snippet-${process.pid}.mjs`);
  writeFileSync(file, code);
  const runner = `await import(${JSON.stringify('file://' + file)}); process.exit(0);`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', runner], { timeout: 20000 });
  return stdout;
}

test('product docs: Node.js snippets run verbatim', async () => {
  assert.ok(guide, 'clients/testdata/product-docs/rate-limiting-guide.txt is missing');
  const snippets = nodeSnippets(readFileSync(guide, 'utf8'));
  assert.equal(snippets.length, 2, 'the guide has a GCRA and a RATELIMIT Node.js snippet');
  assert.match(snippets[0], /new HotKV\(\{ url: "hotkv:\/\/127\.0\.0\.1:6379" \}\)/);
  const code = snippets.join('\n\n').replaceAll('hotkv://127.0.0.1:6379', `hotkv://127.0.0.1:${server.port}`);

  const admin = await new HotKV({ url: server.url }).connect();
  try {
    // Fresh state and a frozen clock, so the printed values are the documented ones.
    await admin.redis.sendCommand(['FLUSHALL']);
    for (const n of await admin.rateLimitList()) await admin.rateLimitDrop(n);
    await admin.redis.sendCommand(['DEBUG', 'CLOCK', 'SET', String(T0)]);

    // First run: the first request of user 42 is allowed; the limiter is created and checked.
    assert.equal(await runSnippets(code), '9 requests left\n');
    assert.deepEqual(await admin.rateLimitList(), ['api']);
    const st = await admin.rateLimitStats('api');
    assert.equal(st.totalAllowed, 1);

    // Use up the burst (9 more): the GCRA snippet reports the refusal with the wait. The
    // limiter must be dropped first, since the snippet creates it and RATELIMIT.CREATE refuses
    // an existing name (the guide: create limiters once, at start-up).
    for (let i = 0; i < 9; i++) await admin.gcraLimit('api:user:42', 60000, 10);
    await admin.rateLimitDrop('api');
    assert.equal(await runSnippets(code), 'slow down, retry in 6000 ms\n');

    // Without dropping it, the snippet's create fails with the server's error, as documented.
    await assert.rejects(runSnippets(code), /ERR limiter already exists or limit reached/);
    // (The snippet's "retry in" branch for the limiter cannot be reached verbatim: the snippet
    // creates the limiter itself, so a fresh limiter always allows its first check. The same
    // refusal is covered through the API in the CLI-session test below.)
  } finally {
    await admin.close();
  }
});

// The guide's CLI sessions, through the typed API (clock frozen, fresh state).
test('product docs: CLI sessions through the typed API', async () => {
  for (const RESP of [2, 3]) {
    const c = await new HotKV({ url: server.url, RESP }).connect();
    try {
      await c.redis.sendCommand(['FLUSHALL']);
      for (const n of await c.rateLimitList()) await c.rateLimitDrop(n);
      await c.redis.sendCommand(['DEBUG', 'CLOCK', 'SET', String(T0)]);
      const pick = (r) => [r.denied ? 1 : 0, r.limit, r.remaining, r.retryAfterMs, r.resetAfterMs];
      assert.deepEqual(pick(await c.gcraLimit('api:user:42', 60000, 10)), [0, 10, 9, -1, 6000]);
      for (let i = 0; i < 9; i++) await c.gcraLimit('api:user:42', 60000, 10);
      assert.deepEqual(pick(await c.gcraLimit('api:user:42', 60000, 10)), [1, 10, 0, 6000, 60000]);

      // gcra-limit.txt's example (the times between its calls are 0 here).
      assert.deepEqual(pick(await c.gcraLimit('ratelimit:user:42', 60000, 10)), [0, 10, 9, -1, 6000]);
      assert.deepEqual(pick(await c.gcraLimit('ratelimit:user:42', 60000, 10)), [0, 10, 8, -1, 12000]);
      assert.deepEqual(pick(await c.gcraLimit('ratelimit:user:42', 60000, 10, 10)), [1, 10, 0, 12000, 12000]);

      const rl = (r) => [r.allowed ? 1 : 0, r.remaining, r.retryAfterMs, r.limit, r.current];
      assert.equal(await c.rateLimitCreate('api', 100, 60000), 'OK');
      assert.deepEqual(rl(await c.rateLimitCheck('api', 'user:42')), [1, 99, 0, 100, 0]);
      assert.deepEqual(rl(await c.rateLimitCheck('api', 'user:42', 5)), [1, 94, 0, 100, 1]);
      assert.deepEqual(await c.rateLimitStats('api'), {
        name: 'api', algo: 'sliding_window', limit: 100, windowMs: 60000, uniqueKeys: 1, totalAllowed: 6, totalDenied: 0,
        shadow: false, totalShadowDenied: 0,
      });
      assert.equal(await c.rateLimitCreate('uploads', 20, 4000, { algo: 'token_bucket', refill: 5 }), 'OK');
      assert.equal((await c.rateLimitStats('uploads')).refillPerSec, 5);

      // The refusal the second snippet prints: the limit used up within the window.
      const denied = await c.rateLimitCheck('api', 'user:42', 95);
      assert.equal(denied.allowed, false);
      assert.equal(`retry in ${denied.retryAfterMs} ms`, 'retry in 60000 ms');

      // "Caution": an unknown limiter replies all zeros, not an error.
      const unknown = await c.rateLimitCheck('nolimiter', 'user:42');
      assert.deepEqual(rl(unknown), [0, 0, 0, 0, 0]);
      assert.equal(unknown.unknownLimiter, true);
      await assert.rejects(c.rateLimitCreate('api', 100, 60000), { message: 'ERR limiter already exists or limit reached' });
      for (const fn of [() => c.rateLimitReset('nolimiter', 'u'), () => c.rateLimitStats('nolimiter'), () => c.rateLimitDrop('nolimiter')]) {
        await assert.rejects(fn(), { message: 'ERR limiter not found' });
      }
    } finally {
      await c.close();
    }
  }
});
