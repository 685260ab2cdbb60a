package io.hotkv.client;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real hotkv-server for the tests, one per test JVM: the client is tested against the
 * protocol as the server speaks it, not against mocks.
 *
 * <p>The binary is HOTKV_SERVER_BIN when set, else {@code bin/hotkv-server} of the repository
 * around this module (test.sh builds it), else it is built with {@code go build} into target/.
 * The server listens on a free loopback port with persistence off and DEBUG enabled, because the
 * tests freeze its clock with {@code DEBUG CLOCK SET}. It is killed when the test run ends
 * (JUnit closes it with the root extension store) and, as a backstop, by a shutdown hook.
 */
public final class TestServer implements AutoCloseable {
  public final String host = "127.0.0.1";
  public final int port;
  private final Process process;
  private final Path dir;

  private TestServer(int port, Process process, Path dir) {
    this.port = port;
    this.process = process;
    this.dir = dir;
  }

  static TestServer start() throws Exception {
    Path dir = Files.createTempDirectory("hotkv-java-test-");
    Path bin = binary(dir);
    Exception last = null;
    // Other helpers' tests start servers too: a port that was free a moment ago may be taken.
    for (int attempt = 0; attempt < 5; attempt++) {
      int port = freePort();
      Path data = Files.createDirectories(dir.resolve("data-" + port));
      File log = dir.resolve("server-" + port + ".log").toFile();
      Process p =
          new ProcessBuilder(
                  bin.toString(),
                  "--port", Integer.toString(port),
                  "--bind", "127.0.0.1",
                  "--save", "",
                  "--appendonly", "no",
                  "--dir", data.toString(),
                  "--enable-debug-command", "yes")
              .redirectErrorStream(true)
              .redirectOutput(log)
              .start();
      TestServer s = new TestServer(port, p, dir);
      Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
      try {
        s.awaitPing();
        return s;
      } catch (Exception e) {
        p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        last = new IOException(e.getMessage() + "\n" + Files.readString(log.toPath()), e);
      }
    }
    deleteTree(dir);
    throw last;
  }

  private void awaitPing() throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IOException("hotkv-server exited with " + process.exitValue());
      }
      try (Socket sock = new Socket()) {
        sock.connect(new InetSocketAddress(host, port), 200);
        sock.setSoTimeout(1000);
        sock.getOutputStream().write("PING\r\n".getBytes());
        byte[] buf = new byte[7];
        int n = sock.getInputStream().readNBytes(buf, 0, 7);
        if (n == 7 && new String(buf).equals("+PONG\r\n")) {
          return;
        }
      } catch (IOException e) {
        // not listening yet
      }
      Thread.sleep(20);
    }
    throw new IOException("hotkv-server did not answer PING within 15s");
  }

  private static Path binary(Path tmp) throws Exception {
    String env = System.getenv("HOTKV_SERVER_BIN");
    if (env != null && !env.isEmpty()) {
      return Path.of(env);
    }
    Path root = repoRoot();
    Path built = root.resolve("bin/hotkv-server");
    if (Files.isExecutable(built)) {
      return built;
    }
    Path out = tmp.resolve("hotkv-server");
    Process go =
        new ProcessBuilder("go", "build", "-o", out.toString(), "./cmd/hotkv-server")
            .directory(root.toFile())
            .redirectErrorStream(true)
            .start();
    String log = new String(go.getInputStream().readAllBytes());
    if (go.waitFor() != 0) {
      throw new IOException("go build ./cmd/hotkv-server failed:\n" + log);
    }
    return out;
  }

  /** The nearest directory at or above the working directory holding cmd/hotkv-server. */
  private static Path repoRoot() throws IOException {
    return dirHolding("cmd/hotkv-server", "; set HOTKV_SERVER_BIN");
  }

  /**
   * The nearest directory at or above the working directory holding {@code marker} (the tests
   * run from clients/java, the server's sources and scripts are at the repository root); the
   * error says what is missing, then {@code hint}.
   */
  static Path dirHolding(String marker, String hint) throws IOException {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null) {
      if (Files.exists(dir.resolve(marker))) {
        return dir;
      }
      dir = dir.getParent();
    }
    throw new IOException("cannot find " + marker + " above the working directory" + hint);
  }

  public static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  @Override
  public void close() throws IOException {
    try {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    deleteTree(dir);
  }

  /** Deletes {@code dir} and everything below it (a test's temporary directory). */
  static void deleteTree(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      List<Path> paths = s.sorted(Comparator.reverseOrder()).toList();
      for (Path p : paths) {
        Files.deleteIfExists(p);
      }
    }
  }
}
