package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.AbstractTransaction;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.args.Rawable;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.util.KeyValue;

/**
 * {@code RATELIMIT.UPDATE} and shadow mode: the vectors of docs/ratelimit.md (U1-U6, S1-S4)
 * through the typed API ({@link RateLimit#update}, {@link RateLimit#create} with {@code shadow},
 * {@link RateLimitStats#shadow()} and {@link RateLimitStats#totalShadowDenied()}) with their
 * validation errors, in RESP2 and RESP3, plus pipelines and transactions. Each block starts from
 * an empty server (FLUSHALL drops limiters) with the clock frozen at t0 (DEBUG CLOCK SET).
 */
class RateLimitUpdateTest extends FrozenClockFixture {
  private static final String E_SYNTAX = "ERR syntax error";
  private static final String E_LIMIT = "ERR invalid limit: must be a positive integer";
  private static final String E_RATE = "ERR invalid rate: must be a positive number";
  private static final String E_ALGO =
      "ERR invalid option: ALGO cannot be changed (drop and create the limiter)";
  private static final String E_NOTFOUND = "ERR limiter not found";

  RateLimitUpdateTest(TestServer server) {
    super(server);
  }

  private static RateLimitUpdate u() {
    return RateLimitUpdate.of();
  }

  @EachProtocol
  void updateSlidingWindow(RedisProtocol protocol) {
    RateLimit rl = open(protocol).rateLimit();
    // U1: a lowered limit; the key above it waits until its entries age out.
    assertEquals("OK", rl.create("a", 5, 1000, null, null, null));
    assertEquals(r(1, 1, 0, 5, 0), rl.check("a", "u", 4L));
    at(100);
    assertEquals("OK", rl.update("a", u().limit(2)));
    assertEquals(r(0, 0, 900, 2, 4), rl.check("a", "u"));
    assertEquals(r(0, 0, 900, 2, 4), rl.peek("a", "u"));
    at(999);
    assertEquals(r(0, 0, 1, 2, 4), rl.check("a", "u"));
    at(1000);
    assertEquals(r(1, 1, 0, 2, 0), rl.check("a", "u"));
    RateLimitStats a = rl.stats("a");
    assertEquals(2, a.limit());
    assertEquals(5, a.totalAllowed());
    assertEquals(2, a.totalDenied());
    // U2: a smaller window ages entries out sooner, a larger one keeps them longer.
    fresh();
    rl.create("w", 3, 10_000, null, null, null);
    assertEquals(r(1, 0, 0, 3, 0), rl.check("w", "u", 3L));
    at(5000);
    assertEquals(r(0, 0, 5000, 3, 3), rl.check("w", "u"));
    assertEquals("OK", rl.update("w", u().window(Duration.ofSeconds(2))));
    assertEquals(r(1, 2, 0, 3, 0), rl.check("w", "u"));
    assertEquals("OK", rl.update("w", u().windowMillis(10_000)));
    at(14_999);
    assertEquals(r(1, 1, 0, 3, 1), rl.check("w", "u"));
    // U3: what aged out under the old window stays out.
    fresh();
    rl.create("z", 1, 1000, null, null, null);
    assertEquals(r(1, 0, 0, 1, 0), rl.check("z", "u"));
    at(1500);
    assertEquals("OK", rl.update("z", u().windowMillis(5000)));
    assertEquals(r(1, 0, 0, 1, 0), rl.check("z", "u"));
  }

