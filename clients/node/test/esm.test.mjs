// The ES module build through package.json "exports" (the "import" condition), with its type
// declarations next to it for both builds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import * as pkg from '@hotkv/client';
import * as mw from '@hotkv/client/middleware';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

test('import resolves to dist/esm with declarations for both builds', () => {
  assert.equal(path.relative(root, fileURLToPath(import.meta.resolve('@hotkv/client'))), path.join('dist', 'esm', 'index.js'));
  assert.equal(path.relative(root, fileURLToPath(import.meta.resolve('@hotkv/client/middleware'))), path.join('dist', 'esm', 'middleware', 'index.js'));
  for (const f of ['dist/esm/index.d.ts', 'dist/cjs/index.d.ts', 'dist/esm/middleware/index.d.ts', 'dist/cjs/middleware/index.d.ts']) {
    assert.ok(existsSync(path.join(root, f)), f);
  }
  for (const name of ['HotKV', 'HotKVCluster', 'hotkvModule', 'keySlot', 'HotKVError', 'hotkvExpress', 'hotkvFastify', 'hotkvFastifyPlugin', 'gcra', 'limiter']) {
    assert.equal(typeof pkg[name], 'function', name);
  }
  assert.equal(mw.hotkvExpress, pkg.hotkvExpress);
});
