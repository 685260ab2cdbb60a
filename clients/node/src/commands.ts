import type { CommandParser } from 'redis';
import { formatRate, intArg, leaseArg, type Int, type Int64Mode, type IntArg, type LeaseIdArg } from './int64.js';
import {
  parseBool, parseGCRA, parseGCRALimitAll, parseNames, parseOK, parseRateLimit, parseStats, parseThrottle,
  type Algorithm, type GCRALimitAllResult, type GCRAResult, type RateLimitResult, type RateLimitStats, type ThrottleResult,
} from './results.js';
import { toInt } from './int64.js';
import type { KeyLike } from './slot.js';

/** RATELIMIT.CREATE's options. Anything left out takes the server's default. */
export interface RateLimitCreateOptions {
  /** ALGO; the server defaults to sliding_window. Case-insensitive on the server. A
   * concurrency limiter bounds the units in flight per key: an allowed check acquires a lease
   * (RateLimitResult.leaseId) held until rateLimitRelease, or until windowMs after it was
   * acquired; its limit is at most 100000. */
  algo?: Algorithm | Uppercase<Algorithm>;
  /** REFILL (token_bucket): tokens per second. A number is written as plain decimal (never an
   * exponent); a string is sent as it is. Default: limit per window. */
  refill?: number | string;
  /** DRAIN (leaky_bucket): units per second, written like refill. Default: limit per window. */
  drain?: number | string;
  /**
   * SHADOW: creates the limiter in shadow mode. Every check is allowed while the decision is
   * still recorded and counted as an enforced limiter would, so a limit can be measured in
   * production before it is enforced (rateLimitUpdate with shadow: false turns it off). A shadow
   * denial is an allowed result with retryAfterMs other than 0. false sends nothing.
   */
  shadow?: boolean;
}

/**
 * RATELIMIT.UPDATE's options: only those given (not undefined) are sent, the others keep their
 * value; at least one is needed (the server replies "ERR syntax error" otherwise). The algorithm
 * cannot change. The server's AT option is not offered: it is the instant the server journals
 * a conversion at, not an application setting (as in the Go client).
 */
export interface RateLimitUpdateOptions {
  /** LIMIT: the new limit. */
  limit?: IntArg;
  /** WINDOW: the new window in ms. A limiter on the default rate (limit per window) follows it. */
  windowMs?: IntArg;
  /** REFILL (token_bucket only): the new rate in tokens per second, written like the create option. */
  refill?: number | string;
  /** DRAIN (leaky_bucket only): the new rate in units per second. */
  drain?: number | string;
  /** SHADOW ON (true) or OFF (false): shadow mode on a live limiter. */
  shadow?: boolean;
}

/** One limit of gcraLimitAll: a key with its own period and burst, as GCRA.LIMIT takes them. */
export interface GCRALimitSpec {
  key: KeyLike;
  periodMs: IntArg;
  burst: IntArg;
}

/**
 * The part of node-redis's CommandParser these commands use. Keys go through pushKey, which is
 * what node-redis's cluster client routes by (its first key) and what applies a configured
 * keyPrefix; the RATELIMIT.* limiter name is pushed as the key because the server defines the
 * name as each command's only key (section 8.1 of the specification).
 */
export type ArgParser = Pick<CommandParser, 'push' | 'pushKey'>;

type Arg = string | Buffer;
const keyArg = (k: KeyLike): Arg => (typeof k === 'string' ? k : Buffer.from(k));

/**
 * One command: how to write it and how to read its reply. The same definitions serve the
 * node-redis module (so commands work in MULTI, pipelines and cluster clients) and the HotKV
 * classes' own methods.
 */
export interface CommandDef<A extends unknown[], R> {
  readonly: boolean;
  parse(parser: ArgParser, ...args: A): void;
  transform(reply: unknown, mode: Int64Mode): R;
}

function def<A extends unknown[], R>(d: CommandDef<A, R>): CommandDef<A, R> {
  return d;
}

function gcraArgs(name: string) {
  return (p: ArgParser, key: KeyLike, periodMs: IntArg, burst: IntArg, count?: IntArg) => {
    p.push(name);
    p.pushKey(keyArg(key));
    p.push(intArg(periodMs), intArg(burst));
    // count is omitted when not given: the server's default is 1.
    if (count !== undefined) p.push(intArg(count));
  };
}

