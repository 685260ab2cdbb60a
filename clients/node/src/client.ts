import {
  createClient, createCluster, RESP_TYPES,
  type RedisClientOptions, type RedisClientType, type RedisClusterOptions, type RedisClusterType,
  type RespVersions, type RedisFunctions, type RedisScripts, type TypeMapping,
} from 'redis';
import { commandDefs, hotkvModule, type ArgParser, type CommandDef, type GCRALimitSpec, type HotKVModule, type RateLimitCreateOptions, type RateLimitUpdateOptions } from './commands.js';
import { HotKVError } from './errors.js';
import type { Int64Mode, IntArg, IntOf, LeaseIdArg } from './int64.js';
import type { GCRALimitAllResult, GCRAResult, RateLimitResult, RateLimitStats, ThrottleResult } from './results.js';
import { keySlot, type KeyLike } from './slot.js';

/**
 * How the typed commands read replies: integers and doubles as their decimal text (so 64-bit
 * values arrive exactly and the int64 option decides their type), RESP3 maps as flat arrays
 * (the RESP2 shape, so one parser reads both). It applies to HotKV's commands only, never to
 * the rest of your node-redis calls.
 */
export const REPLY_TYPE_MAPPING = {
  [RESP_TYPES.NUMBER]: String,
  [RESP_TYPES.DOUBLE]: String,
  [RESP_TYPES.MAP]: Array,
} as const satisfies TypeMapping;

/**
 * Translates HotKV URLs to node-redis ones: `hotkv://` to `redis://` and `hotkvs://` (TLS) to
 * `rediss://`, keeping user, password, host, port and database path. `redis://`, `rediss://`
 * and `unix://` URLs pass unchanged, so existing configuration keeps working.
 */
export function toRedisUrl(url: string): string {
  const m = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url);
  const scheme = m?.[1]?.toLowerCase();
  switch (scheme) {
    case 'hotkv': return 'redis://' + url.slice(m![0].length);
    case 'hotkvs': return 'rediss://' + url.slice(m![0].length);
    case 'redis': case 'rediss': case 'unix': return url;
    default: throw new HotKVError(`unsupported URL scheme in ${JSON.stringify(url)}: use hotkv:// or hotkvs://`);
  }
}

/** Options of HotKV: every node-redis client option (url, socket with TLS and reconnection,
 * username/password, database, RESP 2 or 3, commandOptions, pingInterval, ...) plus these. */
export type HotKVOptions<M extends Int64Mode = 'number'> = Omit<RedisClientOptions, 'modules'> & HotKVExtraOptions<M>;

export interface HotKVExtraOptions<M extends Int64Mode = 'number'> {
  /** `hotkv://[user:pass@]host:port[/db]` or `hotkvs://` for TLS (also redis://, rediss://). */
  url?: string;
  /** Integer representation of results, "number" (default) or "bigint"; see {@link Int64Mode}.
   * TypeScript infers the client's result types from it. */
  int64?: M;
  /**
   * Receives the underlying client's 'error' events (connection lost, reconnect failures).
   * node-redis requires an 'error' listener or the process exits on the first connection
   * error, which a rate limiter must never cause, so HotKV always installs one; the default
   * ignores the events (the affected commands still reject with the error).
   */
  onError?: (err: Error) => void;
}

/** The node-redis client inside a HotKV: the standard client plus the `hotkv` module. */
export type HotKVRedisClient<M extends Int64Mode = 'number'> = RedisClientType<{ hotkv: HotKVModule<IntOf<M>> }, RedisFunctions, RedisScripts, RespVersions, TypeMapping>;

/** Anything that can send a raw command and return its reply. */
interface Sender {
  send(args: Array<string | Buffer>, firstKey: string | Buffer | undefined, readonly: boolean): Promise<unknown>;
}

class Parser implements ArgParser {
  args: Array<string | Buffer> = [];
  keys: Array<string | Buffer> = [];
  push(...a: Array<string | Buffer>) { this.args.push(...a); }
  pushKey(k: string | Buffer) { this.args.push(k); this.keys.push(k); }
}

