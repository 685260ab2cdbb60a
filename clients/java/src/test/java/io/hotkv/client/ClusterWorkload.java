package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * The client-independent half of the cluster tests: a bounded retry for the errors a cluster
 * client may surface while a shard fails over, and the failover workload itself, run through
 * whichever client implements {@link Ops}.
 */
final class ClusterWorkload {
  private ClusterWorkload() {}

  /** The commands the workload needs, through one cluster client. */
  interface Ops {
    void set(String key, String value);

    String get(String key);

    /** GCRA.LIMIT key period burst: true when allowed (reply field 1 is 0). */
    boolean gcraAllowed(String key, long periodMillis, long burst);
  }

  /**
   * How long one operation may keep failing (MOVED/CLUSTERDOWN/TRYAGAIN/connection errors the
   * client does not absorb itself) before the test fails: the brief's bound for a failover.
   */
  static final long OP_BOUND_MS = 20_000;

  /** The errors retried, by class and first word, with how often each was seen. */
  static final class Retries {
    final Map<String, Integer> seen = new HashMap<>();
    int total;

    void record(Throwable t) {
      String msg = String.valueOf(t.getMessage());
      int sp = msg.indexOf(' ');
      String word = sp > 0 ? msg.substring(0, Math.min(sp, 40)) : msg;
      seen.merge(t.getClass().getSimpleName() + ": " + word, 1, Integer::sum);
      total++;
    }

    @Override
    public String toString() {
      return seen.toString();
    }
  }

