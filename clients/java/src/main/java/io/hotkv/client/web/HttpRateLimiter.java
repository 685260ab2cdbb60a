package io.hotkv.client.web;

import io.hotkv.client.GcraResult;
import io.hotkv.client.HotKV;
import io.hotkv.client.HotKVCommands;
import io.hotkv.client.RateLimitResult;
import io.hotkv.client.RateLimitStats;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.IntPredicate;
import java.util.function.ToLongFunction;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Rate limits HTTP requests with HotKV: the engine behind {@link RateLimitFilter} (servlet) and
 * {@link RateLimitInterceptor} (Spring MVC), with the same behaviour as the Go client's {@code
 * httplimit} middleware.
 *
 * <p>Each request is checked against one or several {@link Limit}s; it passes only if every limit
 * allows it. Refused requests get 429 Too Many Requests with {@code Retry-After}, and every
 * limited response carries the IETF {@code RateLimit-Policy} and {@code RateLimit} header fields
 * (draft-ietf-httpapi-ratelimit-headers) mapped from the server's replies as section 12 of the
 * HotKV rate-limiting specification says. Legacy {@code X-RateLimit-*} headers are optional.
 *
 * <p><b>Several limits.</b> With one limit the request costs one atomic command. With several,
 * the limiter first asks every limit in one pipeline whether the request would pass, counting
 * nothing ({@code GCRA.PEEK} with the cost, {@code RATELIMIT.PEEK}); if any would refuse, nothing
 * is counted anywhere. Named limiters that refuse are then asked with {@code RATELIMIT.CHECK},
 * which (refusing) changes nothing but records the refusal in their {@code total_denied} and
 * gives the exact wait for the request's cost. If all would pass, the request is counted on every
 * limit in a second pipeline. The steps are not one atomic operation: no limit ever admits more
 * than it allows (each charging command re-checks atomically), but a request that loses a race
 * between the steps can be counted by the limits that allowed it while another refuses it.
 *
 * <p><b>Concurrency limiters.</b> A {@link Limit#limiter} created with {@link
 * io.hotkv.client.Algorithm#CONCURRENCY} bounds the requests in flight rather than a rate: its
 * check acquires a lease, which must be given back when the request is done. {@link #handle}
 * keeps the leases on the request and gives them back itself when it refuses the request;
 * for a request it lets through, the caller calls {@link #release(HttpServletRequest)} when the
 * application has answered: {@link RateLimitFilter} does after the rest of the chain (or when an
 * async request completes), {@link RateLimitInterceptor} in {@code afterCompletion}, both also
 * when the application threw. A lease that could not be released (the server unreachable at
 * that moment, the process killed) frees itself when the limiter's window has passed since it
 * was acquired, so choose a window longer than the slowest request. Release errors go to the
 * {@code onError} observer.
 *
 * <p>Build one with {@link #builder(HotKV)}; it is thread-safe and meant to be shared.
 */
public final class HttpRateLimiter {
  /** Writes the response to a refused request; headers and Retry-After are already set. */
  @FunctionalInterface
  public interface DeniedHandler {
    /** Writes the refusal. */
    void handle(HttpServletRequest request, HttpServletResponse response, Decision decision)
        throws IOException;
  }

  /** Writes the response when the server cannot be asked and the limiter fails closed. */
  @FunctionalInterface
  public interface ErrorHandler {
    /** Writes the failure response. */
    void handle(HttpServletRequest request, HttpServletResponse response, RuntimeException error)
        throws IOException;
  }

  private final HotKV client;
  private final List<Limit> limits;
  private final KeyResolver defaultKey;
  private final ToLongFunction<HttpServletRequest> cost;
  private final boolean failOpen;
  private final boolean legacyHeaders;
  private final DeniedHandler deniedHandler;
  private final ErrorHandler errorHandler;
  private final BiConsumer<HttpServletRequest, RuntimeException> onError;
  private final long policyTtlNanos;
  private final Map<String, PolicyEntry> policies = new ConcurrentHashMap<>();

  private record PolicyEntry(long limit, long window, long readNanos) {}

  /** A concurrency lease a request's RATELIMIT.CHECK acquired. */
  private record Lease(String limiter, String key, long id) {}

  /** The request attribute holding the leases to release when the request is done. */
  private static final String LEASES = HttpRateLimiter.class.getName() + ".leases";

  private HttpRateLimiter(Builder b) {
    this.client = b.client;
    this.limits = List.copyOf(b.limits);
    this.defaultKey = b.key != null ? b.key : KeyResolver.byIp();
    this.cost = b.cost;
    this.failOpen = b.failOpen;
    this.legacyHeaders = b.legacyHeaders;
    this.deniedHandler = b.deniedHandler;
    this.errorHandler = b.errorHandler;
    this.onError = b.onError;
    this.policyTtlNanos = b.policyTtl.toNanos();
  }

  /** Starts configuring a rate limiter that uses {@code client}. */
  public static Builder builder(HotKV client) {
    return new Builder(client);
  }

  /** Configures an {@link HttpRateLimiter}; only one limit is required. */
  public static final class Builder {
    private final HotKV client;
    private final List<Limit> limits = new ArrayList<>();
    private KeyResolver key;
    private ToLongFunction<HttpServletRequest> cost;
    private boolean failOpen;
    private boolean legacyHeaders;
    private DeniedHandler deniedHandler;
    private ErrorHandler errorHandler;
    private BiConsumer<HttpServletRequest, RuntimeException> onError;
    private Duration policyTtl = Duration.ofMinutes(1);

    private Builder(HotKV client) {
      this.client = Objects.requireNonNull(client, "client");
    }

    /** Adds a limit; every request must pass all of them. Policy names must be unique. */
    public Builder limit(Limit limit) {
      limits.add(Objects.requireNonNull(limit));
      return this;
    }

    /**
     * The request's identity for limits without their own key. Default: {@link
     * KeyResolver#byIp(String...)} with no trusted proxies (the peer address).
     */
    public Builder key(KeyResolver key) {
      this.key = key;
      return this;
    }

    /**
     * The units a request uses (GCRA count, RATELIMIT COST); default 1. A cost of 0 or less
     * exempts the request: it passes unchecked and gets no headers.
     */
    public Builder cost(ToLongFunction<HttpServletRequest> cost) {
      this.cost = cost;
      return this;
    }

    /**
     * Lets requests through, without rate-limit headers, when the server cannot be asked
     * (unreachable, timeouts, errors, unknown limiter). The default, fail-closed, answers them
     * with the error handler (503 Service Unavailable).
     */
    public Builder failOpen(boolean failOpen) {
      this.failOpen = failOpen;
      return this;
    }

    /**
     * Adds {@code X-RateLimit-Limit}, {@code -Remaining} and {@code -Reset}, carrying q, r and t
     * of the deciding limit: the refusing limit with the longest wait, or else the limit with the
     * fewest units left.
     */
    public Builder legacyHeaders(boolean legacyHeaders) {
      this.legacyHeaders = legacyHeaders;
      return this;
    }

    /** Writes refusals. Default: 429 with a short text body. */
    public Builder deniedHandler(DeniedHandler handler) {
      this.deniedHandler = handler;
      return this;
    }

    /** Writes the fail-closed response. Default: 503 with a short text body. */
    public Builder errorHandler(ErrorHandler handler) {
      this.errorHandler = handler;
      return this;
    }

    /** Observes every server error (for logging or metrics), in both failure modes. */
    public Builder onError(BiConsumer<HttpServletRequest, RuntimeException> onError) {
      this.onError = onError;
      return this;
    }

    /**
     * How long a named limiter's settings (for RateLimit-Policy's w) are cached; they are also
     * reread whenever a reply shows another limit. Default: one minute.
     */
    public Builder policyTtl(Duration ttl) {
      this.policyTtl = ttl.isNegative() || ttl.isZero() ? Duration.ofMinutes(1) : ttl;
      return this;
    }

    /**
     * Builds the rate limiter, reporting configuration errors now rather than on every request:
     * no limits, an empty, non-ASCII or duplicate policy name, a GCRA limit with a period under 1
     * ms or a burst under 1.
     *
     * @throws IllegalArgumentException for a configuration error
     */
    public HttpRateLimiter build() {
      if (limits.isEmpty()) {
        throw new IllegalArgumentException("hotkv: no limits");
      }
      Set<String> seen = new HashSet<>();
      for (Limit l : limits) {
        if (l.policy == null || l.policy.isEmpty() || !printableAscii(l.policy)) {
          throw new IllegalArgumentException(
              "hotkv: policy name \"" + l.policy + "\" must be non-empty printable ASCII");
        }
        if (!seen.add(l.policy)) {
          throw new IllegalArgumentException("hotkv: duplicate policy name \"" + l.policy + "\"");
        }
        if (l.kind == Limit.Kind.GCRA && (l.periodMillis < 1 || l.burst < 1)) {
          throw new IllegalArgumentException(
              "hotkv: GCRA limit \"" + l.policy
                  + "\" needs a period of at least 1ms and a burst of at least 1");
        }
      }
      return new HttpRateLimiter(this);
    }
  }

  private static boolean printableAscii(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < 0x20 || c > 0x7e) {
        return false;
      }
    }
    return true;
  }

  /**
   * Checks the request and, unless it may proceed, writes the response (429, or the fail-closed
   * error). Returns true when the application should handle the request. On a decision it sets
   * the rate-limit headers and stores the {@link Decision} as a request attribute.
   */
  public boolean handle(HttpServletRequest request, HttpServletResponse response)
      throws IOException {
    long c = cost == null ? 1 : cost.applyAsLong(request);
    if (c <= 0) {
      return true;
    }
    Decision d;
    try {
      d = decide(request, c);
    } catch (JedisException | UnknownLimiterException e) {
      if (onError != null) {
        onError.accept(request, e);
      }
      if (failOpen) {
        return true;
      }
      if (errorHandler != null) {
        errorHandler.handle(request, response, e);
      } else {
        writeText(response, 503, "rate limiter unavailable");
      }
      return false;
    }
    setHeaders(response, d);
    request.setAttribute(Decision.ATTRIBUTE, d);
    if (d.allowed()) {
      return true;
    }
    // A refused request can still hold a lease (a named limiter admitted it while another limit
    // refused it): given back once the refusal is written.
    try {
      if (d.retryAfter() > 0) {
        response.setHeader("Retry-After", Long.toString(d.retryAfter()));
      }
      if (deniedHandler != null) {
        deniedHandler.handle(request, response, d);
      } else if (d.retryAfter() == 0 && d.tooLarge()) {
        writeText(response, 429, "request exceeds the rate limit");
      } else {
        writeText(response, 429, "rate limit exceeded");
      }
    } finally {
      release(request);
    }
    return false;
  }

  /**
   * Gives back the concurrency leases {@link #handle} or {@link #decide} acquired for this
   * request ({@code RATELIMIT.RELEASE}, in one pipeline when there are several). Call it when the
   * application is done with a request {@code handle} let through; the filter and the interceptor
   * do. It does nothing when the request holds no lease, and nothing the second time. It never
   * throws: errors go to the {@code onError} observer, and an unreleased lease expires with its
   * limiter's window.
   */
  public void release(HttpServletRequest request) {
    if (!(request.getAttribute(LEASES) instanceof List<?> held)) {
      return;
    }
    request.removeAttribute(LEASES);
    List<Lease> leases = new ArrayList<>();
    for (Object o : held) {
      leases.add((Lease) o);
    }
    release(request, leases);
  }

  private void release(HttpServletRequest request, List<Lease> leases) {
    if (leases.isEmpty()) {
      return;
    }
    try {
      if (leases.size() == 1) {
        Lease l = leases.get(0);
        client.jedis().executeCommand(HotKVCommands.rateLimitRelease(l.limiter(), l.key(), l.id()));
        return;
      }
      List<Response<Boolean>> rs = new ArrayList<>();
      try (AbstractPipeline p = client.jedis().pipelined()) {
        for (Lease l : leases) {
          rs.add(p.executeCommand(HotKVCommands.rateLimitRelease(l.limiter(), l.key(), l.id())));
        }
        p.sync();
      }
      for (Response<Boolean> r : rs) {
        try {
          r.get();
        } catch (JedisException e) {
          observe(request, e);
        }
      }
    } catch (JedisException e) {
      observe(request, e);
    }
  }

  private void observe(HttpServletRequest request, RuntimeException e) {
    if (onError != null) {
      onError.accept(request, e);
    }
  }

  /** The concurrency leases the charging checks in out acquired. */
  private List<Lease> leasesOf(String[] keys, Outcome[] out) {
    List<Lease> leases = new ArrayList<>();
    for (int i = 0; i < out.length; i++) {
      Outcome o = out[i];
      if (o != null && o.charged() && o.rl() != null && o.rl().leaseId() != 0) {
        leases.add(new Lease(limits.get(i).limiter, keys[i], o.rl().leaseId()));
      }
    }
    return leases;
  }

  /**
   * Runs charging commands; when one fails, the leases the others acquired are given back before
   * the error propagates.
   */
  private void charge(HttpServletRequest request, String[] keys, long cost, Outcome[] out, IntPredicate which) {
    try {
      run(keys, cost, out, which, true);
    } catch (RuntimeException e) {
      release(request, leasesOf(keys, out));
      throw e;
    }
  }

  /** The decision, with the leases it acquired kept on the request for {@link #release}. */
  private Decision withLeases(HttpServletRequest request, String[] keys, Outcome[] out, long cost) {
    Decision d = decision(out, cost);
    List<Lease> leases = leasesOf(keys, out);
    if (!leases.isEmpty()) {
      request.setAttribute(LEASES, List.copyOf(leases));
    }
    return d;
  }

  private static void writeText(HttpServletResponse response, int status, String body)
      throws IOException {
    response.setStatus(status);
    response.setContentType("text/plain;charset=utf-8");
    response.setHeader("X-Content-Type-Options", "nosniff");
    byte[] b = (body + "\n").getBytes(StandardCharsets.UTF_8);
    response.setContentLength(b.length);
    response.getOutputStream().write(b);
  }

  /** One limit's latest reply: a peek, or a charging command. */
  private record Outcome(GcraResult gcra, RateLimitResult rl, boolean charged) {}

  /**
   * Decides on a request of {@code cost} units without writing a response: the same decision
   * {@link #handle} acts on. Leases a concurrency limiter acquired are kept on the request: call
   * {@link #release(HttpServletRequest)} when the request is done.
   *
   * @throws JedisException when the server cannot be asked or answers with an error
   * @throws UnknownLimiterException when a named limiter does not exist
   */
  public Decision decide(HttpServletRequest request, long cost) {
    int n = limits.size();
    String[] keys = new String[n];
    String def = null;
    for (int i = 0; i < n; i++) {
      Limit l = limits.get(i);
      if (l.key != null) {
        keys[i] = l.key.resolve(request);
      } else {
        if (def == null) {
          def = defaultKey.resolve(request);
        }
        keys[i] = def;
      }
    }
    Outcome[] out = new Outcome[n];
    if (n > 1) {
      // Step 1: would every limit allow it? Nothing is counted.
      run(keys, cost, out, i -> true, false);
      if (anyRefuses(out, cost)) {
        // Ask the refusing named limiters once more with CHECK: the exact wait for this cost,
        // and the refusal in their total_denied. (If units were freed meanwhile the CHECK counts
        // the request there: the race the class documentation describes.)
        charge(request, keys, cost, out, i -> limits.get(i).kind == Limit.Kind.LIMITER && refuses(i, out[i], cost));
        if (anyRefuses(out, cost)) {
          return withLeases(request, keys, out, cost);
        }
      }
    }
    // Step 2 (or the only step with one limit): count the request on every limit not yet
    // counted. Each command re-checks atomically.
    charge(request, keys, cost, out, i -> out[i] == null || !out[i].charged());
    return withLeases(request, keys, out, cost);
  }

  private boolean anyRefuses(Outcome[] out, long cost) {
    for (int i = 0; i < out.length; i++) {
      if (refuses(i, out[i], cost)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether a limit's latest reply refuses a request of this cost. A RATELIMIT.PEEK answers for
   * cost 1; its remaining (limit - current) decides any cost exactly, because a check passes
   * precisely when cost &lt;= limit - current.
   */
  private boolean refuses(int i, Outcome o, long cost) {
    if (limits.get(i).kind == Limit.Kind.GCRA) {
      return o.gcra().denied();
    }
    if (o.charged()) {
      return !o.rl().allowed();
    }
    return cost > o.rl().remaining();
  }

  /**
   * Sends a peek (charge false) or a charging command (charge true) for each selected limit and
   * stores the replies in out: one command directly, several in one pipeline.
   */
  private void run(String[] keys, long cost, Outcome[] out, IntPredicate which, boolean charge) {
    List<Integer> selected = new ArrayList<>();
    for (int i = 0; i < limits.size(); i++) {
      if (which.test(i)) {
        selected.add(i);
      }
    }
    if (selected.isEmpty()) {
      return;
    }
    if (selected.size() == 1) {
      int i = selected.get(0);
      Limit l = limits.get(i);
      if (l.kind == Limit.Kind.GCRA) {
        out[i] = new Outcome(client.jedis().executeCommand(gcraCommand(l, keys[i], cost, charge)), null, charge);
      } else {
        out[i] = new Outcome(null, checkKnown(l, client.jedis().executeCommand(rlCommand(l, keys[i], cost, charge))), charge);
      }
      return;
    }
    List<Response<GcraResult>> g = new ArrayList<>();
    List<Response<RateLimitResult>> r = new ArrayList<>();
    try (AbstractPipeline p = client.jedis().pipelined()) {
      for (int i : selected) {
        Limit l = limits.get(i);
        if (l.kind == Limit.Kind.GCRA) {
          g.add(p.executeCommand(gcraCommand(l, keys[i], cost, charge)));
          r.add(null);
        } else {
          g.add(null);
          r.add(p.executeCommand(rlCommand(l, keys[i], cost, charge)));
        }
      }
      p.sync();
    }
    // Every reply is stored before the first error is thrown, so that the caller can give back
    // the concurrency leases of the checks that succeeded.
    RuntimeException first = null;
    for (int j = 0; j < selected.size(); j++) {
      int i = selected.get(j);
      Limit l = limits.get(i);
      try {
        out[i] = g.get(j) != null
            ? new Outcome(g.get(j).get(), null, charge)
            : new Outcome(null, checkKnown(l, r.get(j).get()), charge);
      } catch (JedisException | UnknownLimiterException e) {
        if (first == null) {
          first = e;
        }
      }
    }
    if (first != null) {
      throw first;
    }
  }

  private static redis.clients.jedis.CommandObject<GcraResult> gcraCommand(
      Limit l, String key, long cost, boolean charge) {
    return charge
        ? HotKVCommands.gcraLimit(l.prefix + key, l.periodMillis, l.burst, cost)
        : HotKVCommands.gcraPeek(l.prefix + key, l.periodMillis, l.burst, cost);
  }

  private static redis.clients.jedis.CommandObject<RateLimitResult> rlCommand(
      Limit l, String key, long cost, boolean charge) {
    return charge
        ? HotKVCommands.rateLimitCheck(l.limiter, key, cost)
        : HotKVCommands.rateLimitPeek(l.limiter, key);
  }

  private static RateLimitResult checkKnown(Limit l, RateLimitResult r) {
    if (r.unknownLimiter()) {
      throw new UnknownLimiterException(l.limiter);
    }
    return r;
  }

  /** A wait or reset in milliseconds as whole seconds, rounded up (spec section 12). */
  static long ceilSec(long ms) {
    if (ms <= 0) {
      return 0;
    }
    return ms / 1000 + (ms % 1000 != 0 ? 1 : 0);
  }

  private Decision decision(Outcome[] out, long cost) {
    boolean allowed = true;
    boolean tooLarge = false;
    long retryAfter = 0;
    List<LimitResult> results = new ArrayList<>(out.length);
    for (int i = 0; i < out.length; i++) {
      Limit l = limits.get(i);
      Outcome o = out[i];
      boolean ok = !refuses(i, o, cost);
      boolean big = false;
      long quota, window, remaining, reset = -1, retry = 0;
      if (l.kind == Limit.Kind.GCRA) {
        GcraResult g = o.gcra();
        quota = l.burst;
        window = Math.max(1, ceilSec(l.periodMillis));
        remaining = g.remaining();
        if (ok && !o.charged()) {
          // A GCRA.PEEK reports the state as if the request had been counted; it was not.
          remaining += cost;
        }
        reset = ceilSec(g.resetAfterMillis());
        if (g.denied()) {
          if (g.tooLarge()) {
            big = true;
          } else {
            retry = ceilSec(g.retryAfterMillis());
            reset = retry;
          }
        }
      } else {
        RateLimitResult rl = o.rl();
        quota = rl.limit();
        window = limiterWindow(l.limiter, rl.limit());
        remaining = rl.remaining();
        if (!ok) {
          if (cost > rl.limit()) {
            big = true;
          } else {
            // Named limiters' refusals always come from a CHECK (a refusing peek is rechecked),
            // so this is the exact wait for the cost, not for one unit.
            retry = Math.max(1, ceilSec(rl.retryAfterMillis()));
            reset = retry;
          }
        }
      }
      if (!ok) {
        allowed = false;
        tooLarge |= big;
        retryAfter = Math.max(retryAfter, retry);
      }
      results.add(new LimitResult(l.policy, ok, big, quota, window, remaining, reset, retry));
    }
    return new Decision(allowed, retryAfter, tooLarge, List.copyOf(results));
  }

  /**
   * RateLimit-Policy's w for a named limiter (spec section 12): the window in seconds for a
   * sliding window, and the time to refill the whole limit, ceil(limit / rate), for the bucket
   * algorithms. Settings are cached; 0 means they could not be read (w is then omitted).
   */
  private long limiterWindow(String name, long limit) {
    long now = System.nanoTime();
    PolicyEntry e = policies.get(name);
    if (e != null && e.limit() == limit && now - e.readNanos() < policyTtlNanos) {
      return e.window();
    }
    // A failure is cached too (as w unknown), so that a server refusing STATS (an ACL, say)
    // costs one extra round trip per TTL rather than one per request.
    long window = 0;
    try {
      RateLimitStats st = client.rateLimit().stats(name);
      window = st.rate() > 0 ? ceilDiv(st.limit(), st.rate()) : ceilSec(st.windowMillis());
      window = Math.max(1, window);
    } catch (JedisException ex) {
      window = 0;
    }
    policies.put(name, new PolicyEntry(limit, window, now));
    return window;
  }

  /**
   * ceil(limit / rate) in exact decimal arithmetic. The rate is the server's decimal (the
   * shortest one that reads back as the double it sent), so 20 / 5 is exactly 4 and 10 / 2.5
   * exactly 4, where floating-point division could land a hair above and round up.
   */
  static long ceilDiv(long limit, double rate) {
    if (!(rate > 0) || Double.isInfinite(rate)) {
      return 0;
    }
    BigDecimal q = BigDecimal.valueOf(limit).divide(BigDecimal.valueOf(rate), 0, RoundingMode.CEILING);
    try {
      return q.longValueExact();
    } catch (ArithmeticException e) {
      return 0;
    }
  }

  /**
   * Writes RateLimit-Policy and RateLimit (one item per limit) and, if asked, the legacy
   * X-RateLimit-* of the deciding limit. Retry-After is set by the caller on refusals.
   */
  private void setHeaders(HttpServletResponse response, Decision d) {
    List<String> policy = new ArrayList<>();
    List<String> state = new ArrayList<>();
    for (LimitResult res : d.results()) {
      String name = quote(res.policy());
      String p = name + ";q=" + res.quota();
      if (res.window() > 0) {
        p += ";w=" + res.window();
      }
      policy.add(p);
      String s = name + ";r=" + res.remaining();
      if (res.reset() >= 0) {
        s += ";t=" + res.reset();
      }
      state.add(s);
    }
    response.setHeader("RateLimit-Policy", String.join(", ", policy));
    response.setHeader("RateLimit", String.join(", ", state));
    if (!legacyHeaders) {
      return;
    }
    List<LimitResult> rs = d.results();
    int pick = 0;
    for (int i = 0; i < rs.size(); i++) {
      LimitResult res = rs.get(i);
      LimitResult best = rs.get(pick);
      if (d.allowed()) {
        if (res.remaining() < best.remaining()) {
          pick = i;
        }
      } else if (!res.allowed() && (best.allowed() || res.retryAfter() > best.retryAfter())) {
        pick = i;
      }
    }
    LimitResult res = rs.get(pick);
    response.setHeader("X-RateLimit-Limit", Long.toString(res.quota()));
    response.setHeader("X-RateLimit-Remaining", Long.toString(res.remaining()));
    if (res.reset() >= 0) {
      response.setHeader("X-RateLimit-Reset", Long.toString(res.reset()));
    }
  }

  /**
   * A structured-field string (RFC 8941): policy names were checked to be printable ASCII, so
   * only '"' and '\' need escaping.
   */
  static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        b.append('\\');
      }
      b.append(c);
    }
    return b.append('"').toString();
  }
}