  @EachProtocol
  void updateBuckets(RedisProtocol protocol) {
    RateLimit rl = open(protocol).rateLimit();
    // U4: a token bucket's units in use kept across changes of limit and rate.
    rl.create("tb", 10, 1000, Algorithm.TOKEN_BUCKET, null, null);
    assertEquals(r(1, 4, 0, 10, 0), rl.check("tb", "u", 6L));
    at(100);
    assertEquals(r(1, 5, 0, 10, 5), rl.peek("tb", "u"));
    assertEquals("OK", rl.update("tb", u().limit(20))); // U4a
    assertEquals(r(1, 15, 0, 20, 5), rl.peek("tb", "u"));
    assertEquals("OK", rl.update("tb", u().limit(3))); // U4b
    assertEquals(r(0, 0, 334, 3, 3), rl.peek("tb", "u"));
    assertEquals("OK", rl.update("tb", u().refill(1))); // U4c
    assertEquals(r(0, 0, 1000, 3, 3), rl.peek("tb", "u"));
    at(1100);
    assertEquals(r(1, 0, 0, 3, 2), rl.check("tb", "u"));
    assertEquals("OK", rl.update("tb", u().windowMillis(5000))); // U4d
    assertEquals(r(0, 0, 1000, 3, 3), rl.peek("tb", "u"));
    RateLimitStats tb = rl.stats("tb");
    assertEquals(5000, tb.windowMillis());
    assertEquals(1.0, tb.refillPerSecond());
    assertEquals(3, tb.limit());
    assertFalse(tb.shadow());
    assertEquals(0, tb.totalShadowDenied());
    // U5: a leaky bucket's drain rate; a dead key stays dead.
    fresh();
    rl.create("lb", 4, 1000, Algorithm.LEAKY_BUCKET, null, null);
    assertEquals(r(1, 2, 0, 4, 0), rl.check("lb", "u", 2L));
    assertEquals(r(1, 3, 0, 4, 0), rl.check("lb", "v"));
    at(250);
    assertEquals("OK", rl.update("lb", u().drain(2)));
    assertEquals(r(1, 3, 0, 4, 1), rl.peek("lb", "u"));
    assertEquals(r(1, 4, 0, 4, 0), rl.peek("lb", "v"));
    at(749);
    assertEquals(r(1, 3, 0, 4, 1), rl.peek("lb", "u"));
    at(750);
    assertEquals(r(1, 4, 0, 4, 0), rl.peek("lb", "u"));
    assertEquals(2.0, rl.stats("lb").drainPerSecond());
    assertEquals(0.0, rl.stats("lb").refillPerSecond());
  }

  @EachProtocol
  void updateErrors(RedisProtocol protocol) {
    RateLimit rl = open(protocol).rateLimit();
    // U6
    rl.create("api", 10, 1000, null, null, null);
    assertServerError(
        "ERR wrong number of arguments for 'ratelimit.update' command", () -> raw("RATELIMIT.UPDATE"));
    assertServerError(E_SYNTAX, () -> rl.update("api", u()));
    assertServerError(E_NOTFOUND, () -> rl.update("nolimiter", u().limit(5)));
    assertServerError(E_LIMIT, () -> rl.update("nolimiter", u().limit(0)));
    assertServerError(E_ALGO, () -> raw("RATELIMIT.UPDATE", "api", "ALGO", "token_bucket"));
    assertServerError(E_SYNTAX, () -> raw("RATELIMIT.UPDATE", "api", "ALGO"));
    assertServerError(E_SYNTAX, () -> raw("RATELIMIT.UPDATE", "api", "SHADOW", "maybe"));
    assertServerError(E_SYNTAX, () -> rl.update("api", u().refill(5)));
    assertServerError(E_SYNTAX, () -> rl.update("api", u().drain(5)));
    assertServerError(E_RATE, () -> raw("RATELIMIT.UPDATE", "api", "REFILL", "abc"));
    assertServerError(E_RATE, () -> rl.update("api", u().refill(Double.NaN)));
    rl.create("tb", 10, 1000, Algorithm.TOKEN_BUCKET, 0.00000001, null);
    assertServerError(E_RATE, () -> rl.update("tb", u().limit(11)));
    // Nothing changed by any failure.
    assertEquals(new RateLimitStats("tb", Algorithm.TOKEN_BUCKET, 10, 1000, 0, 0, 0, 0.00000001, 0), rl.stats("tb"));
    assertEquals(new RateLimitStats("api", Algorithm.SLIDING_WINDOW, 10, 1000, 0, 0, 0, 0, 0), rl.stats("api"));
  }

