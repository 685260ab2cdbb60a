/**
 * The framework-independent part of the HTTP middlewares: which commands to send for a request,
 * the verdict, and the response headers. It follows the Go client's httplimit package (and so
 * section 12 of the HotKV rate-limiting specification): Retry-After on refusals and the IETF
 * RateLimit-Policy / RateLimit header fields (draft-ietf-httpapi-ratelimit-headers) on every
 * limited response, optional legacy X-RateLimit-* headers.
 *
 * Several limits: with one limit the middleware sends one atomic command. With several it first
 * asks every limit, concurrently (node-redis pipelines commands issued together), whether the
 * request would pass without counting it (GCRA.PEEK with the request's cost, RATELIMIT.PEEK).
 * If any would refuse, nothing is counted anywhere; the named limiters that refuse are then
 * asked with RATELIMIT.CHECK, which (refusing) changes nothing but records the refusal in their
 * total_denied and gives the exact wait for this cost. If all would pass, the request is counted
 * on every limit. The steps are not one atomic operation: no limit ever admits more than it
 * allows, but a request losing a race between the steps can be counted by the limits that
 * allowed it while another refuses it.
 *
 * Concurrency limiters: a limiter(...) created with algo "concurrency" bounds the requests in
 * flight rather than a rate. Its check acquires a lease, which the middlewares release
 * (RATELIMIT.RELEASE) when the response has finished or the connection closed, whether the
 * handler succeeded, failed or the request was refused by another limit. A lease the middleware
 * could not release (the server unreachable then, the process killed) frees itself when the
 * limiter's window has passed since it was acquired, so choose a window longer than the slowest
 * request. Release errors go to onError.
 */
import { HotKVError } from '../errors.js';
import { formatRate, type Int } from '../int64.js';
import type { GCRAResult, RateLimitResult, RateLimitStats } from '../results.js';

/** What the middlewares need from a client: HotKV, HotKVCluster or HotKV.wrap(...). */
export interface LimiterClient {
  gcraLimit(key: string, periodMs: number, burst: number, count?: number): Promise<GCRAResult<Int>>;
  gcraPeek(key: string, periodMs: number, burst: number, count?: number): Promise<GCRAResult<Int>>;
  rateLimitCheck(name: string, key: string, cost?: number): Promise<RateLimitResult<Int>>;
  rateLimitPeek(name: string, key: string): Promise<RateLimitResult<Int>>;
  rateLimitStats(name: string): Promise<RateLimitStats<Int>>;
  rateLimitRelease(name: string, key: string, leaseId: string | bigint): Promise<boolean>;
}

/** A concurrency lease a request's RATELIMIT.CHECK acquired. */
interface Lease {
  limiter: string;
  key: string;
  id: string | bigint;
}

/** Picks the identity a request is limited under (client IP, API key, user id). */
export type KeyFn<Req> = (req: Req) => string | Promise<string>;

/** A limit every request must pass. Build it with {@link gcra} or {@link limiter}. */
export interface Limit<Req = any> {
  readonly kind: 'gcra' | 'limiter';
  /** The policy name in the RateLimit headers (printable ASCII, unique). */
  readonly policy: string;
  /** GCRA: state key prefix ("rl:<name>:" by default). */
  readonly prefix?: string;
  readonly periodMs?: number;
  readonly burst?: number;
  /** Named limiter: its RATELIMIT name. */
  readonly limiter?: string;
  /** This limit's own key function (instead of the middleware's). */
  readonly key?: KeyFn<Req>;
}

/**
 * A GCRA limit of burst units per periodMs with smooth refill (GCRA.LIMIT): nothing to create
 * on the server; state lives in "rl:<name>:<request key>" (or prefix + key). name is also the
 * policy name.
 */
export function gcra<Req = any>(name: string, periodMs: number, burst: number,
  opts: { key?: KeyFn<Req>; prefix?: string; policy?: string } = {}): Limit<Req> {
  return { kind: 'gcra', policy: opts.policy ?? name, prefix: opts.prefix ?? `rl:${name}:`, periodMs, burst, key: opts.key };
}

