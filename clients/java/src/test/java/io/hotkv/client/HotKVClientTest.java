package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.AbstractTransaction;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * Every method of the typed API against the real server, in RESP2 and RESP3: replies, helpers,
 * the exact server errors, pipelines and transactions.
 */
class HotKVClientTest extends FrozenClockFixture {
  HotKVClientTest(TestServer server) {
    super(server);
  }

  /** Every test here also checks that its client speaks the protocol asked for. */
  @Override
  protected HotKV open(RedisProtocol protocol) {
    HotKV c = super.open(protocol);
    assertEquals(protocol == RedisProtocol.RESP3 ? 3 : 2, Support.negotiatedProtocol(c.jedis()));
    return c;
  }

  @EachProtocol
  void gcra(RedisProtocol protocol) {
    HotKV c = open(protocol);
    GcraResult r = c.gcra().limit("k", 60_000, 10);
    assertEquals(new GcraResult(false, 10, 9, -1, 6000), r);
    assertTrue(r.allowed());
    assertFalse(r.tooLarge());
    assertEquals(Duration.ZERO, r.retryAfter());
    assertEquals(Duration.ofSeconds(6), r.resetAfter());
    assertEquals(6000, c.jedis().pttl("k"));
    // Duration overloads send whole milliseconds.
    assertEquals(new GcraResult(false, 10, 8, -1, 12000), c.gcra().limit("k", Duration.ofMinutes(1), 10));
    GcraResult denied = c.gcra().limit("k", Duration.ofMinutes(1), 10, 10);
    assertEquals(new GcraResult(true, 10, 0, 12000, 12000), denied);
    assertEquals(Duration.ofSeconds(12), denied.retryAfter());
    // PEEK reports without recording.
    assertEquals(new GcraResult(false, 10, 7, -1, 18000), c.gcra().peek("k", 60_000, 10));
    assertEquals(new GcraResult(false, 10, 6, -1, 24000), c.gcra().peek("k", Duration.ofMinutes(1), 10, 2));
    assertEquals(new GcraResult(false, 10, 7, -1, 18000), c.gcra().peek("k", 60_000, 10, 1));
    assertEquals("1700000012000000000", c.jedis().get("k"));
    // A count above the burst can never pass.
    GcraResult big = c.gcra().limit("k", 60_000, 10, 11);
    assertTrue(big.tooLarge());
    assertEquals(Duration.ofMillis(-1), big.retryAfter());
    // RESET counts the keys that existed; a repeated key once.
    c.gcra().limit("j", 60_000, 10);
    assertEquals(2, c.gcra().reset("k", "j", "nokey", "k"));
    assertEquals(0, c.gcra().reset("k"));
    // Values beyond 2^53 survive intact (V16).
    assertEquals(
        new GcraResult(false, Long.MAX_VALUE, Long.MAX_VALUE - 1, -1, 1),
        c.gcra().limit("big", 60_000, Long.MAX_VALUE));
  }

  @EachProtocol
  void throttle(RedisProtocol protocol) {
    HotKV c = open(protocol);
    // 1 per second with bursts of 5 (max_burst 4), redis-cell's example shape.
    ThrottleResult r = c.gcra().throttle("t", 4, 1, 1);
    assertEquals(new ThrottleResult(false, 5, 4, -1, 1), r);
    assertTrue(r.allowed());
    assertEquals(Duration.ZERO, r.retryAfter());
    assertEquals(Duration.ofSeconds(1), r.resetAfter());
    assertEquals(new ThrottleResult(false, 5, 0, -1, 5), c.gcra().throttle("t", 4, 1, 1, 4));
    ThrottleResult limited = c.gcra().throttle("t", 4, 1, 1);
    assertEquals(new ThrottleResult(true, 5, 0, 1, 5), limited);
    assertEquals(Duration.ofSeconds(1), limited.retryAfter());
    // Quantity 0 reports the state only.
    assertEquals(new ThrottleResult(false, 5, 0, -1, 5), c.gcra().throttle("t", 4, 1, 1, 0));
    ThrottleResult big = c.gcra().throttle("u", 4, 1, 1, 6);
    assertTrue(big.tooLarge());
    assertEquals(Duration.ofSeconds(-1), big.retryAfter());
    // The state is shared with GCRA.*.
    assertEquals(1, c.gcra().reset("t"));
  }

