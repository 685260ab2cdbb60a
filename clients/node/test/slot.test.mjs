// Key slots computed by the client (CRC16-XMODEM with hash tags, as Redis Cluster): known
// values, hash-tag rules, agreement with node-redis's own slot function (which its cluster
// client routes by) and, when a redis-server binary is installed, with CLUSTER KEYSLOT of a real
// Redis in cluster mode. HotKV has no cluster mode yet, so Redis is the reference here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';
import { keySlot, crc16, hashTag, SLOT_COUNT } from '@hotkv/client';
import { freePort } from './helpers/server.mjs';

test('crc16 check value and known slots', () => {
  assert.equal(crc16(Buffer.from('123456789')), 0x31c3); // CRC-16/XMODEM check value
  assert.equal(SLOT_COUNT, 16384);
  assert.equal(keySlot('foo'), 12182);
  assert.equal(keySlot('bar'), 5061);
  assert.equal(keySlot('hello'), 866);
  assert.equal(keySlot(''), 0);
  assert.equal(keySlot('123456789'), 0x31c3 % 16384);
  assert.equal(keySlot(Buffer.from('foo')), 12182);
});

test('hash tags follow Redis Cluster rules', () => {
  assert.equal(keySlot('{user1000}.following'), keySlot('{user1000}.followers'));
  assert.equal(keySlot('{user1000}.following'), keySlot('user1000'));
  assert.equal(keySlot('rl:{user:42}:sec'), keySlot('rl:{user:42}:hour'));
  assert.equal(keySlot('rl:{user:42}:sec'), keySlot('user:42'));
  // Only the first '{' counts, up to the first '}' after it.
  assert.equal(Buffer.from(hashTag('foo{bar}{zap}')).toString(), 'bar');
  assert.equal(Buffer.from(hashTag('foo{{bar}}zap')).toString(), '{bar');
  // An empty tag or no closing brace: the whole key is hashed.
  assert.equal(Buffer.from(hashTag('foo{}{bar}')).toString(), 'foo{}{bar}');
  assert.equal(Buffer.from(hashTag('foo{bar')).toString(), 'foo{bar');
  assert.equal(keySlot('{}foo'), crc16(Buffer.from('{}foo')) % 16384);
  // Keys are hashed as UTF-8 bytes.
  assert.equal(keySlot('ключ'), keySlot(Buffer.from('ключ', 'utf8')));
});

test('agrees with node-redis cluster routing slot function', () => {
  // node-redis's cluster client routes a command by calculateSlot(firstKey); the HotKV cluster
  // client names the key, so both must agree for the client-side CROSSSLOT check and nodeFor.
  const require = createRequire(import.meta.url);
  const calc = require('@redis/client/dist/lib/utils/calculate-slot').default;
  const keys = ['foo', '{a}b', 'a{}b', 'x{y', '{{z}}', 'rl:{user:42}:sec', ''];
  for (let i = 0; i < 2000; i++) keys.push(randomBytes(1 + (i % 24)).toString(i % 2 ? 'latin1' : 'base64'));
  for (const k of keys) assert.equal(keySlot(k), calc(k), JSON.stringify(k));
});

let redisServer = null;
try { redisServer = execFileSync('which', ['redis-server']).toString().trim(); } catch { /* not installed */ }

test('agrees with CLUSTER KEYSLOT of a real Redis', { skip: redisServer ? false : 'redis-server not installed' }, async () => {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'hotkv-node-redis-'));
  const child = spawn(redisServer, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
    '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, 'nodes.conf'), '--dir', dir], { stdio: 'ignore' });
  const c = createClient({ socket: { port, host: '127.0.0.1', reconnectStrategy: false } });
  c.on('error', () => {});
  try {
    for (let i = 0; ; i++) {
      try { await c.connect(); break; } catch (e) { if (i > 100) throw e; await new Promise((r) => setTimeout(r, 50)); }
    }
    const keys = ['foo', '{user1000}.following', 'foo{}{bar}', 'foo{{bar}}zap', 'rl:{user:42}:sec', ''];
    for (let i = 0; i < 300; i++) keys.push(randomBytes(1 + (i % 20)).toString('hex'));
    for (const k of keys) {
      assert.equal(keySlot(k), await c.sendCommand(['CLUSTER', 'KEYSLOT', k]), JSON.stringify(k));
    }
  } finally {
    if (c.isOpen) c.destroy();
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