/** The command definitions, by method name. The generic I is the integer type of results. */
export function commandDefs<I extends Int>() {
  return {
    gcraLimit: def({
      readonly: false,
      parse: gcraArgs('GCRA.LIMIT'),
      transform: (r, m): GCRAResult<I> => parseGCRA<I>(r, m, 'gcra.limit'),
    }),
    gcraPeek: def({
      readonly: true,
      parse: gcraArgs('GCRA.PEEK'),
      transform: (r, m): GCRAResult<I> => parseGCRA<I>(r, m, 'gcra.peek'),
    }),
    gcraLimitAll: def({
      readonly: false,
      parse: (p: ArgParser, limits: readonly GCRALimitSpec[], count?: IntArg) => {
        p.push('GCRA.LIMITALL', String(limits.length));
        // Every key goes through pushKey: node-redis's cluster client routes by the first one,
        // HotKVCluster checks they share its slot.
        for (const l of limits) {
          p.pushKey(keyArg(l.key));
          p.push(intArg(l.periodMs), intArg(l.burst));
        }
        if (count !== undefined) p.push('COUNT', intArg(count));
      },
      transform: (r, m): GCRALimitAllResult<I> => parseGCRALimitAll<I>(r, m),
    }),
    gcraRefund: def({
      readonly: false,
      parse: gcraArgs('GCRA.REFUND'),
      transform: (r, m): GCRAResult<I> => parseGCRA<I>(r, m, 'gcra.refund'),
    }),
    gcraReset: def({
      readonly: false,
      parse: (p: ArgParser, ...keys: KeyLike[]) => {
        p.push('GCRA.RESET');
        for (const k of keys) p.pushKey(keyArg(k));
      },
      transform: (r, m): I => toInt<I>(r, m, 'gcra.reset'),
    }),
    clThrottle: def({
      readonly: false,
      parse: (p: ArgParser, key: KeyLike, maxBurst: IntArg, countPerPeriod: IntArg, periodS: IntArg, quantity?: IntArg) => {
        p.push('CL.THROTTLE');
        p.pushKey(keyArg(key));
        p.push(intArg(maxBurst), intArg(countPerPeriod), intArg(periodS));
        if (quantity !== undefined) p.push(intArg(quantity));
      },
      transform: (r, m): ThrottleResult<I> => parseThrottle<I>(r, m),
    }),
    rateLimitCreate: def({
      readonly: false,
      parse: (p: ArgParser, name: KeyLike, limit: IntArg, windowMs: IntArg, options?: RateLimitCreateOptions) => {
        p.push('RATELIMIT.CREATE');
        p.pushKey(keyArg(name));
        p.push(intArg(limit), intArg(windowMs));
        if (options?.algo !== undefined) p.push('ALGO', options.algo);
        if (options?.refill !== undefined) p.push('REFILL', formatRate(options.refill));
        if (options?.drain !== undefined) p.push('DRAIN', formatRate(options.drain));
        if (options?.shadow) p.push('SHADOW');
      },
      transform: (r): 'OK' => parseOK(r, 'ratelimit.create'),
    }),
    rateLimitUpdate: def({
      readonly: false,
      parse: (p: ArgParser, name: KeyLike, update: RateLimitUpdateOptions) => {
        p.push('RATELIMIT.UPDATE');
        p.pushKey(keyArg(name));
        if (update.limit !== undefined) p.push('LIMIT', intArg(update.limit));
        if (update.windowMs !== undefined) p.push('WINDOW', intArg(update.windowMs));
        if (update.refill !== undefined) p.push('REFILL', formatRate(update.refill));
        if (update.drain !== undefined) p.push('DRAIN', formatRate(update.drain));
        if (update.shadow !== undefined) p.push('SHADOW', update.shadow ? 'ON' : 'OFF');
      },
      transform: (r): 'OK' => parseOK(r, 'ratelimit.update'),
    }),
    rateLimitCheck: def({
      readonly: false,
      parse: (p: ArgParser, name: KeyLike, key: KeyLike, cost?: IntArg) => {
        p.push('RATELIMIT.CHECK');
        p.pushKey(keyArg(name));
        p.push(keyArg(key));
        if (cost !== undefined) p.push('COST', intArg(cost));
      },
      transform: (r, m): RateLimitResult<I> => parseRateLimit<I>(r, m, 'ratelimit.check'),
    }),
    rateLimitPeek: def({
      readonly: true,
      parse: (p: ArgParser, name: KeyLike, key: KeyLike) => {
        p.push('RATELIMIT.PEEK');
        p.pushKey(keyArg(name));
        p.push(keyArg(key));
      },
      transform: (r, m): RateLimitResult<I> => parseRateLimit<I>(r, m, 'ratelimit.peek'),
    }),
    rateLimitRelease: def({
      readonly: false,
      parse: (p: ArgParser, name: KeyLike, key: KeyLike, leaseId: LeaseIdArg) => {
        p.push('RATELIMIT.RELEASE');
        p.pushKey(keyArg(name));
        p.push(keyArg(key), leaseArg(leaseId));
      },
      transform: (r): boolean => parseBool(r, 'ratelimit.release'),
    }),
    rateLimitReset: def({
      readonly: false,
      parse: (p: ArgParser, name: KeyLike, key: KeyLike) => {
        p.push('RATELIMIT.RESET');
        p.pushKey(keyArg(name));
        p.push(keyArg(key));
      },
      transform: (r, m): I => toInt<I>(r, m, 'ratelimit.reset'),
    }),
    rateLimitStats: def({
      readonly: true,
      parse: (p: ArgParser, name: KeyLike) => {
        p.push('RATELIMIT.STATS');
        p.pushKey(keyArg(name));
      },
      transform: (r, m): RateLimitStats<I> => parseStats<I>(r, m),
    }),
    rateLimitDrop: def({
      readonly: false,
      parse: (p: ArgParser, name: KeyLike) => {
        p.push('RATELIMIT.DROP');
        p.pushKey(keyArg(name));
      },
      transform: (r): 'OK' => parseOK(r, 'ratelimit.drop'),
    }),
    rateLimitList: def({
      readonly: true,
      parse: (p: ArgParser) => {
        p.push('RATELIMIT.LIST');
      },
      transform: (r): string[] => parseNames(r),
    }),
  };
}

