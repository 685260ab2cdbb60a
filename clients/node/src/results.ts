import { HotKVError } from './errors.js';
import { toInt, toLeaseId, type Int, type Int64Mode, type LeaseIdOf } from './int64.js';

/**
 * Reply of GCRA.LIMIT and GCRA.PEEK. Note the polarity: the wire's first field is `denied`
 * (RATELIMIT's is `allowed`); the field names say which.
 */
export interface GCRAResult<I extends Int = number> {
  /** The request was refused (nothing was recorded). */
  denied: boolean;
  /** The burst passed. */
  limit: I;
  /** Units still available after this call; 0 when denied. */
  remaining: I;
  /** -1 when allowed; when denied, ms until the same call would be allowed (>= 1), or -1 when
   * count > burst and no wait can help (see tooLarge). Rounded up: waiting it is enough. */
  retryAfterMs: I;
  /** Ms until a full burst is available again (equals PTTL key right after an allowed call). */
  resetAfterMs: I;
  /** Denied because count exceeds burst: it will never be allowed. */
  tooLarge: boolean;
}

/**
 * Reply of GCRA.LIMITALL: `[denied, retry_after_ms, <GCRA.LIMIT reply of each limit>...]`.
 */
export interface GCRALimitAllResult<I extends Int = number> {
  /** At least one limit refused the request; then nothing was recorded anywhere. */
  denied: boolean;
  /** -1 when admitted; when denied, the largest wait among the denying limits, or -1 when one
   * of them can never allow the count (count > its burst; see tooLarge). */
  retryAfterMs: I;
  /** Each limit's GCRA.LIMIT reply, in the order the limits were given. When the request was
   * denied they say what each limit would have answered; none was recorded. */
  limits: GCRAResult<I>[];
  /** Denied because count exceeds a limit's burst: it will never be admitted. */
  tooLarge: boolean;
}

/** Reply of CL.THROTTLE (redis-cell compatible); times are whole seconds, rounded as the
 * server's throttle-compat setting says. */
export interface ThrottleResult<I extends Int = number> {
  /** The request was refused. */
  limited: boolean;
  /** max_burst + 1. */
  limit: I;
  /** Units left; unlike GCRA, a refusal reports the true remaining count (redis-cell). */
  remaining: I;
  /** -1 when allowed or when the quantity can never pass; otherwise seconds to wait. */
  retryAfterSec: I;
  /** Seconds until the limit is fully available again. */
  resetAfterSec: I;
  /** Refused because quantity exceeds the limit. */
  tooLarge: boolean;
}

/** Reply of RATELIMIT.CHECK and RATELIMIT.PEEK: five integers, and a sixth, the lease id, from a
 * CHECK on a concurrency limiter. */
export interface RateLimitResult<I extends Int = number> {
  /** The request is (CHECK: was) allowed. */
  allowed: boolean;
  /** Units left (CHECK allowed: after this request; PEEK: now). */
  remaining: I;
  /** 0 when allowed; ms until a request of this cost would pass; -1 when cost > limit. */
  retryAfterMs: I;
  /** The limiter's limit; 0 when the limiter does not exist (see unknownLimiter). */
  limit: I;
  /** Units in use before this request. */
  current: I;
  /**
   * The lease an allowed CHECK on a concurrency limiter acquired, to give back with
   * rateLimitRelease when the work is done; "0" (number mode) or 0n (bigint mode) when none was
   * (denied, PEEK, other algorithms, whose replies have five fields). Always exact: a decimal
   * string in number mode, a bigint in bigint mode (ids are about 1.7e18, above 2^53).
   */
  leaseId: LeaseIdOf<I>;
  /** The server replied all zeros: no limiter of that name. Treat it as a configuration error. */
  unknownLimiter: boolean;
  /** Refused because cost exceeds the limit. */
  tooLarge: boolean;
}

/** The RATELIMIT.CREATE algorithms. */
export type Algorithm = 'sliding_window' | 'token_bucket' | 'leaky_bucket' | 'concurrency';

