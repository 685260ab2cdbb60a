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
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
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
 * {@code [(s-1)*16384/3, s*16384/3-1]}. The base is drawn at random in 40000..44890 and used only
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
        int b = 40000 + rnd.nextInt(4890);
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
        try {
          new ServerSocket(base + off + i, 1, InetAddress.getByName(HOST)).close();
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
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  /** The nearest directory at or above the working directory holding scripts/cluster-demo.sh. */
  private static Path repoRoot() throws IOException {
    Path d = Path.of("").toAbsolutePath();
    while (d != null) {
      if (Files.isRegularFile(d.resolve("scripts/cluster-demo.sh"))) {
        return d;
      }
      d = d.getParent();
    }
    throw new IOException("cannot find scripts/cluster-demo.sh above the working directory");
  }
}