export type CommandDefs<I extends Int> = ReturnType<typeof commandDefs<I>>;

type Params<F> = F extends (p: ArgParser, ...args: infer A) => void ? A : never;

/** A node-redis command (module member) built from a definition. */
export type ModuleCommand<D> = D extends CommandDef<infer _A, infer R>
  ? {
      readonly IS_READ_ONLY: boolean;
      readonly INT64: Int64Mode;
      readonly parseCommand: (this: void, parser: CommandParser, ...args: Params<D['parse']>) => void;
      readonly transformReply: (this: void, reply: unknown) => R;
    }
  : never;

/** The node-redis module: the typed commands under their method names. */
export type HotKVModule<I extends Int = number> = { [K in keyof CommandDefs<I>]: ModuleCommand<CommandDefs<I>[K]> };

/**
 * The HotKV commands as a node-redis module, for your own node-redis client or cluster:
 *
 * ```ts
 * const client = createClient({ url, modules: { hotkv: hotkvModule() } });
 * const [a, b] = await client.multi().hotkv.gcraLimit("k", 60000, 10).hotkv.gcraPeek("k", 60000, 10).exec();
 * ```
 *
 * With node-redis's default type mapping integers arrive as JavaScript numbers, exact up to
 * 2^53; use `client.withTypeMapping({ [RESP_TYPES.NUMBER]: String })` (HotKV's own client does)
 * for exact 64-bit values, with int64: "bigint" to keep them.
 */
export function hotkvModule(options?: { int64?: 'number' }): HotKVModule<number>;
export function hotkvModule(options: { int64: 'bigint' }): HotKVModule<bigint>;
export function hotkvModule(options: { int64?: Int64Mode } = {}): HotKVModule<Int> {
  const mode = options.int64 ?? 'number';
  const defs = commandDefs<Int>();
  const out: Record<string, unknown> = {};
  for (const [name, d] of Object.entries(defs) as Array<[string, CommandDef<unknown[], unknown>]>) {
    out[name] = {
      IS_READ_ONLY: d.readonly,
      // node-redis caches the client class it builds for a configuration under the
      // configuration's JSON text, in which functions do not appear: without a visible
      // difference a bigint module would reuse the class (and transformReply) built for a
      // number module just before. This field is that difference; node-redis ignores it.
      INT64: mode,
      parseCommand: (parser: CommandParser, ...args: unknown[]) => d.parse(parser, ...args),
      transformReply: (reply: unknown) => d.transform(reply, mode),
    };
  }
  return out as HotKVModule<Int>;
}