/** A named RATELIMIT limiter, created beforehand (rateLimitCreate, at start-up). Its name is
 * the policy name unless opts.policy says otherwise. */
export function limiter<Req = any>(name: string, opts: { key?: KeyFn<Req>; policy?: string } = {}): Limit<Req> {
  return { kind: 'limiter', policy: opts.policy ?? name, limiter: name, key: opts.key };
}

/** Options shared by the Express and Fastify middlewares. */
export interface CoreOptions<Req> {
  /** The HotKV client (number int64 mode is expected; bigints are converted). */
  client: LimiterClient;
  /** All must allow a request. */
  limits: Array<Limit<Req>>;
  /** The request's identity for limits without their own key. Default: the client IP as the
   * framework reports it (Express req.ip, Fastify request.ip: they honour the framework's
   * trust-proxy setting and otherwise use the peer address, ignoring X-Forwarded-For). */
  key?: KeyFn<Req>;
  /** Units a request uses (default 1); 0 or less exempts it: no check, no headers. */
  cost?: (req: Req) => number;
  /** When the server cannot be asked (unreachable, timeout, error reply, unknown limiter):
   * true lets requests through without headers; false (default) answers 503. */
  failOpen?: boolean;
  /** Adds X-RateLimit-Limit/-Remaining/-Reset of the deciding limit. */
  legacyHeaders?: boolean;
  /** Observes every server error (logging, metrics), in both failure modes. */
  onError?: (err: Error, req: Req) => void;
  /** How long a named limiter's settings (for RateLimit-Policy's w) are cached; default 60 s. */
  policyTtlMs?: number;
}

/** One limit's part in a decision, in header units (seconds). */
export interface LimitResult {
  policy: string;
  allowed: boolean;
  /** The cost exceeds this limit's capacity: no wait helps. */
  tooLarge: boolean;
  /** q: the GCRA burst or the limiter's limit. */
  quota: number;
  /** w in seconds (>= 1); 0 when unknown (the limiter's settings could not be read). */
  window: number;
  /** r: units left after the request when it was counted, before it when it was not. */
  remaining: number;
  /** t in seconds, or -1 when omitted (a named limiter that allows: no reset time). */
  reset: number;
  /** Wait in whole seconds (rounded up) when this limit refuses; 0 otherwise. */
  retryAfter: number;
}

/** The verdict on a request. */
export interface Decision {
  allowed: boolean;
  /** Retry-After: the longest wait among refusing limits; 0 when allowed or only too-large. */
  retryAfter: number;
  tooLarge: boolean;
  /** One per limit, in order. */
  results: LimitResult[];
}

/** Reported (as the cause of a failure) when a named limiter does not exist: the server answers
 * all zeros, which would refuse everything, so it is handled as the configuration error it is. */
export class UnknownLimiterError extends HotKVError {
  constructor(readonly limiter: string) {
    super(`limiter ${JSON.stringify(limiter)} does not exist`);
    this.name = 'UnknownLimiterError';
  }
}

interface Outcome {
  gcra?: GCRAResult<Int>;
  rl?: RateLimitResult<Int>;
  charged: boolean;
}

const num = (v: Int): number => Number(v);

/** ceil(ms / 1000) for waits and resets (spec 12). */
export function ceilSec(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000);
}

/** ceil(limit / rate) exactly, reading the rate as its shortest decimal (so 20 / 5 is 4 and
 * 10 / 2.5 is 4, where float division could land a hair above an integer). */
export function ceilDiv(limit: number, rate: number): number {
  if (!(rate > 0) || !Number.isFinite(rate)) return 0;
  const [int, frac = ''] = formatRate(rate).split('.');
  const n = BigInt(int! + frac);
  const scaled = BigInt(limit) * 10n ** BigInt(frac.length);
  const q = scaled / n + (scaled % n === 0n ? 0n : 1n);
  return Number(q);
}

function printable(s: string): boolean {
  return s.length > 0 && /^[\x20-\x7e]+$/.test(s);
}