  @EachProtocol
  void rateLimit(RedisProtocol protocol) {
    HotKV c = open(protocol);
    RateLimit rl = c.rateLimit();
    assertEquals("OK", rl.create("api", 100, 60_000, null, null, null));
    assertEquals(new RateLimitResult(true, 99, 0, 100, 0), rl.check("api", "user:42"));
    assertEquals(new RateLimitResult(true, 94, 0, 100, 1), rl.check("api", "user:42", 5L));
    assertEquals(new RateLimitResult(true, 94, 0, 100, 6), rl.peek("api", "user:42"));
    RateLimitResult big = rl.check("api", "user:42", 101L);
    assertTrue(big.tooLarge());
    assertEquals(Duration.ofMillis(-1), big.retryAfter());
    RateLimitStats st = rl.stats("api");
    assertEquals(new RateLimitStats("api", Algorithm.SLIDING_WINDOW, 100, 60_000, 1, 6, 101, 0, 0), st);
    assertEquals(Duration.ofMinutes(1), st.window());
    assertEquals(0, st.rate());
    assertTrue(rl.reset("api", "user:42"));
    assertFalse(rl.reset("api", "user:42"));

    // Bucket limiters: rates are sent as plain decimals and come back as the same double, a
    // bulk string in RESP2 and a double in RESP3.
    assertEquals("OK", rl.create("uploads", 20, Duration.ofSeconds(4), Algorithm.TOKEN_BUCKET, 2.5, null));
    assertEquals("OK", rl.create("tiny", 10, 1000, Algorithm.TOKEN_BUCKET, 0.00000001, null));
    assertEquals("OK", rl.create("leaky", 3, 1500, Algorithm.LEAKY_BUCKET, null, 0.5));
    assertEquals("OK", rl.create("leaky-default", 3, 1500, Algorithm.LEAKY_BUCKET, null, null));
    assertEquals(2.5, rl.stats("uploads").refillPerSecond());
    assertEquals(2.5, rl.stats("uploads").rate());
    assertEquals(Algorithm.TOKEN_BUCKET, rl.stats("uploads").algorithm());
    assertEquals(0.00000001, rl.stats("tiny").refillPerSecond());
    assertEquals(0.5, rl.stats("leaky").drainPerSecond());
    assertEquals(0, rl.stats("leaky").refillPerSecond());
    assertEquals(2.0, rl.stats("leaky-default").drainPerSecond());

    // Unknown limiters answer all zeros, not an error.
    RateLimitResult unknown = rl.check("nolimiter", "u");
    assertTrue(unknown.unknownLimiter());
    assertFalse(unknown.allowed());
    assertTrue(rl.peek("nolimiter", "u").unknownLimiter());

    assertEquals(List.of("api", "leaky", "leaky-default", "tiny", "uploads"), rl.list());
    assertEquals("OK", rl.drop("api"));
    assertTrue(rl.check("api", "user:42").unknownLimiter());
    assertEquals(List.of("leaky", "leaky-default", "tiny", "uploads"), rl.list());
  }

  /** Server errors surface as JedisDataException with the server's exact text. */
  @EachProtocol
  void errors(RedisProtocol protocol) {
    HotKV c = open(protocol);
    Gcra g = c.gcra();
    RateLimit rl = c.rateLimit();
    String wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value";
    c.jedis().rpush("l", "a");
    c.jedis().set("s", "hello");
    assertServerError(wrongType, () -> g.limit("l", 60_000, 10));
    assertServerError(wrongType, () -> g.peek("s", 60_000, 10));
    assertServerError(wrongType, () -> g.reset("s"));
    assertServerError(wrongType, () -> g.throttle("l", 1, 1, 1));
    assertServerError("ERR invalid period: must be a positive integer (milliseconds)", () -> g.limit("k", 0, 10));
    assertServerError("ERR invalid period: must be a positive integer (milliseconds)", () -> g.limit("k", Duration.ofNanos(10), 10));
    assertServerError("ERR invalid period: must be a positive integer (milliseconds)", () -> g.limit("k", 1_000_000_000_001L, 10));
    assertServerError("ERR invalid burst: must be a positive integer", () -> g.limit("k", 1000, 0));
    assertServerError("ERR invalid count: must be a positive integer", () -> g.peek("k", 1000, 10, -1));
    assertServerError("ERR wrong number of arguments for 'gcra.reset' command", () -> g.reset());
    assertServerError("ERR zero rates are not supported", () -> g.throttle("k", 1, 0, 1));
    assertServerError("ERR value is not an integer or out of range", () -> g.throttle("k", -1, 1, 1));

    assertServerError("ERR invalid name: must be 1 to 512 bytes", () -> rl.create("", 10, 1000, null, null, null));
    assertServerError("ERR invalid limit: must be a positive integer", () -> rl.create("x", 0, 1000, null, null, null));
    assertServerError("ERR invalid window: must be a positive integer (milliseconds)", () -> rl.create("x", 10, 0, null, null, null));
    assertServerError("ERR syntax error", () -> rl.create("x", 10, 1000, null, 5.0, null));
    assertServerError("ERR syntax error", () -> rl.create("x", 10, 1000, Algorithm.LEAKY_BUCKET, 5.0, null));
    assertServerError("ERR invalid rate: must be a positive number", () -> rl.create("x", 10, 1000, Algorithm.TOKEN_BUCKET, 0.0, null));
    assertServerError("ERR invalid rate: must be a positive number", () -> rl.create("x", 10, 1000, Algorithm.TOKEN_BUCKET, -1.0, null));
    assertServerError("ERR invalid rate: must be a positive number", () -> rl.create("x", 10, 1000, Algorithm.TOKEN_BUCKET, Double.NaN, null));
    assertServerError("ERR invalid rate: must be a positive number", () -> rl.create("x", 10, 1000, Algorithm.TOKEN_BUCKET, Double.POSITIVE_INFINITY, null));
    assertServerError("ERR invalid rate: must be a positive number", () -> rl.create("x", 10, 1000, Algorithm.TOKEN_BUCKET, 0.000000001, null));
    rl.create("api", 100, 60_000, null, null, null);
    assertServerError("ERR limiter already exists or limit reached", () -> rl.create("api", 100, 60_000, null, null, null));
    assertServerError("ERR invalid cost: must be a positive integer", () -> rl.check("api", "k", 0L));
    assertServerError("ERR invalid cost: must be a positive integer", () -> rl.check("nolimiter", "k", -1L));
    assertServerError("ERR limiter not found", () -> rl.reset("nolimiter", "u"));
    assertServerError("ERR limiter not found", () -> rl.stats("nolimiter"));
    assertServerError("ERR limiter not found", () -> rl.drop("nolimiter"));
    assertEquals(List.of("api"), rl.list());
  }

