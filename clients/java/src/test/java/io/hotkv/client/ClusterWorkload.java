package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.IntUnaryOperator;
import java.util.function.Predicate;
import java.util.function.Supplier;
import redis.clients.jedis.Jedis;

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
   * SET/GET on {@code n} keys named {@code prefix + i}: every key reads back through the client,
   * and the keys really are spread: each shard's leader holds exactly its share (nothing else was
   * written yet, so this runs first), read over a plain connection that bypasses the client's
   * routing.
   */
  static void spreadAcrossShards(ShardedCluster cluster, Ops ops, String prefix, int n) {
    int[] perShard = new int[ShardedCluster.SHARDS + 1];
    for (int i = 0; i < n; i++) {
      String k = prefix + i;
      ops.set(k, "v" + i);
      perShard[ShardedCluster.shardOf(ClusterSlots.slot(k))]++;
    }
    for (int i = 0; i < n; i++) {
      assertEquals("v" + i, ops.get(prefix + i));
    }
    for (int s = 1; s <= ShardedCluster.SHARDS; s++) {
      assertTrue(perShard[s] > n / 5, "shard s" + s + " got " + perShard[s] + " keys");
      try (Jedis direct = cluster.direct(cluster.leaderOf(s))) {
        assertEquals(perShard[s], direct.dbSize(), "DBSIZE of shard s" + s + "'s leader");
      }
    }
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

  /** The slot range the slot-move test moves from s1 to s2 and back. */
  static final int MOVE_START = 0;

  static final int MOVE_END = 3000;

  /** What {@link #slotMoves} observed, for the test's log. */
  record SlotMoveReport(
      long toS2Ms, long backToS1Ms, int iterations, String opsPerPhase, String retries,
      String retriesPerPhase, String gcra) {}

  private static final String[] PHASES = {"before", "moving-to-s2", "on-s2", "moving-back", "after"};

  /**
   * Runs, on a thread of its own, SET/GET with verification and GCRA.LIMIT (period 10^9 ms, so
   * nothing refills) on keys whose slots all lie in {@link #MOVE_START}..{@link #MOVE_END} (s1's),
   * while this thread moves that range to s2 with CLUSTERX MIGRATE, waits until the move is over,
   * checks the client routes the range to s2's leader, moves it back to s1 and waits again.
   *
   * <p>Asserts: every operation succeeds (errors {@code retryable} accepts are retried, bounded by
   * {@link #OP_BOUND_MS}; anything else fails the test), every GET returns the value last written,
   * and per GCRA key the admissions counted equal the burst exactly, the first denial coming right
   * after the burst-th admission and every later request denied (nothing is killed, so no reply is
   * lost and nothing may be left uncounted). One key (burst 3) is spent before the first move and
   * must stay denied on both shards; the others (burst {@code burst}) are spent at most a fifth
   * of the burst per phase (before, moving to s2, on s2, moving back, after), so their limiter
   * state crosses both moves mid-burst and is spent on s1 after them. Finally {@code clientRoute} (slot to the port the client would send it to) must
   * give s1's leader for the range again within a few seconds.
   */
  static SlotMoveReport slotMoves(
      ShardedCluster cluster, Ops ops, Predicate<Throwable> retryable, IntUnaryOperator clientRoute,
      long burst) throws Exception {
    final long period = 1_000_000_000L;
    String tag = Long.toString(System.nanoTime(), 36);
    List<String> dataKeys = keysInRange("sm:" + tag + ":d", 24);
    List<String> gcraKeys = keysInRange("sm:" + tag + ":g", 4);
    long[] bursts = {3, burst, burst, burst};
    long[] counted = new long[gcraKeys.size()];
    boolean[] denied = new boolean[gcraKeys.size()];
    Map<String, String> acked = new HashMap<>();
    Retries retries = new Retries();
    int[] opsPerPhase = new int[PHASES.length];
    int[] retriesPerPhase = new int[PHASES.length];
    int[] allowedPerPhase = new int[PHASES.length];
    int[] iterations = new int[1];
    final int[] phase = new int[1];
    final Object lock = new Object();

    ExecutorService pool = Executors.newSingleThreadExecutor();
    Future<?> work = pool.submit(() -> {
      int iter = 0;
      while (true) {
        int ph;
        synchronized (lock) {
          ph = phase[0];
        }
        int before = retries.total;
        String k = dataKeys.get(iter % dataKeys.size());
        String v = "v" + iter;
        retrying("SET " + k, retryable, retries, () -> {
          ops.set(k, v);
          return null;
        });
        acked.put(k, v);
        assertEquals(v, retrying("GET " + k, retryable, retries, () -> ops.get(k)), "GET " + k);
        String other = dataKeys.get((iter * 7 + 3) % dataKeys.size());
        assertEquals(acked.get(other), retrying("GET " + other, retryable, retries,
            () -> ops.get(other)), "GET " + other + " (last written " + acked.get(other) + ")");
        int sent = 3;
        boolean allDenied = true;
        for (int g = 0; g < gcraKeys.size(); g++) {
          // Spend the big keys a fifth per phase, so that each move happens mid-burst and the
          // admissions go on from where the other shard left them, whatever the machine's speed.
          if (ph < 4 && g > 0 && counted[g] >= bursts[g] * (ph + 1) / 5) {
            allDenied = false;
            continue;
          }
          String gk = gcraKeys.get(g);
          long b = bursts[g];
          boolean allowed = retrying("GCRA.LIMIT " + gk, retryable, retries,
              () -> ops.gcraAllowed(gk, period, b));
          sent++;
          if (allowed) {
            assertTrue(!denied[g], gk + " admitted after it was denied (phase " + PHASES[ph] + ")");
            counted[g]++;
            allowedPerPhase[ph]++;
            assertTrue(counted[g] <= bursts[g], gk + ": " + counted[g] + " admissions, burst "
                + bursts[g]);
          } else {
            if (!denied[g]) {
              assertEquals(bursts[g], counted[g], gk + " first denied after " + counted[g]
                  + " admissions (phase " + PHASES[ph] + ")");
            }
            denied[g] = true;
          }
          allDenied &= denied[g];
        }
        synchronized (lock) {
          opsPerPhase[ph] += sent;
          retriesPerPhase[ph] += retries.total - before;
        }
        iter++;
        iterations[0] = iter;
        if (ph == 4 && allDenied) {
          return null;
        }
      }
    });

    long toS2;
    long back;
    try {
      Thread.sleep(400);
      setPhase(lock, phase, 1);
      long epoch = cluster.epoch(1);
      cluster.migrate(MOVE_START, MOVE_END, 2);
      toS2 = cluster.awaitMove(MOVE_START, MOVE_END, 1, 2, epoch, 15_000);
      setPhase(lock, phase, 2);
      awaitRoute(clientRoute, cluster.port(cluster.leaderOf(2)), "s2", work);
      Thread.sleep(300);
      setPhase(lock, phase, 3);
      epoch = cluster.epoch(1);
      cluster.migrate(MOVE_START, MOVE_END, 1);
      back = cluster.awaitMove(MOVE_START, MOVE_END, 2, 1, epoch, 15_000);
      setPhase(lock, phase, 4);
      work.get(30, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      System.out.println("slot moves failed in phase " + PHASES[phase[0]] + "; cluster now: "
          + cluster.describe(MOVE_START));
      throw unwrap(e);
    } finally {
      pool.shutdownNow();
      pool.awaitTermination(10, TimeUnit.SECONDS);
    }
    if (work.isDone() && !work.isCancelled()) {
      try {
        work.get();
      } catch (java.util.concurrent.ExecutionException e) {
        throw unwrap(e);
      }
    }

    // After both moves: every key reads back its last value, every GCRA key stays denied, and the
    // client's own slot map sends the range to s1's leader again.
    for (Map.Entry<String, String> e : acked.entrySet()) {
      assertEquals(e.getValue(), retrying("GET " + e.getKey(), retryable, retries,
          () -> ops.get(e.getKey())), "GET " + e.getKey() + " after the moves");
    }
    for (int g = 0; g < gcraKeys.size(); g++) {
      String gk = gcraKeys.get(g);
      long b = bursts[g];
      assertTrue(!retrying("GCRA.LIMIT " + gk, retryable, retries,
          () -> ops.gcraAllowed(gk, period, b)), gk + " after exhaustion");
      assertEquals(bursts[g], counted[g], "admissions on " + gk);
    }
    for (int p = 1; p <= 3; p++) {
      assertTrue(opsPerPhase[p] > 0, "no operation ran during phase " + PHASES[p]);
    }
    assertTrue(allowedPerPhase[4] > 0 && allowedPerPhase[0] + allowedPerPhase[1] > 0,
        "the big GCRA keys were spent across the moves");
    awaitRoute(clientRoute, cluster.port(cluster.leaderOf(1)), "s1", null);

    StringBuilder o = new StringBuilder();
    StringBuilder rp = new StringBuilder();
    for (int p = 0; p < PHASES.length; p++) {
      o.append(PHASES[p]).append('=').append(opsPerPhase[p]).append("(admitted ")
          .append(allowedPerPhase[p]).append(") ");
      rp.append(PHASES[p]).append('=').append(retriesPerPhase[p]).append(' ');
    }
    StringBuilder gc = new StringBuilder();
    for (int g = 0; g < gcraKeys.size(); g++) {
      gc.append(gcraKeys.get(g)).append('=').append(counted[g]).append('/').append(bursts[g])
          .append(' ');
    }
    return new SlotMoveReport(toS2, back, iterations[0], o.toString().trim(), retries.toString(),
        rp.toString().trim(), gc.toString().trim());
  }

  /** The workload thread's failure, as thrown there (an AssertionError stays one). */
  private static Exception unwrap(java.util.concurrent.ExecutionException e) {
    if (e.getCause() instanceof Error err) {
      throw err;
    }
    return e.getCause() instanceof Exception ex ? ex : e;
  }

  private static void setPhase(Object lock, int[] phase, int p) {
    synchronized (lock) {
      phase[0] = p;
    }
  }

  /** {@code n} keys {@code prefix<i>} whose slots lie in the moved range, on distinct slots. */
  private static List<String> keysInRange(String prefix, int n) {
    List<String> out = new ArrayList<>();
    java.util.Set<Integer> slots = new java.util.HashSet<>();
    for (int i = 0; out.size() < n; i++) {
      String k = prefix + i;
      int slot = ClusterSlots.slot(k);
      if (slot >= MOVE_START && slot <= MOVE_END && slots.add(slot)) {
        out.add(k);
      }
    }
    return out;
  }

  /**
   * Waits up to 5 s until the client's slot map sends both ends and the middle of the moved
   * range to {@code port}; fails early if {@code work} (the workload) failed meanwhile.
   */
  private static void awaitRoute(IntUnaryOperator clientRoute, int port, String shard, Future<?> work)
      throws Exception {
    long deadline = System.nanoTime() + 5_000_000_000L;
    int[] slots = {MOVE_START, (MOVE_START + MOVE_END) / 2, MOVE_END};
    while (true) {
      boolean ok = true;
      String seen = "";
      for (int slot : slots) {
        int p = clientRoute.applyAsInt(slot);
        seen += slot + "->" + p + " ";
        ok &= p == port;
      }
      if (ok) {
        return;
      }
      if (work != null && work.isDone()) {
        work.get();
      }
      if (System.nanoTime() > deadline) {
        fail("the client's slot map does not route slots " + MOVE_START + "-" + MOVE_END + " to "
            + shard + "'s leader (port " + port + ") 5 s after the move: " + seen.trim());
      }
      Thread.sleep(20);
    }
  }
}
