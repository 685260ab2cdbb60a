// The CommonJS build, loaded with require() through package.json "exports" (the "require"
// condition), against a real server; the ESM build is what every .mjs test imports. This test
// also checks that the two are really different builds (dist/cjs vs dist/esm).
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

let server;
let helpers;
before(async () => {
  helpers = await import('./helpers/server.mjs');
  server = await helpers.startServer();
});
after(async () => { await server?.stop(); });

test('require("@hotkv/client") loads the CommonJS build and works', async () => {
  const resolved = require.resolve('@hotkv/client');
  assert.equal(path.relative(path.join(__dirname, '..'), resolved), path.join('dist', 'cjs', 'index.js'));
  const { HotKV, keySlot, hotkvExpress, gcra } = require('@hotkv/client');
  assert.equal(typeof hotkvExpress, 'function');
  assert.equal(typeof gcra, 'function');
  assert.equal(keySlot('foo'), 12182);
  const client = new HotKV({ url: server.url });
  try {
    const r = await client.gcraLimit('cjs', 60000, 10);
    assert.deepEqual([r.denied, r.limit, r.remaining], [false, 10, 9]);
  } finally {
    await client.close();
  }
  const mw = require('@hotkv/client/middleware');
  assert.equal(path.relative(path.join(__dirname, '..'), require.resolve('@hotkv/client/middleware')), path.join('dist', 'cjs', 'middleware', 'index.js'));
  assert.equal(typeof mw.hotkvFastify, 'function');
});

test('import() of the same name gives the ESM build', async () => {
  const esm = await import('@hotkv/client');
  const cjs = require('@hotkv/client');
  assert.notEqual(esm.HotKV, cjs.HotKV);
  const client = new esm.HotKV({ url: server.url, RESP: 2 });
  try {
    assert.equal((await client.gcraPeek('esm', 60000, 10)).remaining, 9);
  } finally {
    await client.close();
  }
});