/**
 * The typed rate-limit methods, shared by HotKV (one server) and HotKVCluster. Subclasses say
 * how a command reaches the server.
 */
export abstract class RateLimitCommands<M extends Int64Mode = 'number'> {
  protected readonly mode: Int64Mode;
  readonly #defs = commandDefs<IntOf<M>>();

  constructor(mode: Int64Mode | undefined) {
    this.mode = mode ?? 'number';
    if (this.mode !== 'number' && this.mode !== 'bigint') throw new HotKVError(`int64 must be "number" or "bigint"`);
  }

  protected abstract sender(): Promise<Sender>;

  /** A hook for cluster checks before sending (the cross-slot check of GCRA.RESET). */
  protected check(_p: Parser): void {}

  async #run<A extends unknown[], R>(d: CommandDef<A, R>, ...args: A): Promise<R> {
    const p = new Parser();
    d.parse(p, ...args);
    this.check(p);
    const s = await this.sender();
    return d.transform(await s.send(p.args, p.keys[0], d.readonly), this.mode);
  }

  /**
   * GCRA.LIMIT key period_ms burst [count]: allows or denies a request of count units (default
   * 1) under burst units per periodMs milliseconds with smooth refill, and records it if allowed,
   * in one atomic step. A denied request changes nothing. Use a dedicated key prefix: an
   * integer-valued key of yours would be taken as limiter state.
   */
  gcraLimit(key: KeyLike, periodMs: IntArg, burst: IntArg, count?: IntArg): Promise<GCRAResult<IntOf<M>>> {
    return this.#run(this.#defs.gcraLimit, key, periodMs, burst, count);
  }

  /** GCRA.PEEK: exactly what gcraLimit with these arguments would reply now, recording nothing. */
  gcraPeek(key: KeyLike, periodMs: IntArg, burst: IntArg, count?: IntArg): Promise<GCRAResult<IntOf<M>>> {
    return this.#run(this.#defs.gcraPeek, key, periodMs, burst, count);
  }

  /**
   * GCRA.LIMITALL numlimits key period burst ... [COUNT count]: the request of count units
   * (default 1) is admitted only if every limit allows it, and is then recorded in every key as
   * gcraLimit would; if any limit denies, nothing is recorded. Two gcraLimit calls cannot do
   * this: the first spends its unit even when the second denies. The server accepts 1 to 256
   * limits; a key listed twice is charged twice. In a cluster all keys must hash to one slot
   * (use a hash tag such as {user42}).
   */
  gcraLimitAll(limits: readonly GCRALimitSpec[], count?: IntArg): Promise<GCRALimitAllResult<IntOf<M>>> {
    return this.#run(this.#defs.gcraLimitAll, limits, count);
  }

  /**
   * GCRA.REFUND key period_ms burst [count]: gives count units (default 1) back to a GCRA key,
   * for "charge only on success" flows (gcraLimit before the work, gcraRefund when the work
   * should not have counted). The refund never goes beyond a full burst; an absent or full key
   * is left alone, and a key that becomes full is deleted. The result has denied false;
   * remaining and resetAfterMs describe the key after the refund. Use the limit's period and burst.
   */
  gcraRefund(key: KeyLike, periodMs: IntArg, burst: IntArg, count?: IntArg): Promise<GCRAResult<IntOf<M>>> {
    return this.#run(this.#defs.gcraRefund, key, periodMs, burst, count);
  }

  /** GCRA.RESET key [key ...]: deletes GCRA (and CL.THROTTLE) state; resolves to how many of
   * the keys existed. WRONGTYPE (and nothing deleted) if any existing key is not GCRA state. */
  gcraReset(...keys: KeyLike[]): Promise<IntOf<M>> {
    return this.#run(this.#defs.gcraReset, ...keys);
  }

  /** CL.THROTTLE key max_burst count_per_period period_s [quantity], the redis-cell compatible
   * form: countPerPeriod units per periodS seconds, bursts of maxBurst + 1; quantity 0 only
   * reports. Times in the result are whole seconds. Shares state with GCRA.LIMIT. */
  clThrottle(key: KeyLike, maxBurst: IntArg, countPerPeriod: IntArg, periodS: IntArg, quantity?: IntArg): Promise<ThrottleResult<IntOf<M>>> {
    return this.#run(this.#defs.clThrottle, key, maxBurst, countPerPeriod, periodS, quantity);
  }

  /** RATELIMIT.CREATE name limit window_ms [ALGO a] [REFILL r] [DRAIN r] [SHADOW]. Fails with
   * "ERR limiter already exists or limit reached" if the name exists, even with the same
   * settings (create limiters at start-up and ignore that error). To change a limiter in
   * place, keeping its state, use rateLimitUpdate. */
  rateLimitCreate(name: KeyLike, limit: IntArg, windowMs: IntArg, options?: RateLimitCreateOptions): Promise<'OK'> {
    return this.#run(this.#defs.rateLimitCreate, name, limit, windowMs, options);
  }

  /**
   * RATELIMIT.UPDATE name [LIMIT n] [WINDOW ms] [REFILL r | DRAIN r] [SHADOW ON|OFF]: changes a
   * limiter in place, sending only the options given. The limiter keeps its keys' state and its
   * totals: a sliding window keeps its log (a key above a lowered limit waits until enough units
   * age out), a bucket keeps each key's units in use, clamped to the new limit. An unknown
   * limiter is "ERR limiter not found".
   */
  rateLimitUpdate(name: KeyLike, update: RateLimitUpdateOptions): Promise<'OK'> {
    return this.#run(this.#defs.rateLimitUpdate, name, update);
  }

  /** RATELIMIT.CHECK name key [COST cost]: checks a request for key and counts it if allowed.
   * An unknown limiter is not an error: the reply is all zeros (unknownLimiter is true). */
  rateLimitCheck(name: KeyLike, key: KeyLike, cost?: IntArg): Promise<RateLimitResult<IntOf<M>>> {
    return this.#run(this.#defs.rateLimitCheck, name, key, cost);
  }

  /** RATELIMIT.PEEK name key: answers for a cost of 1 and counts nothing; remaining is what is
   * left now (unlike GCRA.PEEK, nothing is subtracted). */
  rateLimitPeek(name: KeyLike, key: KeyLike): Promise<RateLimitResult<IntOf<M>>> {
    return this.#run(this.#defs.rateLimitPeek, name, key);
  }

  /**
   * RATELIMIT.RELEASE name key lease_id: gives back a lease a concurrency limiter's check
   * acquired (RateLimitResult.leaseId), freeing its units at once. Resolves to true if the key
   * held that live lease and it is now released, false if it was released already, had expired,
   * was never issued or is another key's: releasing is idempotent, so retrying is safe. Release
   * in a finally right after an allowed check. Pass leaseId as the result gave it (a string or
   * a bigint); a number is accepted only while it is a safe integer. A lease id that is not 1 ..
   * 2^63-1 is "ERR invalid lease: must be a positive integer", an unknown limiter "ERR limiter
   * not found", another algorithm's "ERR limiter is not a concurrency limiter".
   */
  rateLimitRelease(name: KeyLike, key: KeyLike, leaseId: LeaseIdArg): Promise<boolean> {
    return this.#run(this.#defs.rateLimitRelease, name, key, leaseId);
  }

  /** RATELIMIT.RESET name key: forgets one key's state; 1 if it had live state, else 0. */
  rateLimitReset(name: KeyLike, key: KeyLike): Promise<IntOf<M>> {
    return this.#run(this.#defs.rateLimitReset, name, key);
  }

  /** RATELIMIT.STATS name: settings, keys with live state, allowed and denied totals, shadow
   * mode and the units denied in shadow mode. */
  rateLimitStats(name: KeyLike): Promise<RateLimitStats<IntOf<M>>> {
    return this.#run(this.#defs.rateLimitStats, name);
  }

  /** RATELIMIT.DROP name: deletes the limiter, its state and totals. */
  rateLimitDrop(name: KeyLike): Promise<'OK'> {
    return this.#run(this.#defs.rateLimitDrop, name);
  }

  /** RATELIMIT.LIST: the limiters' names, sorted bytewise. */
  rateLimitList(): Promise<string[]> {
    return this.#run(this.#defs.rateLimitList);
  }
}

