package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * Jedis's {@link JedisCluster} (through the project's {@link HotKV} wrapper for GCRA) against a
 * real 3-shard x 3-node HotKV cluster: routing over all shards, hash tags, CROSSSLOT, GCRA bursts
 * per shard, and a leader SIGKILL in the middle of a workload.
 */
// JedisCluster is deprecated in Jedis 8 in favour of RedisClusterClient (same executor and
// options), but it is the cluster API most applications use, so it is the one tested here.
@SuppressWarnings("deprecation")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class JedisClusterTest {
  private static ShardedCluster cluster;
  private static JedisCluster jedis;
  private static HotKV hotkv;

  @BeforeAll
  static void start() throws Exception {
    cluster = ShardedCluster.start();
    Set<HostAndPort> seeds = new HashSet<>(cluster.nodes());
    jedis =
        new JedisCluster(
            seeds,
            DefaultJedisClientConfig.builder().timeoutMillis(2000).build(),
            new ConnectionPoolConfig(),
            // topologyRefreshPeriod: Jedis otherwise re-reads CLUSTER SLOTS only on a MOVED or
            // after repeated connection failures; a 1 s background refresh picks up a new shard
            // leader (which HotKV records in the slot map within ~1 s) without waiting for one.
            Duration.ofSeconds(1),
            // maxAttempts / maxTotalRetriesDuration: enough redirections and reconnects to
            // cover an election (~1 s) inside one call; the test's own retry (20 s bound)
            // handles what Jedis surfaces instead (CLUSTERDOWN, TRYAGAIN, attempts exhausted).
            10,
            Duration.ofSeconds(5));
    hotkv = new HotKV(jedis);
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (hotkv != null) {
        hotkv.close();
      }
    } finally {
      if (cluster != null) {
        cluster.close();
      }
    }
  }

  /** The workloads' commands through JedisCluster, GCRA through the typed wrapper. */
  static final ClusterWorkload.Ops OPS =
      new ClusterWorkload.Ops() {
        @Override
        public void set(String key, String value) {
          assertEquals("OK", jedis.set(key, value));
        }

        @Override
        public String get(String key) {
          return jedis.get(key);
        }

        @Override
        public boolean gcraAllowed(String key, long periodMillis, long burst) {
          return hotkv.gcra().limit(key, periodMillis, burst).allowed();
        }
      };

  /** What this client surfaces during a failover that an application would retry. */
  static final Predicate<Throwable> RETRYABLE =
      t -> {
        if (t instanceof JedisConnectionException || t instanceof JedisClusterOperationException) {
          return true;
        }
        String m = String.valueOf(t.getMessage());
        return t instanceof JedisDataException
            && (m.startsWith("CLUSTERDOWN") || m.startsWith("TRYAGAIN"));
      };

  @Test
  @Order(1)
  void workloadAcrossShards() {
    // SET/GET on many keys: every key lands on its shard's leader and reads back.
    ClusterWorkload.spreadAcrossShards(cluster, OPS, "jc:k:", 1500);

    // Multi-key commands within one slot (a hash tag) work.
    assertEquals("OK", jedis.mset("{user:1}:a", "1", "{user:1}:b", "2"));
    assertEquals(List.of("1", "2"), jedis.mget("{user:1}:a", "{user:1}:b"));
    assertEquals(2L, jedis.del("{user:1}:a", "{user:1}:b"));

    // Across slots: Jedis refuses MSET (and every keyed command whose keys span slots, RENAME
    // included) itself, before sending anything. The server's own CROSSSLOT reaches the caller,
    // with its exact text, when the command goes through sendCommand routed by a sample key.
    String a = ShardedCluster.keyInShard("jc:x:", 1);
    String b = ShardedCluster.keyInShard("jc:x:", 2);
    JedisClusterOperationException refused =
        assertThrows(JedisClusterOperationException.class, () -> jedis.mset(a, "1", b, "2"));
    assertEquals("Cannot get connection for command with multiple hash slots", refused.getMessage());
    assertThrows(JedisClusterOperationException.class, () -> jedis.rename(a, b));
    JedisDataException crossSlot =
        assertThrows(
            JedisDataException.class,
            () -> jedis.sendCommand(a, Protocol.Command.MSET, a, "1", b, "2"));
    assertEquals("CROSSSLOT Keys in request don't hash to the same slot", crossSlot.getMessage());
    assertNull(jedis.get(a), "nothing written by the refused MSETs");
    assertNull(jedis.get(b), "nothing written by the refused MSETs");

    // GCRA.LIMIT with a burst, on one key in each shard: exactly `burst` admissions.
    long burst = 5;
    for (int s = 1; s <= ShardedCluster.SHARDS; s++) {
      String key = ShardedCluster.keyInShard("jc:gcra:", s);
      int allowed = 0;
      for (int i = 0; i < burst + 5; i++) {
        GcraResult r = hotkv.gcra().limit(key, 3_600_000, burst);
        assertEquals(burst, r.limit());
        if (r.allowed()) {
          allowed++;
          assertEquals(burst - allowed, r.remaining());
        } else {
          assertTrue(r.retryAfterMillis() > 0, "denied with a retry time: " + r);
        }
      }
      assertEquals(burst, allowed, "admissions on " + key + " (shard s" + s + ")");
    }

    // GCRA.LIMITALL routes by its keys: two limits under one hash tag in each shard, all or
    // nothing (the tighter limit of 2 stops the third request, which records nothing), and
    // GCRA.REFUND gives a unit back on the same shard.
    for (int s = 1; s <= ShardedCluster.SHARDS; s++) {
      String tag = "{" + ShardedCluster.keyInShard("jc:all:", s) + "}";
      GcraLimitSpec wide = new GcraLimitSpec(tag + ":hour", 3_600_000, 10);
      GcraLimitSpec tight = new GcraLimitSpec(tag + ":min", 60_000, 2);
      assertTrue(hotkv.gcra().limitAll(wide, tight).allowed());
      GcraLimitAllResult second = hotkv.gcra().limitAll(wide, tight);
      assertTrue(second.allowed());
      assertEquals(8, second.limits().get(0).remaining());
      GcraLimitAllResult third = hotkv.gcra().limitAll(wide, tight);
      assertTrue(third.denied() && third.retryAfterMillis() > 0, "denied by the tight limit: " + third);
      assertEquals(7, third.limits().get(0).remaining(), "what the wide limit would have left");
      assertEquals(1, hotkv.gcra().refund(tight.key(), 60_000, 2).remaining());
      assertTrue(hotkv.gcra().limitAll(wide, tight).allowed());
      // Three admissions recorded; PEEK also counts the unit its request would use.
      assertEquals(6, hotkv.gcra().peek(wide.key(), 3_600_000, 10).remaining());
      try (Jedis direct = cluster.direct(cluster.leaderOf(s))) {
        assertEquals(2L, direct.exists(wide.key(), tight.key()), "both keys on shard s" + s + "'s leader");
      }
    }
    // Keys in different shards: Jedis refuses the command before sending it.
    JedisClusterOperationException limitAllRefused =
        assertThrows(
            JedisClusterOperationException.class,
            () -> hotkv.gcra().limitAll(new GcraLimitSpec(a, 1000, 1), new GcraLimitSpec(b, 1000, 1)));
    assertEquals("Cannot get connection for command with multiple hash slots", limitAllRefused.getMessage());
  }

  @Test
  @Order(9)
  void leaderFailover() throws Exception {
    ClusterWorkload.FailoverReport r = ClusterWorkload.failover(cluster, OPS, RETRYABLE, 2, 40);
    System.out.println("JedisCluster failover: " + r);
  }

  /**
   * What the slot-move test retries itself: Jedis follows MOVED on its own (and refreshes its slot
   * cache), but surfaces the source's {@code -TRYAGAIN Slot N is being moved to another shard}
   * as a plain JedisDataException: the command was refused, not run, so resending it is safe.
   * CLUSTERDOWN (a shard electing, which a loaded machine can cause) is refused unrun as well.
   * Nothing else is retried: a timeout or connection error leaves a GCRA.LIMIT's outcome unknown,
   * and the test counts admissions exactly (no node dies here, so one would be a bug).
   */
  static final Predicate<Throwable> MOVE_RETRYABLE =
      t -> t instanceof JedisDataException
          && (String.valueOf(t.getMessage()).startsWith("TRYAGAIN")
              || String.valueOf(t.getMessage()).startsWith("CLUSTERDOWN"));

  @Test
  @Order(3)
  void slotMovesUnderLoad() throws Exception {
    ClusterWorkload.SlotMoveReport r =
        ClusterWorkload.slotMoves(cluster, OPS, MOVE_RETRYABLE, JedisClusterTest::routedPort, 300);
    System.out.println("JedisCluster slot moves: " + r);
  }

  /** The port JedisCluster's slot cache sends {@code slot} to (borrowing a pooled connection). */
  static int routedPort(int slot) {
    try (Connection c = jedis.getConnectionFromSlot(slot)) {
      return c.getHostAndPort().getPort();
    }
  }
}