  @EachProtocol
  void shadowMode(RedisProtocol protocol) {
    RateLimit rl = open(protocol).rateLimit();
    // S1: every check allowed, the real decision in the other fields.
    assertEquals("OK", rl.create("s", 2, 1000, null, null, null, true));
    assertEquals(r(1, 1, 0, 2, 0), rl.check("s", "u"));
    assertEquals(r(1, 0, 0, 2, 1), rl.check("s", "u"));
    RateLimitResult shadowDenied = rl.check("s", "u");
    assertEquals(r(1, 0, 1000, 2, 2), shadowDenied);
    assertTrue(shadowDenied.allowed());
    assertEquals(r(1, 0, -1, 2, 2), rl.check("s", "u", 3L));
    assertEquals(r(1, 0, 1000, 2, 2), rl.peek("s", "u"));
    assertEquals(new RateLimitStats("s", Algorithm.SLIDING_WINDOW, 2, 1000, 1, 2, 4, 0, 0, true, 4), rl.stats("s"));
    // S2: enforced, the state is what shadow mode measured.
    assertEquals("OK", rl.update("s", u().shadow(false)));
    assertEquals(r(0, 0, 1000, 2, 2), rl.check("s", "u"));
    RateLimitStats off = rl.stats("s");
    assertFalse(off.shadow());
    assertEquals(5, off.totalDenied());
    assertEquals(4, off.totalShadowDenied());
    at(1000);
    assertEquals(r(1, 1, 0, 2, 0), rl.check("s", "u"));
    // S3
    assertEquals("OK", rl.update("s", u().shadow(true)));
    assertEquals(r(1, 1, 1000, 2, 1), rl.check("s", "u", 2L));
    RateLimitStats on = rl.stats("s");
    assertTrue(on.shadow());
    assertEquals(7, on.totalDenied());
    assertEquals(6, on.totalShadowDenied());
    // S4: the flag anywhere among the options, any case (raw: the typed API sends it last).
    fresh();
    assertEquals("OK", raw("RATELIMIT.CREATE", "sb", "1", "1000", "shadow", "ALGO", "token_bucket"));
    assertEquals(r(1, 0, 0, 1, 0), rl.check("sb", "u"));
    assertEquals(r(1, 0, 1000, 1, 1), rl.check("sb", "u"));
    assertEquals("OK", rl.create("sb2", 1, Duration.ofSeconds(1), Algorithm.TOKEN_BUCKET, null, null, true));
    assertEquals(r(1, 0, 0, 1, 0), rl.check("sb2", "u"));
    assertEquals(r(1, 0, 1000, 1, 1), rl.check("sb2", "u"));
    assertEquals(new RateLimitStats("sb2", Algorithm.TOKEN_BUCKET, 1, 1000, 1, 1, 1, 1, 0, true, 1), rl.stats("sb2"));
    assertServerError(E_SYNTAX, () -> raw("RATELIMIT.CREATE", "x", "1", "1000", "SHADOW", "SHADOW"));
    assertServerError(E_SYNTAX, () -> raw("RATELIMIT.CREATE", "x", "1", "1000", "SHADOW", "1"));
    // shadow false sends no flag: an enforced limiter.
    assertEquals("OK", rl.create("e", 1, 1000, null, null, null, false));
    assertEquals(r(1, 0, 0, 1, 0), rl.check("e", "u"));
    assertEquals(r(0, 0, 1000, 1, 1), rl.check("e", "u"));
    assertEquals(new RateLimitStats("e", Algorithm.SLIDING_WINDOW, 1, 1000, 1, 1, 1, 0, 0), rl.stats("e"));
  }

  /** The command objects in a pipeline and in MULTI/EXEC, where replies arrive later. */
  @EachProtocol
  void pipelinesAndTransactions(RedisProtocol protocol) {
    HotKV c = open(protocol);
    try (AbstractPipeline p = c.jedis().pipelined()) {
      Response<String> created = p.executeCommand(HotKVCommands.rateLimitCreate("s", 2, 1000, null, null, null, true));
      p.executeCommand(HotKVCommands.rateLimitCheck("s", "u", 2L));
      Response<RateLimitResult> shadowDenied = p.executeCommand(HotKVCommands.rateLimitCheck("s", "u", null));
      Response<String> bad = p.executeCommand(HotKVCommands.rateLimitUpdate("s", u()));
      Response<RateLimitStats> stats = p.executeCommand(HotKVCommands.rateLimitStats("s"));
      p.sync();
      assertEquals("OK", created.get());
      assertEquals(r(1, 0, 1000, 2, 2), shadowDenied.get());
      assertEquals(E_SYNTAX, assertThrows(JedisDataException.class, bad::get).getMessage());
      assertEquals(new RateLimitStats("s", Algorithm.SLIDING_WINDOW, 2, 1000, 1, 2, 1, 0, 0, true, 1), stats.get());
    }
    try (AbstractTransaction tx = c.jedis().multi()) {
      Response<String> off = tx.executeCommand(HotKVCommands.rateLimitUpdate("s", u().shadow(false).limit(3)));
      Response<RateLimitResult> enforced = tx.executeCommand(HotKVCommands.rateLimitCheck("s", "u", 2L));
      Response<RateLimitStats> stats = tx.executeCommand(HotKVCommands.rateLimitStats("s"));
      tx.exec();
      assertEquals("OK", off.get());
      assertEquals(r(0, 1, 1000, 3, 2), enforced.get());
      assertEquals(new RateLimitStats("s", Algorithm.SLIDING_WINDOW, 3, 1000, 1, 2, 3, 0, 0, false, 1), stats.get());
    }
  }