type AnyClient = RedisClientType<any, any, any, any, any>;

/**
 * A HotKV client: a node-redis client underneath (available as `redis`: TLS, reconnection,
 * RESP2/RESP3, pipelining and every other command), plus typed rate-limit methods. For a
 * client pool, wrap node-redis's createClientPool with HotKV.wrap.
 *
 * Connection: like node-redis, `await client.connect()` opens the connection. Unlike
 * node-redis, a HotKV also starts connecting by itself on its first typed command (or multi()),
 * so the product documentation's snippet (`new HotKV(...)` then `await client.gcraLimit(...)`)
 * works as written. Commands sent through `client.redis` directly need the connection open.
 */
export class HotKV<M extends Int64Mode = 'number'> extends RateLimitCommands<M> {
  /** The node-redis client, with the typed commands also available as a module:
   * `client.redis.multi().hotkv.gcraLimit(...)`. */
  readonly redis: HotKVRedisClient<M>;
  readonly #typed: AnyClient;
  #connecting: Promise<unknown> | undefined;
  #closed = false;

  constructor(options: HotKVOptions<M> = {}) {
    super(options.int64 as Int64Mode | undefined);
    const { int64: _i, onError, url, ...rest } = options;
    const mode = this.mode;
    this.redis = createClient({
      ...rest,
      ...(url !== undefined ? { url: toRedisUrl(url) } : {}),
      modules: { hotkv: mode === 'bigint' ? hotkvModule({ int64: 'bigint' }) : hotkvModule() },
    } as RedisClientOptions) as unknown as HotKVRedisClient<M>;
    this.redis.on('error', (err: Error) => onError?.(err));
    this.#typed = (this.redis as AnyClient).withTypeMapping(REPLY_TYPE_MAPPING);
  }

