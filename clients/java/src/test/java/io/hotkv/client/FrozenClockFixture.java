package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * The fixture every test class that runs the specification's vectors through the typed API
 * shares (the concurrency, RATELIMIT.UPDATE/shadow and GCRA.LIMITALL/REFUND vectors, the typed
 * API test and the middleware tests): one client per test, in the protocol under test, on the
 * shared server (see {@link HotKVServerExtension}); each block starts from an empty server with
 * the clock frozen at {@link Support#T0} (DEBUG CLOCK SET), so the spec's "at t" steps are
 * {@link #at(long)}; the expected replies are written in the spec's own notation (0/1 flags).
 * Subclasses keep only their vectors and special cases.
 */
@ExtendWith(HotKVServerExtension.class)
public abstract class FrozenClockFixture {
  /**
   * A test run once in RESP2 and once in RESP3, the protocol passed as its parameter: what every
   * vector test does, in one place so that no test can forget a protocol.
   */
  @Target(ElementType.METHOD)
  @Retention(RetentionPolicy.RUNTIME)
  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  public @interface EachProtocol {}

  protected final TestServer server;
  /** The client of the running test; null before {@link #open}. */
  protected HotKV client;

  protected FrozenClockFixture(TestServer server) {
    this.server = server;
  }

  /**
   * Connects in {@code protocol} (closing the client an earlier {@code open} of this test made,
   * e.g. a {@code @BeforeEach} default) and starts a block ({@link #fresh()}).
   */
  protected HotKV open(RedisProtocol protocol) {
    if (client != null) {
      client.close();
    }
    client = Support.client(server, protocol);
    fresh();
    return client;
  }

  /** A block's start: empty server (no keys, no limiters), clock at t0. */
  protected void fresh() {
    Support.clean(client);
    at(0);
  }

  /** Sets the server clock to t0 + {@code ms}. */
  protected void at(long ms) {
    Support.clock(client.jedis(), Support.T0 + ms);
  }

  /**
   * Gives the shared server its real clock back (the next test class may not freeze it) and
   * closes the test's client.
   */
  @AfterEach
  protected void closeClient() {
    if (client != null) {
      try {
        Support.raw(client.jedis(), "DEBUG", "CLOCK", "RESET");
      } finally {
        client.close();
        client = null;
      }
    }
  }

  /**
   * Any command through the test's client, for steps the typed API cannot send; bulk and status
   * replies decoded to strings so that they compare with the spec's text.
   */
  protected Object raw(String name, String... args) {
    Object reply = Support.raw(client.jedis(), name, args);
    return reply instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : reply;
  }

  /** The call fails with exactly the server's {@code message}. */
  public static void assertServerError(String message, Executable call) {
    JedisDataException e = assertThrows(JedisDataException.class, call);
    assertEquals(message, e.getMessage());
  }

  /** A RATELIMIT.CHECK/PEEK reply as the spec writes it: [allowed, remaining, retry, limit, current]. */
  protected static RateLimitResult r(int allowed, long remaining, long retry, long limit, long current) {
    return new RateLimitResult(allowed != 0, remaining, retry, limit, current);
  }

  /** A concurrency limiter's RATELIMIT.CHECK reply, with its sixth field, the lease id. */
  protected static RateLimitResult r(
      int allowed, long remaining, long retry, long limit, long current, long lease) {
    return new RateLimitResult(allowed != 0, remaining, retry, limit, current, lease);
  }

  /** A GCRA.LIMIT reply as the spec writes it: [denied, limit, remaining, retry, reset]. */
  protected static GcraResult g(int denied, long limit, long remaining, long retry, long reset) {
    return new GcraResult(denied != 0, limit, remaining, retry, reset);
  }

  /** A GCRA.LIMITALL reply: [denied, retry, per-limit replies...]. */
  protected static GcraLimitAllResult la(int denied, long retry, GcraResult... limits) {
    return new GcraLimitAllResult(denied != 0, retry, List.of(limits));
  }
}