  private static List<String> line(CommandArguments args) {
    List<String> out = new ArrayList<>();
    for (Rawable r : args) {
      out.add(new String(r.getRaw(), StandardCharsets.UTF_8));
    }
    return out;
  }

  @Test
  void commandLines() {
    assertEquals(List.of("RATELIMIT.UPDATE", "n", "LIMIT", "3"),
        line(HotKVCommands.rateLimitUpdate("n", u().limit(3)).getArguments()));
    assertEquals(List.of("RATELIMIT.UPDATE", "n", "WINDOW", "5000", "SHADOW", "OFF"),
        line(HotKVCommands.rateLimitUpdate("n", u().shadow(false).window(Duration.ofSeconds(5))).getArguments()));
    assertEquals(List.of("RATELIMIT.UPDATE", "n", "LIMIT", "1", "WINDOW", "2", "REFILL", "0.5", "SHADOW", "ON"),
        line(HotKVCommands.rateLimitUpdate("n", u().shadow(true).refill(0.5).windowMillis(2).limit(1)).getArguments()));
    assertEquals(List.of("RATELIMIT.UPDATE", "n", "DRAIN", "0.00000001"),
        line(HotKVCommands.rateLimitUpdate("n", u().drain(1e-8)).getArguments()));
    assertEquals(List.of("RATELIMIT.CREATE", "n", "1", "1000", "ALGO", "token_bucket", "SHADOW"),
        line(HotKVCommands.rateLimitCreate("n", 1, 1000, Algorithm.TOKEN_BUCKET, null, null, true).getArguments()));
    assertEquals(List.of("RATELIMIT.CREATE", "n", "1", "1000"),
        line(HotKVCommands.rateLimitCreate("n", 1, 1000, null, null, null).getArguments()));
    // The limiter name is the command's key (cluster routing).
    assertEquals(1, HotKVCommands.rateLimitUpdate("n", u().limit(3)).getArguments().getKeys().size());
    // Immutable: a chain never changes what it started from.
    RateLimitUpdate base = u().limit(3);
    base.shadow(true);
    assertEquals(new RateLimitUpdate(3L, null, null, null, null), base);
  }

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void statsShadowFieldsInBothProtocols() {
    List<Object> base = List.of(
        b("name"), b("x"), b("algo"), b("sliding_window"), b("limit"), 2L, b("window_ms"), 1000L,
        b("unique_keys"), 1L, b("total_allowed"), 2L, b("total_denied"), 4L);
    // A server without shadow mode: false and 0.
    RateLimitStats old = Results.stats(base);
    assertFalse(old.shadow());
    assertEquals(0, old.totalShadowDenied());
    List<Object> full = new ArrayList<>(base);
    full.addAll(List.of(b("shadow"), 1L, b("total_shadow_denied"), Long.MAX_VALUE));
    RateLimitStats want = new RateLimitStats("x", Algorithm.SLIDING_WINDOW, 2, 1000, 1, 2, 4, 0, 0, true, Long.MAX_VALUE);
    assertEquals(want, Results.stats(full));
    List<Object> map = new ArrayList<>();
    for (int i = 0; i < full.size(); i += 2) {
      map.add(new KeyValue<>(full.get(i), full.get(i + 1)));
    }
    assertEquals(want, Results.stats(map));
    List<Object> bad = new ArrayList<>(base);
    bad.addAll(List.of(b("shadow"), 2L));
    assertThrows(HotKVReplyException.class, () -> Results.stats(bad));
  }
}