  /**
   * Adds the typed methods to a node-redis client or client pool (createClientPool) you
   * already have and keep managing: HotKV neither connects nor closes it. int64 as in the
   * constructor.
   */
  static wrap<W extends Int64Mode = 'number', C extends CommandSender = CommandSender>(client: C, options: { int64?: W } = {}): WrappedClient<W, C> {
    return new WrappedClient<W, C>(client, options.int64);
  }

  /** The connection is open (connecting or ready). */
  get isOpen(): boolean { return this.redis.isOpen; }
  /** The connection is ready for commands. */
  get isReady(): boolean { return this.redis.isReady; }

  /** Opens the connection and waits until it is ready (idempotent: concurrent and repeated
   * calls share one connect). */
  async connect(): Promise<this> {
    await this.#start();
    return this;
  }

  /** Starts connecting unless the connection is open or opening; returns the attempt. */
  #start(): Promise<unknown> {
    if (this.redis.isOpen) return this.#connecting ?? Promise.resolve();
    this.#closed = false;
    const attempt = this.redis.connect();
    // The attempt's failure reaches whoever awaits connect(), and the commands queued meanwhile
    // through node-redis; this handler only keeps it from being an unhandled rejection.
    attempt.catch(() => {
      if (this.#connecting === attempt) this.#connecting = undefined;
    });
    this.#connecting = attempt;
    return attempt;
  }

  #lazyConnect(): void {
    if (!this.#closed && !this.redis.isOpen) void this.#start();
  }

  protected async sender(): Promise<Sender> {
    // Lazy connect without waiting for it: node-redis queues the command until the connection
    // is ready and applies its command timeout (commandOptions.timeout) while it waits. Awaiting
    // the connect instead would hang the command for as long as the server is unreachable,
    // because node-redis's default reconnect strategy retries for ever, and a rate-limit check
    // (and the middleware's fail-open/closed decision) must not hang.
    this.#lazyConnect();
    const typed = this.#typed;
    return { send: (args) => typed.sendCommand(args) };
  }