/** Reply of RATELIMIT.STATS, from the RESP2 flat array or the RESP3 map. */
export interface RateLimitStats<I extends Int = number> {
  name: string;
  algo: Algorithm;
  limit: I;
  windowMs: I;
  /** Keys with live state now. */
  uniqueKeys: I;
  /** Units allowed / denied since creation (saturating at 2^63-1). */
  totalAllowed: I;
  totalDenied: I;
  /** token_bucket only: the configured rate in units per second. */
  refillPerSec?: number;
  /** leaky_bucket only: the configured rate in units per second. */
  drainPerSec?: number;
  /** Shadow mode: every check is allowed, decisions are still recorded and counted. */
  shadow: boolean;
  /** Units denied in shadow mode and let through anyway (they are in totalDenied too); kept
   * when shadow mode is switched off. Servers without shadow mode send neither field: false
   * and 0. */
  totalShadowDenied: I;
}

function fiveInts(reply: unknown, what: string): unknown[] {
  if (!Array.isArray(reply) || reply.length !== 5) {
    throw new HotKVError(`${what}: unexpected reply ${JSON.stringify(reply, jsonSafe)}`);
  }
  return reply;
}

function jsonSafe(_k: string, v: unknown): unknown {
  return typeof v === 'bigint' ? v.toString() : v;
}

function flag(v: unknown, what: string): boolean {
  const n = toInt<number>(v, 'number', what);
  if (n !== 0 && n !== 1) throw new HotKVError(`${what}: expected 0 or 1, got ${n}`);
  return n === 1;
}

const isMinusOne = (v: Int) => v === -1 || v === -1n;
const isZero = (v: Int) => v === 0 || v === 0n;

export function parseGCRA<I extends Int>(reply: unknown, mode: Int64Mode, what = 'gcra'): GCRAResult<I> {
  const r = fiveInts(reply, what);
  const denied = flag(r[0], what);
  const retryAfterMs = toInt<I>(r[3], mode, what);
  return {
    denied,
    limit: toInt<I>(r[1], mode, what),
    remaining: toInt<I>(r[2], mode, what),
    retryAfterMs,
    resetAfterMs: toInt<I>(r[4], mode, what),
    tooLarge: denied && isMinusOne(retryAfterMs),
  };
}

export function parseGCRALimitAll<I extends Int>(reply: unknown, mode: Int64Mode, what = 'gcra.limitall'): GCRALimitAllResult<I> {
  if (!Array.isArray(reply) || reply.length < 3) {
    throw new HotKVError(`${what}: unexpected reply ${JSON.stringify(reply, jsonSafe)}`);
  }
  const denied = flag(reply[0], what);
  const retryAfterMs = toInt<I>(reply[1], mode, what);
  return {
    denied,
    retryAfterMs,
    limits: reply.slice(2).map((r) => parseGCRA<I>(r, mode, what)),
    tooLarge: denied && isMinusOne(retryAfterMs),
  };
}

export function parseThrottle<I extends Int>(reply: unknown, mode: Int64Mode, what = 'cl.throttle'): ThrottleResult<I> {
  const r = fiveInts(reply, what);
  const limited = flag(r[0], what);
  const retryAfterSec = toInt<I>(r[3], mode, what);
  return {
    limited,
    limit: toInt<I>(r[1], mode, what),
    remaining: toInt<I>(r[2], mode, what),
    retryAfterSec,
    resetAfterSec: toInt<I>(r[4], mode, what),
    tooLarge: limited && isMinusOne(retryAfterSec),
  };
}

export function parseRateLimit<I extends Int>(reply: unknown, mode: Int64Mode, what = 'ratelimit'): RateLimitResult<I> {
  // Five integers, or six from a concurrency limiter's CHECK (the lease id).
  if (!Array.isArray(reply) || (reply.length !== 5 && reply.length !== 6)) {
    throw new HotKVError(`${what}: unexpected reply ${JSON.stringify(reply, jsonSafe)}`);
  }
  const r = reply;
  const allowed = flag(r[0], what);
  const limit = toInt<I>(r[3], mode, what);
  const retryAfterMs = toInt<I>(r[2], mode, what);
  return {
    allowed,
    remaining: toInt<I>(r[1], mode, what),
    retryAfterMs,
    limit,
    current: toInt<I>(r[4], mode, what),
    leaseId: toLeaseId<I>(r.length === 6 ? r[5] : '0', mode, what),
    unknownLimiter: isZero(limit),
    tooLarge: !allowed && isMinusOne(retryAfterMs),
  };
}

