package io.hotkv.client;

import java.util.Objects;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * HotKV's rate-limiting commands on a Jedis client.
 *
 * <p>{@code HotKV} is a thin layer over a {@link UnifiedJedis} you build as usual ({@code
 * RedisClient} for a pooled standalone connection, {@code RedisClusterClient} or {@code
 * JedisCluster} for a cluster, with TLS, authentication, RESP3, retries and timeouts configured
 * on Jedis). Every command goes through that client, so pooling, cluster routing by key and
 * retries are Jedis's. Everything else (GET, SET, pipelines, ...) stays on the Jedis client,
 * available from {@link #jedis()}.
 *
 * <pre>{@code
 * UnifiedJedis jedis = RedisClient.create("localhost", 6379);
 * HotKV client = new HotKV(jedis);
 *
 * var result = client.gcra().limit("api:user:42", 60_000, 10);
 * if (result.denied()) {
 *     System.out.println("slow down, retry in " + result.retryAfterMillis() + " ms");
 * }
 * }</pre>
 *
 * <p>Instances are thread-safe as far as the wrapped client is (Jedis's pooled and cluster
 * clients are). Server errors surface as Jedis's {@code JedisDataException} with the server's
 * exact text; a reply that cannot be parsed as {@link HotKVReplyException}.
 */
public final class HotKV implements AutoCloseable {
  private final UnifiedJedis jedis;
  private final Gcra gcra;
  private final RateLimit rateLimit;

  /** Wraps a Jedis client; {@link #close()} closes it. */
  public HotKV(UnifiedJedis jedis) {
    this.jedis = Objects.requireNonNull(jedis, "jedis");
    this.gcra = new Gcra(this);
    this.rateLimit = new RateLimit(this);
  }

  /**
   * A pooled standalone client for {@code host:port} with Jedis's defaults (a convenience for
   * quick starts; build the {@link UnifiedJedis} yourself for TLS, passwords or RESP3).
   */
  public static HotKV create(String host, int port) {
    return new HotKV(RedisClient.create(host, port));
  }

  /** A pooled standalone client for {@code host:port} with the given Jedis configuration. */
  public static HotKV create(HostAndPort address, DefaultJedisClientConfig config) {
    return new HotKV(RedisClient.builder().hostAndPort(address).clientConfig(config).build());
  }

  /** The wrapped Jedis client, for every other command. */
  public UnifiedJedis jedis() {
    return jedis;
  }

  /** {@code GCRA.LIMIT}, {@code GCRA.PEEK}, {@code GCRA.RESET} and {@code CL.THROTTLE}. */
  public Gcra gcra() {
    return gcra;
  }

  /** The named limiters: {@code RATELIMIT.*}. */
  public RateLimit rateLimit() {
    return rateLimit;
  }

  <T> T execute(CommandObject<T> command) {
    return jedis.executeCommand(command);
  }

  /** Closes the wrapped Jedis client (and its pool). */
  @Override
  public void close() {
    jedis.close();
  }
}