  /** A MULTI on the typed connection: queue commands with `.hotkv.gcraLimit(...)` and friends
   * (typed results) or any node-redis command; `exec()` runs them as one transaction (one
   * server time sample), `execAsPipeline()` as a pipeline. execAsPipeline() reads integers
   * exactly; exec() reads them as numbers (node-redis 6.3.1 decodes EXEC's reply without the
   * type mapping), so there a value beyond 2^53 is refused with a HotKVError, never rounded. */
  multi(): ReturnType<HotKVRedisClient<M>['multi']> {
    this.#lazyConnect();
    return (this.#typed as unknown as HotKVRedisClient<M>).multi();
  }

  /** Closes the connection after pending replies (node-redis close()). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#connecting = undefined;
    if (this.redis.isOpen) await this.redis.close();
  }

  /** Closes the connection at once, failing pending commands. */
  destroy(): void {
    this.#closed = true;
    this.#connecting = undefined;
    if (this.redis.isOpen) this.redis.destroy();
  }
}

/** What HotKV.wrap needs: node-redis's client and client pool both have these. */
export interface CommandSender {
  sendCommand(args: Array<string | Buffer>, options?: any): Promise<unknown>;
  withTypeMapping(mapping: any): { sendCommand(args: Array<string | Buffer>, options?: any): Promise<unknown> };
}

/** HotKV.wrap's result: the typed methods on a client the caller manages. */
export class WrappedClient<M extends Int64Mode = 'number', C extends CommandSender = CommandSender> extends RateLimitCommands<M> {
  /** The wrapped client, as given. */
  readonly redis: C;
  readonly #typed: { sendCommand(args: Array<string | Buffer>): Promise<unknown> };
  constructor(client: C, mode: Int64Mode | undefined) {
    super(mode);
    this.redis = client;
    this.#typed = client.withTypeMapping(REPLY_TYPE_MAPPING);
  }
  protected async sender(): Promise<Sender> {
    const typed = this.#typed;
    return { send: (args) => typed.sendCommand(args) };
  }
}

/** Options of HotKVCluster: node-redis's cluster options (rootNodes, defaults, useReplicas,
 * RESP, ...) with hotkv:// URLs accepted in rootNodes and defaults, plus int64 and onError. */
export type HotKVClusterOptions<M extends Int64Mode = 'number'> = Omit<RedisClusterOptions, 'modules'> & Omit<HotKVExtraOptions<M>, 'url'>;

/** The node-redis cluster client inside a HotKVCluster. */
export type HotKVRedisCluster<M extends Int64Mode = 'number'> = RedisClusterType<{ hotkv: HotKVModule<IntOf<M>> }, RedisFunctions, RedisScripts, RespVersions, TypeMapping>;

/** What HotKVCluster uses of node-redis's cluster client (node-redis's own generic types are
 * invariant in their type mapping, so the typed view is held through this shape). */
interface ClusterView {
  sendCommand(firstKey: string | Buffer | undefined, isReadonly: boolean | undefined, args: Array<string | Buffer>): Promise<unknown>;
  multi(routing?: string | Buffer): unknown;
  withTypeMapping(m: TypeMapping): ClusterView;
}

function translateNode<T extends { url?: string }>(n: T): T {
  return n.url === undefined ? n : { ...n, url: toRedisUrl(n.url) };
}

/**
 * A HotKV cluster client over node-redis's cluster client (createCluster), which discovers the
 * topology, keeps a connection per node, follows MOVED/ASK redirections and can read from
 * replicas. Each command names its routing key as the server defines it: the key for GCRA.* and
 * CL.THROTTLE, the limiter NAME for RATELIMIT.* (the per-limiter key does not route), so a
 * limiter and all its keys live on the node serving the name's slot.
 *
 * The client computes slots itself (keySlot: CRC16 with hash tags) to refuse a GCRA.RESET whose
 * keys span slots before sending it, and to find the node of a key (nodeFor).
 *
 * HotKV has no cluster mode yet; see the README for what is tested.
 */
export class HotKVCluster<M extends Int64Mode = 'number'> extends RateLimitCommands<M> {
  /** The node-redis cluster client (with the `hotkv` module for MULTI on one slot). */
  readonly redis: HotKVRedisCluster<M>;
  readonly #typed: ClusterView;
  #connecting: Promise<unknown> | undefined;
  #closed = false;