/** Validates options once, at construction, like the Go middleware. */
export function validate<Req>(opts: CoreOptions<Req>): void {
  if (!opts || !opts.client) throw new HotKVError('middleware: a client is required');
  if (!opts.limits || opts.limits.length === 0) throw new HotKVError('middleware: no limits');
  const seen = new Set<string>();
  for (const l of opts.limits) {
    if (!printable(l.policy)) throw new HotKVError(`middleware: policy name ${JSON.stringify(l.policy)} must be non-empty printable ASCII`);
    if (seen.has(l.policy)) throw new HotKVError(`middleware: duplicate policy name ${JSON.stringify(l.policy)}`);
    seen.add(l.policy);
    if (l.kind === 'gcra' && !(Number.isInteger(l.periodMs) && l.periodMs! >= 1 && Number.isInteger(l.burst) && l.burst! >= 1)) {
      throw new HotKVError(`middleware: GCRA limit ${JSON.stringify(l.policy)} needs an integer period of at least 1 ms and a burst of at least 1`);
    }
  }
}

/** The decision engine behind both middlewares. */
export class DecisionEngine<Req> {
  readonly #opts: CoreOptions<Req> & { key: KeyFn<Req>; policyTtlMs: number };
  readonly #policies = new Map<string, { limit: number; window: number; read: number }>();
  // The leases each decision holds, kept out of the Decision itself so that it stays a plain,
  // JSON-serialisable object (lease ids can be bigints).
  readonly #leases = new WeakMap<Decision, Lease[]>();

  constructor(opts: CoreOptions<Req>, defaultKey: KeyFn<Req>) {
    validate(opts);
    this.#opts = { ...opts, key: opts.key ?? defaultKey, policyTtlMs: opts.policyTtlMs && opts.policyTtlMs > 0 ? opts.policyTtlMs : 60000 };
  }

