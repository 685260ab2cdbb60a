package io.hotkv.client;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * A sharded HotKV cluster for the cluster-client tests: {@value #SHARDS} shards of {@value #NODES}
 * Raft nodes each, started by the repository's own {@code scripts/cluster-demo.sh} (so the tests
 * run the cluster exactly as documented) on a free port range, and always torn down.
 *
 * <p>Node i (1..9) listens on {@code base+i} for clients, {@code base+100+i} for its shard's Raft
 * group and {@code base+10100+i} for the meta group; shard s holds nodes 3s-2..3s and the slots
 * {@code [(s-1)*16384/3, s*16384/3-1]}. The base is drawn at random in 40000..54889 and used only
 * when all 27 ports are free (other helpers' tests and outgoing connections use ports there too);
 * a start that fails anyway (a port taken in between) is cleaned up and retried twice.
 *
 * <p>Teardown kills every node by the pid it reports in {@code INFO server} (a JVM shutdown hook
 * does the same if the run is interrupted) and then runs the script's {@code clean}, which also
 * shuts down, by port, any node that started before a failed formation.
 */
final class ShardedCluster implements AutoCloseable {
  static final int SHARDS = 3;
  static final int NODES = 3;
  static final String HOST = "127.0.0.1";

  final int base;
  private final Path root;
  private final Path dir;
  private final Map<Integer, ProcessHandle> nodes = new ConcurrentHashMap<>();
  private final Thread hook;

  private ShardedCluster(int base, Path root, Path dir) {
    this.base = base;
    this.root = root;
    this.dir = dir;
    this.hook = new Thread(this::killAll);
  }

  static ShardedCluster start() throws Exception {
    Path root = repoRoot();
    Random rnd = new Random();
    IOException last = null;
    for (int attempt = 0; attempt < 3; attempt++) {
      // The range also holds other processes' ephemeral (outgoing) ports, so a random base
      // often hits a busy port: draw until all 27 are free.
      int base = -1;
      for (int draw = 0; draw < 1000 && base < 0; draw++) {
        int b = 40000 + rnd.nextInt(14890);
        if (rangeFree(b)) {
          base = b;
        }
      }
      if (base < 0) {
        break;
      }
      Path dir = Files.createTempDirectory("hotkv-java-cluster-");
      ShardedCluster c = new ShardedCluster(base, root, dir);
      Runtime.getRuntime().addShutdownHook(c.hook);
      try {
        c.script("start", 120);
        for (int i = 1; i <= SHARDS * NODES; i++) {
          c.recordPid(i);
        }
        return c;
      } catch (IOException e) {
        last = e;
        c.close();
      }
    }
    throw last != null ? last : new IOException("no free port range for a 3x3 cluster");
  }

  /** Every port a node of a cluster at {@code base} binds is free right now. */
  private static boolean rangeFree(int base) {
    for (int off : new int[] {0, 100, 10100}) {
      for (int i = 1; i <= SHARDS * NODES; i++) {
        // SO_REUSEADDR, as the Go server's listeners set it: a port held only by a TIME-WAIT
        // socket (thousands of them when other tests hammer loopback) is free for a server.
        try (ServerSocket ss = new ServerSocket()) {
          ss.setReuseAddress(true);
          ss.bind(new InetSocketAddress(InetAddress.getByName(HOST), base + off + i), 1);
        } catch (IOException e) {
          return false;
        }
      }
    }
    return true;
  }

  private void script(String action, int timeoutSeconds) throws IOException, InterruptedException {
    Path log = dir.resolve("cluster-demo-" + action + ".log");
    ProcessBuilder pb =
        new ProcessBuilder("bash", "scripts/cluster-demo.sh", action)
            .directory(root.toFile())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile());
    pb.environment().put("BASE", Integer.toString(base));
    pb.environment().put("SHARDS", Integer.toString(SHARDS));
    pb.environment().put("NODES", Integer.toString(NODES));
    pb.environment().put("DEMO_DIR", dir.resolve("nodes").toString());
    Process p = pb.start();
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
      throw new IOException("cluster-demo.sh " + action + " ran past " + timeoutSeconds + "s:\n"
          + Files.readString(log));
    }
    if (p.exitValue() != 0) {
      throw new IOException("cluster-demo.sh " + action + " exited with " + p.exitValue() + ":\n"
          + Files.readString(log));
    }
  }

  private void recordPid(int node) {
    String info = info(port(node), "server");
    for (String line : info.split("\r?\n")) {
      if (line.startsWith("process_id:")) {
        long pid = Long.parseLong(line.substring("process_id:".length()).trim());
        ProcessHandle.of(pid).ifPresent(h -> nodes.put(node, h));
        return;
      }
    }
    throw new IllegalStateException("no process_id in INFO server of node " + node);
  }

  /** The client port of node {@code i} (1-based). */
  int port(int node) {
    return base + node;
  }

  /** Every node's client address: the seeds a cluster client starts from. */
  List<HostAndPort> nodes() {
    List<HostAndPort> out = new ArrayList<>();
    for (int i = 1; i <= SHARDS * NODES; i++) {
      out.add(new HostAndPort(HOST, port(i)));
    }
    return out;
  }

  /** The first and last slot of shard {@code s} (1-based), as the script assigns them. */
  static int[] slotRange(int shard) {
    return new int[] {(shard - 1) * 16384 / SHARDS, shard * 16384 / SHARDS - 1};
  }

  /** The shard (1-based) owning {@code slot}. */
  static int shardOf(int slot) {
    for (int s = 1; s <= SHARDS; s++) {
      if (slot <= slotRange(s)[1]) {
        return s;
      }
    }
    throw new IllegalArgumentException("slot " + slot);
  }

  /** A key {@code prefix<n>} whose slot belongs to shard {@code s}. */
  static String keyInShard(String prefix, int shard) {
    for (int n = 0; ; n++) {
      String k = prefix + n;
      if (shardOf(ClusterSlots.slot(k)) == shard) {
        return k;
      }
    }
  }

  /** The node (1-based) that leads shard {@code s}'s Raft group now, by asking its members. */
  int leaderOf(int shard) {
    for (int i = (shard - 1) * NODES + 1; i <= shard * NODES; i++) {
      if (!alive(i)) {
        continue;
      }
      try (Jedis j = direct(i)) {
        Object reply = j.sendCommand(new Support.Raw("RAFT"), "STATUS");
        List<?> fields = (List<?>) reply;
        for (int f = 0; f + 1 < fields.size(); f += 2) {
          String k = text(fields.get(f));
          if (k.equals("role") && text(fields.get(f + 1)).equals("leader")) {
            return i;
          }
        }
      } catch (RuntimeException e) {
        // unreachable node: ask the next
      }
    }
    throw new IllegalStateException("shard s" + shard + " has no leader now");
  }

  boolean alive(int node) {
    ProcessHandle h = nodes.get(node);
    return h != null && h.isAlive();
  }

  /** SIGKILL node {@code i}: a crash, no clean shutdown, no leadership hand-off. */
  void kill(int node) throws InterruptedException {
    ProcessHandle h = nodes.get(node);
    if (h == null) {
      throw new IllegalStateException("no process for node " + node);
    }
    h.destroyForcibly();
    // Wait until the port refuses connections: the kernel closes a killed process's sockets at
    // once, while the process itself stays visible (a zombie) until init reaps it, which here can
    // take over a second, long enough for the shard to finish its failover before we return.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      try (Socket sock = new Socket()) {
        sock.connect(new InetSocketAddress(HOST, port(node)), 100);
      } catch (IOException e) {
        return;
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("node " + node + " still accepts connections 10 s after SIGKILL");
      }
      Thread.sleep(2);
    }
  }

  /** A plain (non-cluster) connection to node {@code i}, for checks that bypass routing. */
  Jedis direct(int node) {
    return new Jedis(new HostAndPort(HOST, port(node)),
        DefaultJedisClientConfig.builder().timeoutMillis(2000).build());
  }

  String info(int port, String section) {
    try (Jedis j = new Jedis(new HostAndPort(HOST, port),
        DefaultJedisClientConfig.builder().timeoutMillis(2000).build())) {
      return j.info(section);
    }
  }

  /**
   * {@code CLUSTERX MIGRATE start end s<target>}, sent to node 1 (any node accepts it): the move
   * runs in the background; the reply is OK once it is started.
   */
  void migrate(int start, int end, int targetShard) throws InterruptedException {
    // -TRYAGAIN (e.g. "the cluster's meta group has no leader" while it elects one) means the
    // move was not started: resend it, for at most 10 s.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      try (Jedis j = direct(1)) {
        Object reply = j.sendCommand(new Support.Raw("CLUSTERX"), "MIGRATE",
            Integer.toString(start), Integer.toString(end), "s" + targetShard);
        if (!"OK".equals(text(reply))) {
          throw new IllegalStateException("CLUSTERX MIGRATE " + start + " " + end + " s"
              + targetShard + ": " + text(reply));
        }
        return;
      } catch (redis.clients.jedis.exceptions.JedisDataException e) {
        if (!String.valueOf(e.getMessage()).startsWith("TRYAGAIN") || System.nanoTime() > deadline) {
          throw e;
        }
      }
      Thread.sleep(50);
    }
  }

  /** {@code CLUSTERX STATUS} of node {@code i}, as a map of its fields. */
  Map<String, String> clusterxStatus(int node) {
    try (Jedis j = direct(node)) {
      List<?> fields = (List<?>) j.sendCommand(new Support.Raw("CLUSTERX"), "STATUS");
      Map<String, String> out = new java.util.LinkedHashMap<>();
      for (int f = 0; f + 1 < fields.size(); f += 2) {
        out.put(text(fields.get(f)), text(fields.get(f + 1)));
      }
      return out;
    }
  }

  /** The client port node {@code i}'s CLUSTER SLOTS gives as the master of {@code slot}, or -1. */
  int slotOwnerPort(int node, int slot) {
    try (Jedis j = direct(node)) {
      for (Object o : j.clusterSlots()) {
        List<?> range = (List<?>) o;
        if (((Long) range.get(0)) <= slot && slot <= ((Long) range.get(1))) {
          return ((Long) ((List<?>) range.get(2)).get(1)).intValue();
        }
      }
    }
    return -1;
  }

  /**
   * Waits (at most {@code timeoutMs}) until the move of {@code start..end} from shard {@code from}
   * to shard {@code to} is over: the source's leader runs no migration and reports a cluster
   * epoch above {@code epochBefore}, and every live node's CLUSTER SLOTS gives both ends of the range
   * to {@code to}'s leader. Returns how long that took.
   */
  long awaitMove(int start, int end, int from, int to, long epochBefore, long timeoutMs)
      throws InterruptedException {
    long t0 = System.nanoTime();
    long deadline = t0 + timeoutMs * 1_000_000L;
    String last = "";
    while (true) {
      try {
        Map<String, String> st = clusterxStatus(leaderOf(from));
        last = st.toString();
        boolean done = "0".equals(st.get("migrations"))
            && Long.parseLong(st.get("epoch")) > epochBefore;
        int target = port(leaderOf(to));
        for (int i = 1; done && i <= SHARDS * NODES; i++) {
          done = !alive(i) || slotOwnerPort(i, start) == target && slotOwnerPort(i, end) == target;
        }
        if (done) {
          return (System.nanoTime() - t0) / 1_000_000;
        }
      } catch (RuntimeException e) {
        last = e.toString();
      }
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("slots " + start + "-" + end + " not moved from s" + from
            + " to s" + to + " within " + timeoutMs + " ms; last status: " + last);
      }
      Thread.sleep(10);
    }
  }

  /** Each live node's shard role, migrations, epoch and owner of {@code slot}: failure context. */
  String describe(int slot) {
    StringBuilder sb = new StringBuilder();
    for (int i = 1; i <= SHARDS * NODES; i++) {
      if (!alive(i)) {
        continue;
      }
      sb.append("\n  n").append(i).append(": ");
      try (Jedis j = direct(i)) {
        List<?> fields = (List<?>) j.sendCommand(new Support.Raw("RAFT"), "STATUS");
        for (int f = 0; f + 1 < fields.size(); f += 2) {
          String k = text(fields.get(f));
          if (k.equals("role") || k.equals("leader") || k.equals("term")) {
            sb.append(k).append('=').append(text(fields.get(f + 1))).append(' ');
          }
        }
        Map<String, String> st = clusterxStatus(i);
        sb.append("migrations=").append(st.get("migrations")).append(" epoch=")
            .append(st.get("epoch")).append(" last_move=").append(st.get("last_move"))
            .append(" slot ").append(slot).append("->").append(slotOwnerPort(i, slot));
      } catch (RuntimeException e) {
        sb.append(e);
      }
    }
    return sb.toString();
  }

  /** The cluster epoch (bumped by every completed move) as node {@code i} reports it. */
  long epoch(int node) {
    return Long.parseLong(clusterxStatus(node).get("epoch"));
  }

  private static String text(Object o) {
    return o instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(o);
  }

  private void killAll() {
    for (ProcessHandle h : nodes.values()) {
      h.destroyForcibly();
    }
    for (ProcessHandle h : nodes.values()) {
      try {
        h.onExit().get(10, TimeUnit.SECONDS);
      } catch (Exception e) {
        // best effort: the script's clean below shuts down by port as well
      }
    }
  }

  @Override
  public void close() throws IOException {
    killAll();
    try {
      script("clean", 60);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException e) {
      // the nodes are already dead; a failing clean only leaves the temp dir behind
    }
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // the JVM is already shutting down: the hook runs anyway
    }
    TestServer.deleteTree(dir);
  }

  /** The nearest directory at or above the working directory holding scripts/cluster-demo.sh. */
  private static Path repoRoot() throws IOException {
    return TestServer.dirHolding("scripts/cluster-demo.sh", "");
  }
}
