package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.AbstractTransaction;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * {@code GCRA.LIMITALL} and {@code GCRA.REFUND}: the vectors of docs/ratelimit.md (LA1-LA8,
 * RF1-RF7) through the typed API ({@link Gcra#limitAll}, {@link Gcra#refund}) with their
 * validation errors, in RESP2 and RESP3, plus pipelines and transactions. Keys carry one hash
 * tag (the spec's {@code u} is {@code {v}u}) so that they may share a cluster slot. Each block
 * starts from an empty database with the clock frozen at t0 (DEBUG CLOCK SET).
 */
class LimitAllRefundTest extends FrozenClockFixture {
  private static final String WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value";
  private static final String E_NUMLIMITS = "ERR invalid numlimits: must be an integer from 1 to 256";
  private static final String E_SYNTAX = "ERR syntax error";
  private static final String E_PERIOD = "ERR invalid period: must be a positive integer (milliseconds)";
  private static final String E_BURST = "ERR invalid burst: must be a positive integer";
  private static final String E_COUNT = "ERR invalid count: must be a positive integer";

  private static final GcraLimitSpec U = new GcraLimitSpec("{v}u", 60_000, 10);
  private static final GcraLimitSpec O = new GcraLimitSpec("{v}o", 1000, 2);
  private static final GcraLimitSpec K = new GcraLimitSpec("{v}k", 60_000, 10);

  LimitAllRefundTest(TestServer server) {
    super(server);
  }

  @EachProtocol
  void limitAllVectors(RedisProtocol protocol) {
    Gcra gcra = open(protocol).gcra();
    // LA1-LA3c
    assertEquals(la(0, -1, g(0, 10, 9, -1, 6000), g(0, 2, 1, -1, 500)), gcra.limitAll(U, O));
    assertEquals(la(0, -1, g(0, 10, 8, -1, 12000), g(0, 2, 0, -1, 1000)), gcra.limitAll(List.of(U, O)));
    GcraLimitAllResult la3 = gcra.limitAll(List.of(U, O), 1);
    assertEquals(la(1, 500, g(0, 10, 7, -1, 18000), g(1, 2, 0, 500, 1000)), la3);
    assertFalse(la3.allowed());
    assertFalse(la3.tooLarge());
    assertEquals(Duration.ofMillis(500), la3.retryAfter());
    assertEquals("1700000012000000000", raw("GET", "{v}u"));
    at(499);
    assertEquals(la(1, 1, g(0, 10, 7, -1, 17501), g(1, 2, 0, 1, 501)), gcra.limitAll(U, O));
    at(500);
    GcraLimitAllResult la3c = gcra.limitAll(U, O);
    assertEquals(la(0, -1, g(0, 10, 7, -1, 17500), g(0, 2, 0, -1, 1000)), la3c);
    assertTrue(la3c.allowed());
    assertEquals(Duration.ZERO, la3c.retryAfter());
    assertEquals("1700000018000000000", raw("GET", "{v}u"));

    // LA4
    fresh();
    GcraLimitAllResult la4 = gcra.limitAll(List.of(U, O), 3);
    assertEquals(la(1, -1, g(0, 10, 7, -1, 18000), g(1, 2, 0, -1, 0)), la4);
    assertTrue(la4.tooLarge());
    assertTrue(la4.retryAfter().isNegative());
    assertEquals(0L, raw("EXISTS", "{v}u", "{v}o"));

    // LA5, LA5c
    fresh();
    GcraLimitSpec a = GcraLimitSpec.of("{v}a", Duration.ofSeconds(1), 1);
    GcraLimitSpec b = new GcraLimitSpec("{v}b", 3000, 1);
    assertEquals(g(0, 1, 0, -1, 1000), gcra.limit("{v}a", 1000, 1));
    assertEquals(g(0, 1, 0, -1, 3000), gcra.limit("{v}b", 3000, 1));
    assertEquals(la(1, 3000, g(1, 1, 0, 1000, 1000), g(1, 1, 0, 3000, 3000)), gcra.limitAll(a, b));
    at(3000);
    assertEquals(la(0, -1, g(0, 1, 0, -1, 1000), g(0, 1, 0, -1, 3000)), gcra.limitAll(a, b));

    // LA6, LA6b
    fresh();
    assertEquals(la(0, -1, g(0, 10, 5, -1, 30000), g(0, 10, 0, -1, 60000)), gcra.limitAll(List.of(K, K), 5));
    assertEquals("1700000060000000000", raw("GET", "{v}k"));
    at(6000);
    assertEquals(la(1, 6000, g(0, 10, 0, -1, 60000), g(1, 10, 0, 6000, 60000)), gcra.limitAll(K, K));
    assertEquals("1700000060000000000", raw("GET", "{v}k"));

    // LA7
    fresh();
    assertEquals(la(0, -1, g(0, 10, 9, -1, 6000)), gcra.limitAll(K));
    assertEquals(6000L, raw("PTTL", "{v}k"));
  }

  @EachProtocol
  void limitAllErrors(RedisProtocol protocol) {
    Gcra gcra = open(protocol).gcra();
    // LA8: numlimits the typed API can send (257 limits; no limit at all is an arity error,
    // "GCRA.LIMITALL 0 COUNT 1" having three arguments), the others raw.
    assertServerError(E_NUMLIMITS, () -> gcra.limitAll(Collections.nCopies(257, K)));
    assertServerError("ERR wrong number of arguments for 'gcra.limitall' command", () -> gcra.limitAll(List.of()));
    for (String n : List.of("0", "257", "-1", "x", "01")) {
      assertServerError(E_NUMLIMITS, () -> raw("GCRA.LIMITALL", n, "{v}k", "60000", "10"));
    }
    assertServerError(E_SYNTAX, () -> raw("GCRA.LIMITALL", "2", "{v}k", "60000", "10"));
    assertServerError(E_SYNTAX, () -> raw("GCRA.LIMITALL", "1", "{v}k", "60000", "10", "COUNT"));
    assertServerError(E_BURST, () -> gcra.limitAll(new GcraLimitSpec("{v}k", 60_000, 0), new GcraLimitSpec("{v}j", 0, 10)));
    assertServerError(E_PERIOD, () -> gcra.limitAll(new GcraLimitSpec("{v}k", 0, 10)));
    assertServerError(E_PERIOD, () -> gcra.limitAll(GcraLimitSpec.of("{v}k", Duration.ofNanos(10), 10)));
    assertServerError(E_COUNT, () -> gcra.limitAll(List.of(K), 0));
    client.jedis().set("{v}s", "hello");
    assertServerError(WRONGTYPE, () -> gcra.limitAll(K, new GcraLimitSpec("{v}s", 60_000, 10)));
    assertEquals(0L, raw("EXISTS", "{v}k"));
    assertEquals("hello", raw("GET", "{v}s"));
  }

  @EachProtocol
  void refundVectors(RedisProtocol protocol) {
    Gcra gcra = open(protocol).gcra();
    // RF1-RF3
    assertEquals(g(0, 10, 7, -1, 18000), gcra.limit("{v}k", 60_000, 10, 3));
    assertEquals(g(0, 10, 8, -1, 12000), gcra.refund("{v}k", 60_000, 10));
    assertEquals(12000L, raw("PTTL", "{v}k"));
    assertEquals(g(0, 10, 10, -1, 0), gcra.refund("{v}k", Duration.ofMinutes(1), 10, 5));
    assertEquals(0L, raw("EXISTS", "{v}k"));
    assertEquals(g(0, 10, 10, -1, 0), gcra.refund("{v}k", Duration.ofMinutes(1), 10));
    assertEquals(0L, raw("EXISTS", "{v}k"));

    // RF4
    fresh();
    client.jedis().set("{v}n", "123");
    assertEquals(g(0, 10, 10, -1, 0), gcra.refund("{v}n", 60_000, 10));
    assertEquals("123", raw("GET", "{v}n"));
    assertEquals(-1L, raw("PTTL", "{v}n"));

    // RF5
    fresh();
    assertEquals(g(0, 3, 2, -1, 334), gcra.limit("{v}k", 1000, 3));
    assertEquals(g(0, 3, 1, -1, 667), gcra.limit("{v}k", 1000, 3));
    at(100);
    assertEquals(g(0, 3, 2, -1, 234), gcra.refund("{v}k", 1000, 3));
    assertEquals("1700000000333333333", raw("GET", "{v}k"));

    // RF6
    fresh();
    client.jedis().set("{v}big", Long.toString(Long.MAX_VALUE));
    assertEquals(g(0, 10, 0, -1, 7_523_372_030_855L), gcra.refund("{v}big", 60_000, 10));
    assertEquals(g(0, 10, 10, -1, 0), gcra.refund("{v}big", 60_000, 10, Long.MAX_VALUE));
    assertEquals(0L, raw("EXISTS", "{v}big"));

    // RF7, and the other validation errors (GCRA.LIMIT's, named gcra.refund)
    fresh();
    assertServerError("ERR wrong number of arguments for 'gcra.refund' command", () -> raw("GCRA.REFUND", "{v}k", "60000"));
    assertServerError(E_PERIOD, () -> gcra.refund("{v}k", 0, 10));
    assertServerError(E_BURST, () -> gcra.refund("{v}k", 60_000, 0));
    assertServerError(E_COUNT, () -> gcra.refund("{v}k", 60_000, 10, 0));
    client.jedis().set("{v}s", "hello");
    assertServerError(WRONGTYPE, () -> gcra.refund("{v}s", 60_000, 10));
    assertEquals("hello", raw("GET", "{v}s"));
  }

  /** The command objects in a pipeline and in MULTI/EXEC, where replies arrive later. */
  @EachProtocol
  void pipelinesAndTransactions(RedisProtocol protocol) {
    HotKV c = open(protocol);
    try (AbstractPipeline p = c.jedis().pipelined()) {
      Response<GcraLimitAllResult> first = p.executeCommand(HotKVCommands.gcraLimitAll(List.of(U, O), 1));
      Response<GcraLimitAllResult> second = p.executeCommand(HotKVCommands.gcraLimitAll(List.of(U, O), 1));
      Response<GcraLimitAllResult> bad = p.executeCommand(HotKVCommands.gcraLimitAll(List.of(U), 0));
      p.sync();
      assertEquals(la(0, -1, g(0, 10, 9, -1, 6000), g(0, 2, 1, -1, 500)), first.get());
      assertEquals(la(0, -1, g(0, 10, 8, -1, 12000), g(0, 2, 0, -1, 1000)), second.get());
      JedisDataException e = assertThrows(JedisDataException.class, bad::get);
      assertEquals(E_COUNT, e.getMessage());
    }
    try (AbstractTransaction tx = c.jedis().multi()) {
      Response<GcraLimitAllResult> third = tx.executeCommand(HotKVCommands.gcraLimitAll(List.of(U, O), 1));
      Response<GcraResult> spent = tx.executeCommand(HotKVCommands.gcraLimit("{v}r", 60_000, 10, 3));
      Response<GcraResult> refunded = tx.executeCommand(HotKVCommands.gcraRefund("{v}r", 60_000, 10, 1));
      tx.exec();
      assertEquals(la(1, 500, g(0, 10, 7, -1, 18000), g(1, 2, 0, 500, 1000)), third.get());
      assertEquals(g(0, 10, 7, -1, 18000), spent.get());
      assertEquals(g(0, 10, 8, -1, 12000), refunded.get());
    }
  }

  @Test
  void parsing() {
    List<Object> reply = List.of(1L, -1L, List.of(0L, 10L, 7L, -1L, 18000L), List.of(1L, 2L, 0L, -1L, 0L));
    assertEquals(la(1, -1, g(0, 10, 7, -1, 18000), g(1, 2, 0, -1, 0)), Results.GCRA_ALL.build(reply));
    for (Object bad : Arrays.asList(
        List.of(), List.of(0L, -1L), List.of(0L, -1L, List.of(0L, 1L)), List.of(0L, -1L, 5L),
        "OK".getBytes(StandardCharsets.UTF_8), null)) {
      assertThrows(HotKVReplyException.class, () -> Results.GCRA_ALL.build(bad));
    }
    // The result's list is a copy the caller cannot change.
    GcraLimitAllResult r = la(0, -1, g(0, 1, 0, -1, 1000));
    assertThrows(UnsupportedOperationException.class, () -> r.limits().clear());
  }
}