  /**
   * Runs {@code op} until it returns, retrying what {@code retryable} accepts for at most
   * {@link #OP_BOUND_MS}; anything else, or running past the bound, fails the test.
   */
  static <T> T retrying(
      String what, Predicate<Throwable> retryable, Retries retries, Supplier<T> op) {
    long deadline = System.nanoTime() + OP_BOUND_MS * 1_000_000L;
    while (true) {
      try {
        return op.get();
      } catch (RuntimeException e) {
        if (!retryable.test(e)) {
          throw e;
        }
        retries.record(e);
        if (System.nanoTime() > deadline) {
          throw new AssertionError(what + " kept failing for " + OP_BOUND_MS + " ms", e);
        }
        sleep(50);
      }
    }
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /** What {@link #failover} observed, for the test's log. */
  record FailoverReport(
      int killedNode, int newLeader, long firstSuccessAfterKillMs, long slowestOpMs,
      int iterations, String retries, String admissions) {}

  /**
   * Runs SET/GET on keys of all three shards and GCRA.LIMIT on one key per shard (burst
   * {@code burst}, period one hour, so no unit refills while the test runs: the emission interval
   * 3600 s / burst stays far above the test's length), SIGKILLs shard {@code victimShard}'s
   * leader about a second in, and goes on until the failover is over and every GCRA key has been
   * denied. Asserts that every operation succeeds within {@link #OP_BOUND_MS}, every GET returns
   * the value last written, per key the admissions counted from replies never exceed the burst
   * (a request whose reply was lost to the kill may or may not have been admitted, so it is not
   * counted, but it bounds how many admissions the test can have missed), and once denied a key
   * stays denied.
   */
  static FailoverReport failover(
      ShardedCluster cluster, Ops ops, Predicate<Throwable> retryable, int victimShard, long burst)
      throws Exception {
    final long period = 3_600_000;
    final int shards = ShardedCluster.SHARDS;
    String tag = Long.toString(System.nanoTime(), 36);
    List<List<String>> dataKeys = new ArrayList<>();
    String[] gcraKeys = new String[shards + 1];
    for (int s = 1; s <= shards; s++) {
      List<String> ks = new ArrayList<>();
      for (int j = 0; j < 4; j++) {
        ks.add(ShardedCluster.keyInShard("fo:" + tag + ":d" + j + ":", s));
      }
      dataKeys.add(ks);
      gcraKeys[s] = ShardedCluster.keyInShard("fo:" + tag + ":gcra:", s);
    }
    long[] counted = new long[shards + 1];
    long[] lostGcra = new long[shards + 1];
    boolean[] denied = new boolean[shards + 1];
    Retries[] retries = new Retries[shards + 1];
    for (int s = 1; s <= shards; s++) {
      retries[s] = new Retries();
    }
    Map<String, String> acked = new HashMap<>();

    int victim = cluster.leaderOf(victimShard);
    long start = System.nanoTime();
    long killedAt = 0;
    long firstSuccessAfterKill = -1;
    long slowest = 0;
    int iter = 0;
    while (true) {
      long now = System.nanoTime();
      if (killedAt == 0 && now - start >= 1_000_000_000L) {
        killedAt = System.nanoTime();
        cluster.kill(victim);
        System.out.println("killed node " + victim + " in "
            + (System.nanoTime() - killedAt) / 1_000_000 + " ms");
      }
      for (int s = 1; s <= shards; s++) {
        Retries r = retries[s];
        String key = dataKeys.get(s - 1).get(iter % 4);
        String value = "v" + iter;
        long t0 = System.nanoTime();
        retrying("SET " + key, retryable, r, () -> {
          ops.set(key, value);
          return null;
        });
        acked.put(key, value);
        String got = retrying("GET " + key, retryable, r, () -> ops.get(key));
        assertEquals(value, got, "GET " + key + " after an acknowledged SET");
        if (!denied[s]) {
          String gk = gcraKeys[s];
          int before = r.total;
          boolean allowed = retrying("GCRA.LIMIT " + gk, retryable, r,
              () -> ops.gcraAllowed(gk, period, burst));
          lostGcra[s] += r.total - before;
          if (allowed) {
            counted[s]++;
            assertTrue(counted[s] <= burst,
                "shard s" + s + ": " + counted[s] + " admissions counted for burst " + burst);
          } else {
            denied[s] = true;
          }
        }
        long took = (System.nanoTime() - t0) / 1_000_000;
        slowest = Math.max(slowest, took);
        if (s == victimShard && killedAt != 0 && firstSuccessAfterKill < 0) {
          firstSuccessAfterKill = (System.nanoTime() - killedAt) / 1_000_000;
        }
      }
      iter++;
      boolean allDenied = denied[1] && denied[2] && denied[3];
      if (killedAt != 0 && allDenied && System.nanoTime() - killedAt > 2_000_000_000L) {
        break;
      }
      if (System.nanoTime() - start > 45_000_000_000L) {
        fail("the failover workload did not finish in 45 s: denied=" + denied[1] + ","
            + denied[2] + "," + denied[3]);
      }
      sleep(25);
    }

    // After the failover: the new leader has every acknowledged write, and every GCRA key,
    // exhausted, stays denied (no admission was lost or re-granted by the new leader).
    for (Map.Entry<String, String> e : acked.entrySet()) {
      Retries r = retries[ShardedCluster.shardOf(ClusterSlots.slot(e.getKey()))];
      assertEquals(e.getValue(), retrying("GET " + e.getKey(), retryable, r,
          () -> ops.get(e.getKey())), "GET " + e.getKey() + " after the failover");
    }
    StringBuilder adm = new StringBuilder();
    for (int s = 1; s <= shards; s++) {
      String gk = gcraKeys[s];
      Retries r = retries[s];
      for (int j = 0; j < 3; j++) {
        assertTrue(!retrying("GCRA.LIMIT " + gk, retryable, r,
            () -> ops.gcraAllowed(gk, period, burst)), "GCRA.LIMIT " + gk + " after exhaustion");
      }
      // The server denied only once it had admitted `burst`: the admissions the test did not
      // see are at most the requests whose reply it lost.
      assertTrue(counted[s] + lostGcra[s] >= burst,
          "shard s" + s + ": counted " + counted[s] + " + lost " + lostGcra[s] + " < " + burst);
      if (s != victimShard && r.total == 0) {
        assertEquals(burst, counted[s], "shard s" + s + " (no failover, no retries)");
      }
      adm.append("s").append(s).append('=').append(counted[s]).append("(lost ")
          .append(lostGcra[s]).append(") ");
    }
    int newLeader = cluster.leaderOf(victimShard);
    assertNotEquals(victim, newLeader, "shard s" + victimShard + " elected a new leader");
    StringBuilder rs = new StringBuilder();
    for (int s = 1; s <= shards; s++) {
      rs.append("s").append(s).append('=').append(retries[s]).append(' ');
    }
    return new FailoverReport(victim, newLeader, firstSuccessAfterKill, slowest, iter,
        rs.toString().trim(), adm.toString().trim());
  }
}