  get options(): Readonly<CoreOptions<Req>> { return this.#opts; }

  /** The request's cost (0 or less: exempt). */
  cost(req: Req): number {
    return this.#opts.cost ? this.#opts.cost(req) : 1;
  }

  async decide(req: Req, cost: number): Promise<Decision> {
    const limits = this.#opts.limits;
    let defKey: Promise<string> | undefined;
    const keys = await Promise.all(limits.map((l) => {
      if (l.key) return l.key(req);
      defKey ??= Promise.resolve(this.#opts.key(req));
      return defKey;
    }));
    const out: Outcome[] = limits.map(() => ({ charged: false }));
    if (limits.length > 1) {
      // Step 1: would every limit allow it? Nothing is counted.
      await this.#run(limits, keys, cost, out, () => true, false);
      if (limits.some((l, i) => this.#refuses(l, out[i]!, cost))) {
        // The refusing named limiters once more with CHECK: the exact wait for this cost, and
        // the refusal in their total_denied.
        await this.#charge(req, limits, keys, cost, out, (i) => limits[i]!.kind === 'limiter' && this.#refuses(limits[i]!, out[i]!, cost));
        if (limits.some((l, i) => this.#refuses(l, out[i]!, cost))) return this.#withLeases(await this.#decision(limits, out, cost), limits, keys, out);
      }
    }
    // Step 2 (the only step with one limit): count it on every limit not yet counted; each
    // command re-checks atomically.
    await this.#charge(req, limits, keys, cost, out, (i) => !out[i]!.charged);
    return this.#withLeases(await this.#decision(limits, out, cost), limits, keys, out);
  }

  /** Runs charging commands; when one fails, the leases the others acquired are given back
   * before the error propagates. */
  async #charge(req: Req, limits: Array<Limit<Req>>, keys: string[], cost: number, out: Outcome[], which: (i: number) => boolean): Promise<void> {
    try {
      await this.#run(limits, keys, cost, out, which, true);
    } catch (e) {
      const leases = leasesOf(limits, keys, out);
      if (leases.length > 0) await this.#release(req, leases);
      throw e;
    }
  }

  #withLeases(d: Decision, limits: Array<Limit<Req>>, keys: string[], out: Outcome[]): Decision {
    const leases = leasesOf(limits, keys, out);
    if (leases.length > 0) this.#leases.set(d, leases);
    return d;
  }

  /** Whether the decision holds concurrency leases, to be given back with release(). */
  holdsLeases(d: Decision): boolean {
    return this.#leases.has(d);
  }

  /**
   * Releases the concurrency leases a decision acquired (once: later calls do nothing). The
   * middlewares call it when the response is done; it never rejects (errors go to onError,
   * and an unreleased lease expires with the limiter's window).
   */
  async release(d: Decision, req: Req): Promise<void> {
    const leases = this.#leases.get(d);
    if (!leases) return;
    this.#leases.delete(d);
    await this.#release(req, leases);
  }

  async #release(req: Req, leases: Lease[]): Promise<void> {
    const c = this.#opts.client;
    // Issued together, so node-redis writes them as one pipeline.
    const res = await Promise.allSettled(leases.map((l) => c.rateLimitRelease(l.limiter, l.key, l.id)));
    for (const [i, r] of res.entries()) {
      if (r.status === 'rejected') {
        const err = asError(r.reason);
        err.message = `releasing a lease of ${leases[i]!.limiter}: ${err.message}`;
        this.#opts.onError?.(err, req);
      }
    }
  }

  async #run(limits: Array<Limit<Req>>, keys: string[], cost: number, out: Outcome[], which: (i: number) => boolean, charge: boolean): Promise<void> {
    const c = this.#opts.client;
    // Issued together, so node-redis writes them as one pipeline. Every reply is stored before
    // the first error is thrown, so that the caller can give back the leases of the checks that
    // succeeded.
    const settled = await Promise.allSettled(limits.map(async (l, i) => {
      if (!which(i)) return;
      if (l.kind === 'gcra') {
        const key = l.prefix! + keys[i]!;
        const g = charge ? await c.gcraLimit(key, l.periodMs!, l.burst!, cost) : await c.gcraPeek(key, l.periodMs!, l.burst!, cost);
        out[i] = { gcra: g, charged: charge };
      } else {
        const r = charge ? await c.rateLimitCheck(l.limiter!, keys[i]!, cost) : await c.rateLimitPeek(l.limiter!, keys[i]!);
        if (r.unknownLimiter) throw new UnknownLimiterError(l.limiter!);
        out[i] = { rl: r, charged: charge };
      }
    }));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** A RATELIMIT.PEEK answers for cost 1; its remaining (limit - current) decides any cost
   * exactly, since a check passes precisely when cost <= limit - current. */
  #refuses(l: Limit<Req>, o: Outcome, cost: number): boolean {
    if (l.kind === 'gcra') return o.gcra!.denied;
    if (o.charged) return !o.rl!.allowed;
    return cost > num(o.rl!.remaining);
  }

  async #decision(limits: Array<Limit<Req>>, out: Outcome[], cost: number): Promise<Decision> {
    const d: Decision = { allowed: true, retryAfter: 0, tooLarge: false, results: [] };
    for (const [i, l] of limits.entries()) {
      const o = out[i]!;
      const res: LimitResult = { policy: l.policy, allowed: !this.#refuses(l, o, cost), tooLarge: false, quota: 0, window: 0, remaining: 0, reset: -1, retryAfter: 0 };
      if (l.kind === 'gcra') {
        const g = o.gcra!;
        res.quota = l.burst!;
        res.window = Math.max(1, ceilSec(l.periodMs!));
        res.remaining = num(g.remaining);
        // A GCRA.PEEK reports the state as if the request had been counted; it was not.
        if (res.allowed && !o.charged) res.remaining += cost;
        res.reset = ceilSec(num(g.resetAfterMs));
        if (g.denied) {
          if (g.tooLarge) {
            res.tooLarge = true;
          } else {
            res.retryAfter = ceilSec(num(g.retryAfterMs));
            res.reset = res.retryAfter;
          }
        }
      } else {
        const r = o.rl!;
        res.quota = num(r.limit);
        res.window = await this.#limiterWindow(l.limiter!, res.quota);
        res.remaining = num(r.remaining);
        if (!res.allowed) {
          if (cost > res.quota) {
            res.tooLarge = true;
          } else {
            // Refusals of named limiters always come from a CHECK (a refusing peek is
            // rechecked), so this is the exact wait for the cost.
            res.retryAfter = Math.max(1, ceilSec(num(r.retryAfterMs)));
            res.reset = res.retryAfter;
          }
        }
      }
      if (!res.allowed) {
        d.allowed = false;
        d.tooLarge ||= res.tooLarge;
        d.retryAfter = Math.max(d.retryAfter, res.retryAfter);
      }
      d.results.push(res);
    }
    return d;
  }

  /** RateLimit-Policy's w for a named limiter: a sliding window's window in seconds, a
   * bucket's time to refill the whole limit, ceil(limit / rate). Cached for policyTtlMs (also
   * failures, as "unknown", so a server refusing STATS costs one round trip per TTL). */
  async #limiterWindow(name: string, limit: number): Promise<number> {
    const now = Date.now();
    const e = this.#policies.get(name);
    if (e && e.limit === limit && now - e.read < this.#opts.policyTtlMs) return e.window;
    let window = 0;
    try {
      const st = await this.#opts.client.rateLimitStats(name);
      const rate = st.refillPerSec ?? st.drainPerSec ?? 0;
      window = Math.max(1, rate > 0 ? ceilDiv(num(st.limit), rate) : ceilSec(num(st.windowMs)));
    } catch {
      window = 0;
    }
    this.#policies.set(name, { limit, window, read: now });
    return window;
  }
}

function quote(s: string): string {
  return '"' + s.replace(/["\\]/g, (c) => '\\' + c) + '"';
}

/** The response headers for a decision (Retry-After only on refusals that a wait can cure). */
export function headersFor(d: Decision, legacy: boolean): Record<string, string> {
  const h: Record<string, string> = {};
  h['RateLimit-Policy'] = d.results.map((r) => `${quote(r.policy)};q=${r.quota}${r.window > 0 ? `;w=${r.window}` : ''}`).join(', ');
  h['RateLimit'] = d.results.map((r) => `${quote(r.policy)};r=${r.remaining}${r.reset >= 0 ? `;t=${r.reset}` : ''}`).join(', ');
  if (!d.allowed && d.retryAfter > 0) h['Retry-After'] = String(d.retryAfter);
  if (legacy) {
    // The deciding limit: the refusing one with the longest wait, or else the one with the
    // fewest units left.
    let pick = 0;
    d.results.forEach((r, i) => {
      const best = d.results[pick]!;
      if (d.allowed ? r.remaining < best.remaining : !r.allowed && (best.allowed || r.retryAfter > best.retryAfter)) pick = i;
    });
    const r = d.results[pick]!;
    h['X-RateLimit-Limit'] = String(r.quota);
    h['X-RateLimit-Remaining'] = String(r.remaining);
    if (r.reset >= 0) h['X-RateLimit-Reset'] = String(r.reset);
  }
  return h;
}

/** The body of the default refusal. */
export function deniedText(d: Decision): string {
  return d.retryAfter === 0 && d.tooLarge ? 'request exceeds the rate limit' : 'rate limit exceeded';
}

/** Normalises an IP for use as a key: an IPv4-mapped IPv6 address becomes IPv4, so one client
 * does not get two budgets. */
export function normalizeIP(ip: string | undefined): string {
  if (!ip) return '';
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  return m ? m[1]! : ip;
}

/** The concurrency leases the charging checks in out acquired. */
function leasesOf<Req>(limits: Array<Limit<Req>>, keys: string[], out: Outcome[]): Lease[] {
  const leases: Lease[] = [];
  for (const [i, o] of out.entries()) {
    const id = o.rl?.leaseId;
    if (o.charged && id !== undefined && String(id) !== '0') leases.push({ limiter: limits[i]!.limiter!, key: keys[i]!, id });
  }
  return leases;
}

/** Calls fn once, when the first of the response's end events fires. */
export function onResponseDone(emitter: { once(event: string, fn: () => void): unknown }, fn: () => void): void {
  let done = false;
  const once = () => {
    if (!done) {
      done = true;
      fn();
    }
  };
  // 'finish': the response was handed to the OS; 'close': it ended or the connection was lost
  // first (the client went away). Either ends the request's work as far as the limit goes.
  emitter.once('finish', once);
  emitter.once('close', once);
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

export { asError };
