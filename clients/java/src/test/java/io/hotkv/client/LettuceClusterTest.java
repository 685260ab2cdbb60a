package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.lettuce.core.KeyValue;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisURI;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.sync.RedisAdvancedClusterCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.ArrayOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import redis.clients.jedis.HostAndPort;

/**
 * Lettuce's {@link RedisClusterClient} against a real 3-shard x 3-node HotKV cluster: routing over
 * all shards, hash tags, cross-slot commands, GCRA bursts per shard (GCRA.LIMIT sent with {@code
 * dispatch}, routed by its key), and a leader SIGKILL in the middle of a workload. Lettuce builds
 * its topology from CLUSTER NODES (the {@code myself} line included), unlike Jedis.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class LettuceClusterTest {
  private static ShardedCluster cluster;
  private static RedisClusterClient client;
  private static StatefulRedisClusterConnection<String, String> connection;
  private static RedisAdvancedClusterCommands<String, String> redis;

  private static final ProtocolKeyword GCRA_LIMIT =
      new ProtocolKeyword() {
        @Override
        public byte[] getBytes() {
          return "GCRA.LIMIT".getBytes(StandardCharsets.US_ASCII);
        }

        @Override
        public String toString() {
          return "GCRA.LIMIT";
        }
      };

  /**
   * Lettuce logs through netty, which falls back to java.util.logging under slf4j-nop: every
   * refused reconnect to the killed node would be a WARNING in the build log. Held here so the
   * level is not lost with a collected logger.
   */
  private static final Logger LETTUCE_LOG = Logger.getLogger("io.lettuce");

  // enableAllAdaptiveRefreshTriggers is deprecated in Lettuce 7 (triggers are to be listed one
  // by one, by a method deprecated too); it is still the documented way to enable all of them.
  @SuppressWarnings("deprecation")
  @BeforeAll
  static void start() throws Exception {
    LETTUCE_LOG.setLevel(Level.SEVERE);
    cluster = ShardedCluster.start();
    List<RedisURI> seeds = new ArrayList<>();
    for (HostAndPort hp : cluster.nodes()) {
      // The URI's timeout is the command timeout: a command queued on the dead leader's
      // connection would otherwise wait the default 60 s; 2 s lets the test's retry resend it.
      seeds.add(
          RedisURI.builder()
              .withHost(hp.getHost())
              .withPort(hp.getPort())
              .withTimeout(Duration.ofSeconds(2))
              .build());
    }
    client = RedisClusterClient.create(seeds);
    client.setOptions(
        ClusterClientOptions.builder()
            .topologyRefreshOptions(
                ClusterTopologyRefreshOptions.builder()
                    // Lettuce reads the topology once at connect and then only when told to:
                    // the periodic refresh (1 s) and the adaptive triggers (a MOVED, a
                    // reconnect attempt to a dead node, ...) make it learn a shard's new leader
                    // about as soon as HotKV records it in the slot map (~1 s), instead of
                    // following -MOVED from the followers one command at a time.
                    .enablePeriodicRefresh(Duration.ofSeconds(1))
                    .enableAllAdaptiveRefreshTriggers()
                    .adaptiveRefreshTriggersTimeout(Duration.ofMillis(200))
                    .refreshTriggersReconnectAttempts(1)
                    .build())
            // Apply that timeout to every command, also those dispatched (GCRA.LIMIT).
            .timeoutOptions(TimeoutOptions.enabled(Duration.ofSeconds(2)))
            .build());
    connection = client.connect();
    redis = connection.sync();
  }

  @AfterAll
  static void stop() throws Exception {
    try {
      if (connection != null) {
        connection.close();
      }
      if (client != null) {
        client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
      }
    } finally {
      if (cluster != null) {
        cluster.close();
      }
    }
  }

  /** What this client surfaces during a failover that an application would retry. */
  static final Predicate<Throwable> RETRYABLE =
      t -> {
        if (t instanceof RedisCommandTimeoutException || t instanceof RedisConnectionException) {
          return true;
        }
        String m = String.valueOf(t.getMessage());
        if (t instanceof RedisCommandExecutionException) {
          return m.startsWith("CLUSTERDOWN") || m.startsWith("TRYAGAIN") || m.startsWith("MOVED");
        }
        // Commands in flight on the killed node's connection fail with these.
        return t instanceof RedisException
            && (m.contains("Connection closed") || m.contains("Connection disconnected")
                || m.contains("Connection reset"));
      };

  /** GCRA.LIMIT key period burst, routed by Lettuce to the key's shard. */
  static List<Object> gcraLimit(String key, long periodMillis, long burst) {
    CommandArgs<String, String> args =
        new CommandArgs<>(StringCodec.UTF8).addKey(key).add(periodMillis).add(burst);
    return redis.dispatch(GCRA_LIMIT, new ArrayOutput<>(StringCodec.UTF8), args);
  }

  /** The workloads' commands through Lettuce's cluster API, GCRA.LIMIT dispatched. */
  static final ClusterWorkload.Ops OPS =
      new ClusterWorkload.Ops() {
        @Override
        public void set(String key, String value) {
          assertEquals("OK", redis.set(key, value));
        }

        @Override
        public String get(String key) {
          return redis.get(key);
        }

        @Override
        public boolean gcraAllowed(String key, long periodMillis, long burst) {
          return gcraLimit(key, periodMillis, burst).get(0).equals(0L);
        }
      };

  @Test
  @Order(1)
  void topologyFromClusterNodes() {
    // Lettuce's view: 9 nodes, 3 upstreams owning all 16384 slots, one per shard range.
    var partitions = connection.getPartitions();
    assertEquals(9, partitions.size(), partitions.toString());
    for (int s = 1; s <= ShardedCluster.SHARDS; s++) {
      int[] range = ShardedCluster.slotRange(s);
      var owner = partitions.getPartitionBySlot(range[0]);
      assertEquals(owner, partitions.getPartitionBySlot(range[1]));
      assertEquals(cluster.port(cluster.leaderOf(s)), owner.getUri().getPort(), "shard s" + s);
    }
  }

  @Test
  @Order(2)
  void workloadAcrossShards() {
    ClusterWorkload.spreadAcrossShards(cluster, OPS, "lc:k:", 1500);

    // Multi-key commands within one slot (a hash tag) work.
    assertEquals("OK", redis.mset(Map.of("{user:1}:a", "1", "{user:1}:b", "2")));
    assertEquals(
        List.of(KeyValue.just("{user:1}:a", "1"), KeyValue.just("{user:1}:b", "2")),
        redis.mget("{user:1}:a", "{user:1}:b"));

    // Across slots: Lettuce's cluster API splits MSET/MGET/DEL by slot itself (one command per
    // slot, each to its shard), so they succeed; a command it does not split (RENAME) goes to
    // the first key's shard, and the server's CROSSSLOT reaches the caller with its exact text.
    String a = ShardedCluster.keyInShard("lc:x:", 1);
    String b = ShardedCluster.keyInShard("lc:x:", 2);
    assertEquals("OK", redis.mset(Map.of(a, "1", b, "2")));
    assertEquals(List.of(KeyValue.just(a, "1"), KeyValue.just(b, "2")), redis.mget(a, b));
    RedisCommandExecutionException crossSlot =
        assertThrows(RedisCommandExecutionException.class, () -> redis.rename(a, b));
    assertEquals("CROSSSLOT Keys in request don't hash to the same slot", crossSlot.getMessage());
    assertEquals(2L, redis.del(a, b));

    // GCRA.LIMIT with a burst, on one key in each shard: exactly `burst` admissions.
    long burst = 5;
    for (int s = 1; s <= ShardedCluster.SHARDS; s++) {
      String key = ShardedCluster.keyInShard("lc:gcra:", s);
      int allowed = 0;
      for (int i = 0; i < burst + 5; i++) {
        List<Object> r = gcraLimit(key, 3_600_000, burst);
        assertEquals(5, r.size(), r.toString());
        assertEquals(burst, r.get(1));
        if (r.get(0).equals(0L)) {
          allowed++;
          assertEquals(burst - allowed, r.get(2));
          assertEquals(-1L, r.get(3));
        } else {
          assertEquals(1L, r.get(0));
          assertTrue((Long) r.get(3) > 0, "denied with a retry time: " + r);
        }
      }
      assertEquals(burst, allowed, "admissions on " + key + " (shard s" + s + ")");
    }
  }

  @Test
  @Order(9)
  void leaderFailover() throws Exception {
    ClusterWorkload.FailoverReport r = ClusterWorkload.failover(cluster, OPS, RETRYABLE, 2, 40);
    System.out.println("Lettuce failover: " + r);
  }

  /**
   * What the slot-move test retries itself: Lettuce follows MOVED on its own (up to maxRedirects,
   * 5 by default) and an adaptive MOVED trigger refreshes its partitions, but it surfaces the
   * source's {@code -TRYAGAIN Slot N is being moved to another shard} as a
   * RedisCommandExecutionException: the command was refused, not run, so resending it is safe.
   * CLUSTERDOWN (a shard electing, which a loaded machine can cause) is refused unrun as well.
   * Nothing else is retried: a timeout or connection error leaves a GCRA.LIMIT's outcome unknown,
   * and the test counts admissions exactly (no node dies here, so one would be a bug).
   */
  static final Predicate<Throwable> MOVE_RETRYABLE =
      t -> t instanceof RedisCommandExecutionException
          && (String.valueOf(t.getMessage()).startsWith("TRYAGAIN")
              || String.valueOf(t.getMessage()).startsWith("CLUSTERDOWN"));

  @Test
  @Order(4)
  void slotMovesUnderLoad() throws Exception {
    // Lettuce's own slot map: the partition (upstream) its cluster connection routes a slot to.
    ClusterWorkload.SlotMoveReport r =
        ClusterWorkload.slotMoves(cluster, OPS, MOVE_RETRYABLE,
            slot -> connection.getPartitions().getPartitionBySlot(slot).getUri().getPort(), 300);
    System.out.println("Lettuce slot moves: " + r);
  }
}