/** A RESP reply item that may be a string or a Buffer (node-redis maps either way). */
function text(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
  return undefined;
}

/**
 * The configured rate: a RESP3 double (a number, or its text under a DOUBLE: String type
 * mapping) or, in RESP2, a bulk string holding the shortest decimal that reads back as the
 * server's double; Number() of either gives that same double.
 */
function rate(v: unknown, what: string): number {
  const n = typeof v === 'number' ? v : Number(text(v));
  if (!Number.isFinite(n)) throw new HotKVError(`${what}: rate is not a number: ${String(v)}`);
  return n;
}

export function parseStats<I extends Int>(reply: unknown, mode: Int64Mode, what = 'ratelimit.stats'): RateLimitStats<I> {
  // RESP2 sends a flat array of names and values; RESP3 a map, which node-redis gives as an
  // object, a Map or (MAP: Array type mapping) a flat array, depending on the type mapping.
  let pairs: Array<[unknown, unknown]>;
  if (Array.isArray(reply)) {
    if (reply.length % 2 !== 0) throw new HotKVError(`${what}: unexpected reply`);
    pairs = [];
    for (let i = 0; i < reply.length; i += 2) pairs.push([reply[i], reply[i + 1]]);
  } else if (reply instanceof Map) {
    pairs = [...reply.entries()];
  } else if (reply && typeof reply === 'object') {
    pairs = Object.entries(reply);
  } else {
    throw new HotKVError(`${what}: unexpected reply ${String(reply)}`);
  }
  // The shadow fields came later and trail the reply: an older server leaves the defaults.
  const out: Partial<RateLimitStats<I>> = { shadow: false, totalShadowDenied: toInt<I>('0', mode, what) };
  let seen = 0;
  for (const [k, v] of pairs) {
    // Fields this client does not know are ignored, so a newer server may add some.
    switch (text(k)) {
      case 'name': out.name = text(v); seen++; break;
      case 'algo': out.algo = text(v) as Algorithm; seen++; break;
      case 'limit': out.limit = toInt<I>(v, mode, what); seen++; break;
      case 'window_ms': out.windowMs = toInt<I>(v, mode, what); seen++; break;
      case 'unique_keys': out.uniqueKeys = toInt<I>(v, mode, what); seen++; break;
      case 'total_allowed': out.totalAllowed = toInt<I>(v, mode, what); seen++; break;
      case 'total_denied': out.totalDenied = toInt<I>(v, mode, what); seen++; break;
      case 'refill_per_sec': out.refillPerSec = rate(v, what); break;
      case 'drain_per_sec': out.drainPerSec = rate(v, what); break;
      case 'shadow': out.shadow = flag(v, what); break;
      case 'total_shadow_denied': out.totalShadowDenied = toInt<I>(v, mode, what); break;
    }
  }
  if (seen !== 7 || out.name === undefined || out.algo === undefined) {
    throw new HotKVError(`${what}: unexpected reply (missing fields)`);
  }
  return out as RateLimitStats<I>;
}

/** RATELIMIT.LIST: names, sorted bytewise by the server. */
export function parseNames(reply: unknown, what = 'ratelimit.list'): string[] {
  if (!Array.isArray(reply)) throw new HotKVError(`${what}: unexpected reply`);
  return reply.map((v) => {
    const s = text(v);
    if (s === undefined) throw new HotKVError(`${what}: unexpected reply`);
    return s;
  });
}

/** A 1/0 integer reply as a boolean (RATELIMIT.RELEASE). */
export function parseBool(reply: unknown, what: string): boolean {
  return flag(reply, what);
}

export function parseOK(reply: unknown, what: string): 'OK' {
  if (text(reply) !== 'OK') throw new HotKVError(`${what}: unexpected reply ${String(reply)}`);
  return 'OK';
}
