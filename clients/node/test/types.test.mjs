// Type checks, with the TypeScript compiler: test/types/usage.ts (the public API as users type
// it) and the product documentation's Node.js snippets as the TypeScript they are fenced as
// (written to test/.tmp/ by extracting them like docs.test.mjs does), against the built
// declarations, resolved through package.json "exports" as for a user.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { repoRoot } from './helpers/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const guide = [path.join(repoRoot, '..', 'shared', 'product-docs', 'rate-limiting-guide.txt'),
  process.env.HOTKV_PRODUCT_DOCS && path.join(process.env.HOTKV_PRODUCT_DOCS, 'rate-limiting-guide.txt')]
  .filter(Boolean).find((p) => existsSync(p));

test('public API and documentation snippets type-check (tsc --strict)', async () => {
  const tmp = path.join(here, '.tmp');
  mkdirSync(tmp, { recursive: true });
  const snippetFile = path.join(tmp, 'snippets.ts');
  rmSync(snippetFile, { force: true });
  if (guide) {
    const re = /\*\*Node\.js\*\*\s*\n+```(?:ts|js|typescript|javascript)\n([\s\S]*?)\n```/g;
    const blocks = [...readFileSync(guide, 'utf8').matchAll(re)].map((m) => m[1]);
    assert.equal(blocks.length, 2);
    // "export {}" makes the file a module (top-level await), without touching the snippets.
    writeFileSync(snippetFile, blocks.join('\n\n') + '\nexport {};\n');
  }
  const tsc = path.join(here, '..', 'node_modules', 'typescript', 'bin', 'tsc');
  try {
    await promisify(execFile)(process.execPath, [tsc, '-p', path.join(here, 'types', 'tsconfig.json')], { timeout: 120000 });
  } catch (e) {
    assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`);
  }
});