  constructor(options: HotKVClusterOptions<M>) {
    super(options.int64 as Int64Mode | undefined);
    const { int64: _i, onError, rootNodes, defaults, ...rest } = options;
    this.redis = createCluster({
      ...rest,
      rootNodes: rootNodes.map(translateNode),
      ...(defaults !== undefined ? { defaults: translateNode(defaults) } : {}),
      modules: { hotkv: this.mode === 'bigint' ? hotkvModule({ int64: 'bigint' }) : hotkvModule() },
    } as RedisClusterOptions) as unknown as HotKVRedisCluster<M>;
    this.redis.on('error', (err: Error) => onError?.(err));
    this.#typed = (this.redis as unknown as ClusterView).withTypeMapping(REPLY_TYPE_MAPPING);
  }

  /** Discovers the cluster and connects (idempotent; typed commands call it themselves). */
  async connect(): Promise<this> {
    await this.#ensure();
    return this;
  }

  #ensure(): Promise<unknown> {
    if (this.redis.isOpen) return this.#connecting ?? Promise.resolve();
    if (!this.#connecting) {
      this.#closed = false;
      this.#connecting = this.redis.connect().catch((err: unknown) => {
        this.#connecting = undefined;
        throw err;
      });
    }
    return this.#connecting;
  }

  /** The slot of a key or limiter name (the same as the server's CLUSTER KEYSLOT). */
  slot(key: KeyLike): number {
    return keySlot(key);
  }

  /** The master node serving a key's (or limiter name's) slot in the current topology. */
  async nodeFor(key: KeyLike): Promise<{ host: string; port: number; id: string }> {
    await this.#ensure();
    const m = this.redis.getSlotMaster(keySlot(key));
    return { host: m.host, port: m.port, id: m.id };
  }

  protected override check(p: Parser): void {
    // A multi-key command must stay in one slot, as the server requires in cluster mode;
    // refusing it here gives the same answer without a round trip (and before node-redis
    // would send it to the first key's node only).
    if (p.keys.length < 2) return;
    const first = keySlot(p.keys[0]!);
    for (const k of p.keys) {
      if (keySlot(k) !== first) throw new HotKVError("CROSSSLOT Keys in request don't hash to the same slot");
    }
  }

  protected async sender(): Promise<Sender> {
    if (!this.#closed) await this.#ensure();
    const typed = this.#typed;
    return { send: (args, firstKey, readonly) => typed.sendCommand(firstKey, readonly, args) };
  }

  /**
   * RATELIMIT.LIST on every master, merged: limiters are node-local, so one node only knows its
   * own. Sorted bytewise like the server's reply.
   */
  override async rateLimitList(): Promise<string[]> {
    await this.#ensure();
    const names = new Set<string>();
    for (const m of this.redis.masters) {
      const c = await this.redis.nodeClient(m);
      const reply = await (c as AnyClient).sendCommand(['RATELIMIT.LIST']);
      for (const n of reply as unknown as unknown[]) names.add(String(n));
    }
    return [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  }

  /** MULTI for commands of one slot: routing names the slot's key. */
  multi(routing?: KeyLike): ReturnType<HotKVRedisCluster<M>['multi']> {
    const r = routing === undefined ? undefined : typeof routing === 'string' ? routing : Buffer.from(routing);
    return (this.#typed as unknown as HotKVRedisCluster<M>).multi(r);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#connecting = undefined;
    if (this.redis.isOpen) await this.redis.close();
  }

  destroy(): void {
    this.#closed = true;
    this.#connecting = undefined;
    if (this.redis.isOpen) this.redis.destroy();
  }
}
