import { HotKVError } from './errors.js';

/**
 * How the typed results represent the server's 64-bit integers.
 *
 * - `"number"` (default): JavaScript numbers. Every value a realistic limit produces is far below
 *   2^53 (a burst of 9 * 10^15 would be needed to reach it), and numbers are what applications
 *   compare and print. A reply outside Number.MAX_SAFE_INTEGER cannot be represented exactly,
 *   so it is refused with a HotKVError instead of being silently rounded: a rate limiter that
 *   rounds its limit is wrong without telling anyone.
 * - `"bigint"`: every integer field is a bigint, exact for the whole signed 64-bit range
 *   (bursts and limits up to 2^63-1).
 */
export type Int64Mode = 'number' | 'bigint';

/** The integer type of results for a mode. */
export type IntOf<M extends Int64Mode> = M extends 'bigint' ? bigint : number;

/** An integer result field: number or bigint, as chosen with the int64 option. */
export type Int = number | bigint;

/** An integer argument: a number (must be an integer to be accepted by the server), a bigint,
 * or a decimal string, sent as they are so that the server's own validation applies. */
export type IntArg = number | bigint | string;

const MIN = BigInt(Number.MIN_SAFE_INTEGER);
const MAX = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Converts one integer of a reply. HotKV's own client reads integers as decimal strings (a
 * NUMBER: String type mapping), so nothing is lost before this point; a client built without
 * that mapping (the module used on your own node-redis client) delivers numbers, which are
 * exact only up to 2^53 and are checked for that.
 */
export function toInt<I extends Int>(v: unknown, mode: Int64Mode, what: string): I {
  let big: bigint;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) {
    big = BigInt(v);
  } else if (typeof v === 'number' && Number.isInteger(v)) {
    if (!Number.isSafeInteger(v)) {
      throw new HotKVError(`${what}: integer ${v} arrived as an inexact number; read replies with a NUMBER: String type mapping`);
    }
    return (mode === 'bigint' ? BigInt(v) : v) as I;
  } else if (typeof v === 'bigint') {
    big = v;
  } else {
    throw new HotKVError(`${what}: expected an integer, got ${JSON.stringify(String(v))}`);
  }
  if (mode === 'bigint') return big as I;
  if (big < MIN || big > MAX) {
    throw new HotKVError(`${what}: ${big} is outside JavaScript's safe integer range; create the client with int64: "bigint"`);
  }
  return Number(big) as I;
}

/**
 * A concurrency lease id's type for an int64 mode. Lease ids are opaque 64-bit integers of about
 * 1.7e18, above 2^53, so a JavaScript number cannot hold them exactly (and a rounded id would
 * make RATELIMIT.RELEASE miss its lease). They are therefore always exact: a bigint in "bigint"
 * mode and, in "number" mode, the id's decimal string (exact, JSON-safe, and what
 * rateLimitRelease sends as it is). "No lease" is 0n or "0".
 */
export type LeaseIdOf<I extends Int> = I extends bigint ? bigint : string;

/** A lease id as rateLimitRelease takes it: the leaseId of a result (string or bigint), or a
 * number, accepted only while it is exact (a safe integer). */
export type LeaseIdArg = string | bigint | number;

/** Reads a lease id (CHECK's sixth field) exactly, in the mode's representation. */
export function toLeaseId<I extends Int>(v: unknown, mode: Int64Mode, what: string): LeaseIdOf<I> {
  const big = toInt<bigint>(v, 'bigint', what);
  return (mode === 'bigint' ? big : big.toString()) as LeaseIdOf<I>;
}

/** Writes a lease id argument; refuses a number that lost precision rather than release the
 * wrong lease (or none) with a rounded id. */
export function leaseArg(v: LeaseIdArg): string {
  if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v)) {
    throw new HotKVError(`lease id ${v} is not exact as a JavaScript number: pass the result's leaseId (a string or bigint) as it is`);
  }
  return intArg(v);
}

/** Writes an integer argument in decimal. */
export function intArg(v: IntArg): string {
  return typeof v === 'string' ? v : typeof v === 'bigint' ? v.toString() : String(v);
}

/**
 * Writes a REFILL/DRAIN rate in the server's rate syntax: plain decimal digits, never an
 * exponent. JavaScript writes 0.00000001 as "1e-8" and 1e21 as "1e+21", which the server
 * rejects, so numbers are expanded from their shortest round-trip form (so 0.5 stays "0.5").
 * Strings are sent as they are (for rates that are exact decimals, "0.1" say). Negative, NaN
 * and infinite values are sent as written and rejected by the server.
 */
export function formatRate(r: number | string): string {
  if (typeof r === 'string') return r;
  const s = String(r);
  const m = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!m) return s;
  const [, sign, int, frac = '', expText] = m;
  const digits = int! + frac;
  const point = int!.length + Number(expText); // position of the decimal point in digits
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return sign + digits + '0'.repeat(point - digits.length);
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
