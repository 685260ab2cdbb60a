package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.AbstractTransaction;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.Response;

/**
 * Concurrency limiters ({@link Algorithm#CONCURRENCY}): the vectors C1-C8 of docs/ratelimit.md
 * ("Concurrency limits: in-flight requests") through the typed API ({@link RateLimit#create},
 * {@link RateLimitResult#leaseId()}, {@link RateLimit#release}) with their validation errors, in
 * RESP2 and RESP3, plus pipelines and transactions, the reply parser, and 20 threads acquiring
 * and releasing on a limit of 3. Each block starts from an empty server with the clock frozen
 * (DEBUG CLOCK SET), so lease ids are deterministic: {@code id(t) = (t0 + t) * 1000000}.
 */
class ConcurrencyTest extends FrozenClockFixture {
  private static final String E_SYNTAX = "ERR syntax error";
  private static final String E_BIG = "ERR invalid limit: must be at most 100000 for ALGO concurrency";
  private static final String E_LEASE = "ERR invalid lease: must be a positive integer";
  private static final String E_NOTFOUND = "ERR limiter not found";
  private static final String E_NOTCONC = "ERR limiter is not a concurrency limiter";
  private static final String E_ARITY = "ERR wrong number of arguments for 'ratelimit.release' command";

  ConcurrencyTest(TestServer server) {
    super(server);
  }

  /** The first lease id issued at t0 + t ms. */
  private static long id(long t) {
    return (Support.T0 + t) * 1_000_000L;
  }

  private static final Algorithm CONC = Algorithm.CONCURRENCY;

  @EachProtocol
  void leasesReleasesAndExpiry(RedisProtocol protocol) {
    RateLimit rl = open(protocol).rateLimit();
    // C1: leases to the limit, then a denial whose wait is the oldest lease's expiry.
    assertEquals("OK", rl.create("c", 3, 1000, CONC, null, null));
    assertEquals(r(1, 2, 0, 3, 0, id(0)), rl.check("c", "u"));
    assertEquals(r(1, 1, 0, 3, 1, id(0) + 1), rl.check("c", "u", 1L));
    at(100);
    assertEquals(r(1, 0, 0, 3, 2, id(100)), rl.check("c", "u"));
    at(200);
    assertEquals(r(0, 0, 800, 3, 3, 0), rl.check("c", "u"));
    assertEquals(r(0, 0, 800, 3, 3), rl.peek("c", "u"));
    // C2: releasing is idempotent; another key's id or one never issued releases nothing.
    assertTrue(rl.release("c", "u", id(0) + 1));
    assertFalse(rl.release("c", "u", id(0) + 1));
    assertEquals(r(1, 1, 0, 3, 2), rl.peek("c", "u"));
    assertEquals(r(1, 0, 0, 3, 2, id(200)), rl.check("c", "u"));
    at(300);
    assertFalse(rl.release("c", "v", id(0)));
    assertFalse(rl.release("c", "u", 42));
    // C3: the t0 lease expires at exactly t0+1000.
    at(999);
    assertEquals(r(0, 0, 1, 3, 3, 0), rl.check("c", "u"));
    at(1000);
    assertEquals(r(1, 0, 0, 3, 2, id(1000)), rl.check("c", "u"));
    assertFalse(rl.release("c", "u", id(0)));
    RateLimitStats st = rl.stats("c");
    assertEquals(Algorithm.CONCURRENCY, st.algorithm());
    assertEquals(3, st.limit());
    assertEquals(1000, st.windowMillis());
    assertEquals(1, st.uniqueKeys());
    assertEquals(5, st.totalAllowed());
    assertEquals(2, st.totalDenied());
    assertEquals(0, st.rate());
    at(2200);
    st = rl.stats("c");
    assertEquals(0, st.uniqueKeys());
    assertEquals(5, st.totalAllowed());
    assertEquals(2, st.totalDenied());
  }

  @EachProtocol
  void costsAndReset(RedisProtocol protocol) {
    RateLimit rl = open(protocol).rateLimit();
    // C4
    rl.create("d", 10, 1000, CONC, null, null);
    assertEquals(r(1, 6, 0, 10, 0, id(0)), rl.check("d", "u", 4L));
    at(200);
    assertEquals(r(1, 2, 0, 10, 4, id(200)), rl.check("d", "u", 4L));
    at(400);
    assertEquals(r(0, 2, 600, 10, 8, 0), rl.check("d", "u", 4L));
    RateLimitResult big = rl.check("d", "u", 11L);
    assertEquals(r(0, 2, -1, 10, 8, 0), big);
    assertTrue(big.tooLarge());
    assertTrue(rl.release("d", "u", id(0)));
    assertEquals(r(1, 2, 0, 10, 4, id(400)), rl.check("d", "u", 4L));
    assertEquals(r(1, 2, 0, 10, 8), rl.peek("d", "u"));
    // C5: RESET drops every lease; ids never repeat.
    assertTrue(rl.reset("d", "u"));
    assertFalse(rl.reset("d", "u"));
    assertEquals(r(1, 10, 0, 10, 0), rl.peek("d", "u"));
    assertEquals(r(1, 9, 0, 10, 0, id(400) + 1), rl.check("d", "u"));
    RateLimitStats st = rl.stats("d");
    assertEquals(13, st.totalAllowed());
    assertEquals(15, st.totalDenied());
  }