  /** The command objects work in pipelines and MULTI/EXEC, where replies arrive later. */
  @EachProtocol
  void pipelinesAndTransactions(RedisProtocol protocol) {
    HotKV c = open(protocol);
    c.rateLimit().create("api", 10, 60_000, null, null, null);
    try (AbstractPipeline p = c.jedis().pipelined()) {
      Response<GcraResult> perSecond = p.executeCommand(HotKVCommands.gcraLimit("rl:{user:42}:sec", 1000, 10, 1));
      Response<GcraResult> perHour = p.executeCommand(HotKVCommands.gcraLimit("rl:{user:42}:hour", 3_600_000, 1000, 1));
      Response<RateLimitResult> check = p.executeCommand(HotKVCommands.rateLimitCheck("api", "u", 3L));
      Response<RateLimitStats> stats = p.executeCommand(HotKVCommands.rateLimitStats("api"));
      Response<GcraResult> bad = p.executeCommand(HotKVCommands.gcraLimit("k", 0, 1, 1));
      Response<List<String>> list = p.executeCommand(HotKVCommands.rateLimitList());
      p.sync();
      assertEquals(new GcraResult(false, 10, 9, -1, 100), perSecond.get());
      assertEquals(new GcraResult(false, 1000, 999, -1, 3600), perHour.get());
      assertEquals(new RateLimitResult(true, 7, 0, 10, 0), check.get());
      assertEquals(3, stats.get().totalAllowed());
      JedisDataException e = assertThrows(JedisDataException.class, bad::get);
      assertEquals("ERR invalid period: must be a positive integer (milliseconds)", e.getMessage());
      assertEquals(List.of("api"), list.get());
    }
    // All commands of a transaction share one time sample (V28).
    try (AbstractTransaction tx = c.jedis().multi()) {
      Response<GcraResult> first = tx.executeCommand(HotKVCommands.gcraLimit("tx", 1000, 1, 1));
      Response<GcraResult> second = tx.executeCommand(HotKVCommands.gcraLimit("tx", 1000, 1, 1));
      Response<ThrottleResult> third = tx.executeCommand(HotKVCommands.clThrottle("tx2", 0, 1, 1, 1));
      tx.exec();
      assertEquals(new GcraResult(false, 1, 0, -1, 1000), first.get());
      assertEquals(new GcraResult(true, 1, 0, 1000, 1000), second.get());
      assertTrue(third.get().allowed());
    }
  }

  @EachProtocol
  void wrapsTheGivenClient(RedisProtocol protocol) {
    HotKV c = open(protocol);
    assertSame(c.gcra(), c.gcra());
    c.jedis().set("plain", "value");
    assertEquals("value", c.jedis().get("plain"));
    try (HotKV quick = HotKV.create(server.host, server.port)) {
      assertEquals(new GcraResult(false, 10, 9, -1, 6000), quick.gcra().limit("quick", 60_000, 10));
    }
  }
}
