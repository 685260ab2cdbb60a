// rate-limiter-flexible's RateLimiterRedis (from npm) against a server on 127.0.0.1:PORT: a
// fixed sequence of consume, penalty, reward, get, block, delete and insurance-free calls,
// printed as one line per call. scripts/ratelimit-libs.sh runs it against Redis 7 and HotKV and
// requires the same lines: the library ships no tests in its npm package, so this is its check.
'use strict';
const Redis = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');

const port = Number(process.env.PORT || 6379);

function show(r) {
  if (r instanceof Error) return `error ${r.message}`;
  if (r === null) return 'null';
  if (typeof r !== 'object') return String(r);
  // msBeforeNext depends on the clock: rounded to seconds, it is the same on both servers.
  return `points=${r.consumedPoints} remaining=${r.remainingPoints} first=${r.isFirstInDuration} ` +
    `next~${Math.round(r.msBeforeNext / 1000)}s`;
}

async function main() {
  const client = new Redis({ port, host: '127.0.0.1', enableOfflineQueue: false, lazyConnect: true });
  await client.connect();
  await client.flushall();
  const out = [];
  const step = async (name, fn) => {
    try {
      out.push(`${name}: ${show(await fn())}`);
    } catch (e) {
      // Rejections carry a RateLimiterRes when the limit is reached.
      out.push(`${name}: rejected ${e instanceof Error ? 'error ' + e.message : show(e)}`);
    }
  };
  for (const useRedisPackage of [false]) {
    const rl = new RateLimiterRedis({ storeClient: client, keyPrefix: 'flex', points: 5, duration: 10, useRedisPackage });
    for (let i = 0; i < 7; i++) await step(`consume ${i}`, () => rl.consume('user:1'));
    await step('consume 2 points', () => rl.consume('user:2', 2));
    await step('penalty', () => rl.penalty('user:2', 2));
    await step('reward', () => rl.reward('user:2', 3));
    await step('get', () => rl.get('user:2'));
    await step('get missing', () => rl.get('nobody'));
    await step('block', () => rl.block('user:3', 30));
    await step('consume blocked', () => rl.consume('user:3'));
    await step('set', () => rl.set('user:4', 3, 20));
    await step('consume after set', () => rl.consume('user:4', 2));
    await step('delete', () => rl.delete('user:1'));
    await step('consume after delete', () => rl.consume('user:1'));
    const blocker = new RateLimiterRedis({ storeClient: client, keyPrefix: 'flexb', points: 2, duration: 10, blockDuration: 60 });
    for (let i = 0; i < 4; i++) await step(`blockDuration consume ${i}`, () => blocker.consume('ip'));
    const forever = new RateLimiterRedis({ storeClient: client, keyPrefix: 'flexf', points: 1, duration: 0 });
    for (let i = 0; i < 2; i++) await step(`no expiry consume ${i}`, () => forever.consume('k'));
  }
  console.log(out.join('\n'));
  await client.quit();
}

main().catch((e) => { console.error(e); process.exit(1); });