  @EachProtocol
  void shadowAndUpdate(RedisProtocol protocol) {
    RateLimit rl = open(protocol).rateLimit();
    // C6: a shadow denial is let through without a lease.
    assertEquals("OK", rl.create("s", 1, 1000, CONC, null, null, true));
    assertEquals(r(1, 0, 0, 1, 0, id(0)), rl.check("s", "u"));
    assertEquals(r(1, 0, 1000, 1, 1, 0), rl.check("s", "u"));
    assertEquals(r(1, 0, 1000, 1, 1), rl.peek("s", "u"));
    assertTrue(rl.release("s", "u", id(0)));
    assertEquals(r(1, 0, 0, 1, 0, id(0) + 1), rl.check("s", "u"));
    RateLimitStats st = rl.stats("s");
    assertTrue(st.shadow());
    assertEquals(2, st.totalAllowed());
    assertEquals(1, st.totalDenied());
    assertEquals(1, st.totalShadowDenied());
    // C7
    fresh();
    rl.create("w", 3, 10_000, CONC, null, null);
    assertEquals(r(1, 0, 0, 3, 0, id(0)), rl.check("w", "u", 3L));
    at(5000);
    assertEquals(r(0, 0, 5000, 3, 3, 0), rl.check("w", "u"));
    assertEquals("OK", rl.update("w", RateLimitUpdate.of().windowMillis(2000)));
    assertEquals(r(1, 2, 0, 3, 0, id(5000)), rl.check("w", "u")); // the t0 lease is out of 2 s
    assertEquals("OK", rl.update("w", RateLimitUpdate.of().limit(1)));
    assertEquals(r(0, 0, 2000, 1, 1, 0), rl.check("w", "u"));
    assertServerError(E_BIG, () -> rl.update("w", RateLimitUpdate.of().limit(100_001)));
    assertServerError(E_SYNTAX, () -> rl.update("w", RateLimitUpdate.of().refill(5)));
    assertServerError(E_SYNTAX, () -> raw("RATELIMIT.UPDATE", "w", "DRAIN", "5", "LIMIT", "100001"));
    assertServerError(E_SYNTAX, () -> rl.update("w", RateLimitUpdate.of().drain(5).limit(100_001)));
    st = rl.stats("w");
    assertEquals(1, st.limit());
    assertEquals(2000, st.windowMillis());
  }

  @EachProtocol
  void validation(RedisProtocol protocol) {
    RateLimit rl = open(protocol).rateLimit();
    // C8
    assertServerError(E_BIG, () -> rl.create("x", 100_001, 1000, CONC, null, null));
    assertServerError(E_SYNTAX, () -> rl.create("x", 100_001, 1000, CONC, null, 5.0));
    assertServerError(E_SYNTAX, () -> rl.create("x", 100_001, 1000, CONC, 5.0, null));
    assertEquals("OK", raw("RATELIMIT.CREATE", "x", "100000", "1000", "ALGO", "CONCURRENCY"));
    assertServerError(E_ARITY, () -> raw("RATELIMIT.RELEASE", "x", "u"));
    assertServerError(E_ARITY, () -> raw("RATELIMIT.RELEASE", "x", "u", "1", "2"));
    assertServerError(E_LEASE, () -> rl.release("x", "u", 0));
    assertServerError(E_LEASE, () -> rl.release("x", "u", -1));
    assertServerError(E_LEASE, () -> raw("RATELIMIT.RELEASE", "x", "u", "abc"));
    assertServerError(E_LEASE, () -> raw("RATELIMIT.RELEASE", "x", "u", "9223372036854775808"));
    assertServerError(E_LEASE, () -> raw("RATELIMIT.RELEASE", "nolimiter", "u", "abc"));
    assertServerError(E_NOTFOUND, () -> rl.release("nolimiter", "u", 1));
    rl.create("api", 10, 1000, null, null, null);
    assertServerError(E_NOTCONC, () -> rl.release("api", "u", 1));
    // Other algorithms and an unknown limiter reply five fields: no lease.
    assertEquals(r(1, 9, 0, 10, 0, 0), rl.check("api", "u"));
    RateLimitResult none = rl.check("nolimiter", "u");
    assertEquals(r(0, 0, 0, 0, 0, 0), none);
    assertTrue(none.unknownLimiter());
    assertFalse(rl.release("x", "u", 1));
    assertFalse(rl.release("x", "u", Long.MAX_VALUE));
    RateLimitStats st = rl.stats("x");
    assertEquals(Algorithm.CONCURRENCY, st.algorithm());
    assertEquals(100_000, st.limit());
  }

  /** The command objects in a pipeline and in MULTI/EXEC, where replies arrive later. */
  @EachProtocol
  void pipelinesAndTransactions(RedisProtocol protocol) {
    HotKV c = open(protocol);
    try (AbstractPipeline p = c.jedis().pipelined()) {
      Response<String> created = p.executeCommand(HotKVCommands.rateLimitCreate("c", 3, 1000, CONC, null, null, false));
      List<Response<RateLimitResult>> checks = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        checks.add(p.executeCommand(HotKVCommands.rateLimitCheck("c", "u", null)));
      }
      Response<Boolean> released = p.executeCommand(HotKVCommands.rateLimitRelease("c", "u", id(0) + 1));
      Response<Boolean> again = p.executeCommand(HotKVCommands.rateLimitRelease("c", "u", id(0) + 1));
      p.sync();
      assertEquals("OK", created.get());
      assertEquals(r(1, 2, 0, 3, 0, id(0)), checks.get(0).get());
      assertEquals(r(1, 1, 0, 3, 1, id(0) + 1), checks.get(1).get());
      assertEquals(r(1, 0, 0, 3, 2, id(0) + 2), checks.get(2).get());
      assertEquals(r(0, 0, 1000, 3, 3, 0), checks.get(3).get());
      assertTrue(released.get());
      assertFalse(again.get());
    }
    try (AbstractTransaction tx = c.jedis().multi()) {
      Response<RateLimitResult> check = tx.executeCommand(HotKVCommands.rateLimitCheck("c", "u", 1L));
      Response<Boolean> release = tx.executeCommand(HotKVCommands.rateLimitRelease("c", "u", id(0) + 3));
      Response<RateLimitResult> peek = tx.executeCommand(HotKVCommands.rateLimitPeek("c", "u"));
      tx.exec();
      assertEquals(r(1, 0, 0, 3, 2, id(0) + 3), check.get());
      assertTrue(release.get());
      assertEquals(r(1, 1, 0, 3, 2), peek.get());
    }
  }

  @Test
  void parsesFiveOrSixFields() {
    assertEquals(new RateLimitResult(true, 9, 0, 10, 0, 0), Results.RATELIMIT.build(List.of(1L, 9L, 0L, 10L, 0L)));
    assertEquals(1_700_000_000_000_000_001L,
        Results.RATELIMIT.build(List.of(1L, 2L, 0L, 3L, 0L, 1_700_000_000_000_000_001L)).leaseId());
    assertThrows(HotKVReplyException.class, () -> Results.RATELIMIT.build(List.of(1L, 2L, 0L, 3L, 0L, 1L, 7L)));
    assertThrows(HotKVReplyException.class, () -> Results.RATELIMIT.build(List.of(1L, 2L, 0L, 3L)));
    assertEquals(Algorithm.CONCURRENCY, Algorithm.fromWireName("Concurrency"));
  }

  /**
   * 20 threads acquire and release leases on one key of a limit-3 limiter (real clock): the test
   * never observes more than 3 holders at once, every lease is released (RELEASE replies true),
   * ids never repeat, and nothing is left in flight.
   */
  @EachProtocol
  void twentyWorkersNeverExceedTheLimit(RedisProtocol protocol) throws Exception {
    RateLimit rl = open(protocol).rateLimit();
    raw("DEBUG", "CLOCK", "RESET");
    rl.create("jobs", 3, 60_000, CONC, null, null);
    AtomicInteger inFlight = new AtomicInteger();
    AtomicInteger peak = new AtomicInteger();
    AtomicInteger acquired = new AtomicInteger();
    AtomicInteger denied = new AtomicInteger();
    Set<Long> ids = Collections.synchronizedSet(new HashSet<>());
    ExecutorService pool = Executors.newFixedThreadPool(20);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int w = 0; w < 20; w++) {
        fs.add(pool.submit(() -> {
          for (int i = 0; i < 15; i++) {
            RateLimitResult res = rl.check("jobs", "tenant");
            if (!res.allowed()) {
              assertEquals(0, res.leaseId());
              denied.incrementAndGet();
              sleep(1);
              continue;
            }
            int now = inFlight.incrementAndGet();
            peak.accumulateAndGet(now, Math::max);
            acquired.incrementAndGet();
            assertTrue(ids.add(res.leaseId()), "lease id issued twice");
            sleep(2);
            // Leave before releasing: the test's count never lags the server's.
            inFlight.decrementAndGet();
            assertTrue(rl.release("jobs", "tenant", res.leaseId()));
          }
          return null;
        }));
      }
      for (Future<?> f : fs) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertTrue(peak.get() >= 1 && peak.get() <= 3, "peak " + peak.get());
    assertEquals(300, acquired.get() + denied.get());
    assertEquals(0, rl.peek("jobs", "tenant").current());
    RateLimitStats st = rl.stats("jobs");
    assertEquals(acquired.get(), st.totalAllowed());
    assertEquals(denied.get(), st.totalDenied());
    assertEquals(0, st.uniqueKeys());
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
