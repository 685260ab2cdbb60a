package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import redis.clients.jedis.RedisProtocol;

/**
 * The Java snippets of the product documentation (shared/product-docs/rate-limiting-guide.txt),
 * each pasted unchanged into a test method; only the connection setup before it ({@code HotKV
 * client = ...}) is ours, since the guide does not show it. The snippets print, so System.out is
 * captured and checked. {@link #snippetsAreVerbatim()} checks that the guide's Java blocks still
 * appear in this file exactly.
 */
@ExtendWith(HotKVServerExtension.class)
class ProductDocsTest {
  private final TestServer server;
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private PrintStream savedOut;
  private HotKV setup;

  ProductDocsTest(TestServer server) {
    this.server = server;
  }

  @BeforeEach
  void captureOut() {
    setup = Support.client(server, RedisProtocol.RESP3);
    Support.clean(setup);
    Support.clock(setup.jedis(), Support.T0);
    savedOut = System.out;
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restoreOut() {
    System.setOut(savedOut);
    setup.close();
  }

  private String printed() {
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void gcraLimitSnippet() {
    HotKV client = Support.client(server, RedisProtocol.RESP2);

    var result = client.gcra().limit("api:user:42", 60_000, 10);
    if (result.denied()) {
        System.out.println("slow down, retry in " + result.retryAfterMillis() + " ms");
    } else {
        System.out.println(result.remaining() + " requests left");
    }

    client.close();
    assertEquals("9 requests left\n", printed());
  }

  /** The same snippet after ten quick calls: the eleventh is refused (the guide's CLI session). */
  @Test
  void gcraLimitSnippetDenied() {
    for (int i = 0; i < 10; i++) {
      setup.gcra().limit("api:user:42", 60_000, 10);
    }
    HotKV client = Support.client(server, RedisProtocol.RESP3);

    var result = client.gcra().limit("api:user:42", 60_000, 10);
    if (result.denied()) {
        System.out.println("slow down, retry in " + result.retryAfterMillis() + " ms");
    } else {
        System.out.println(result.remaining() + " requests left");
    }

    client.close();
    assertEquals("slow down, retry in 6000 ms\n", printed());
  }

  @Test
  void rateLimitSnippet() {
    HotKV client = Support.client(server, RedisProtocol.RESP2);

    client.rateLimit().create("api", 100, 60_000, null, null, null);

    var check = client.rateLimit().check("api", "user:42", null);
    if (!check.allowed()) {
        System.out.println("retry in " + check.retryAfterMillis() + " ms");
    }

    client.close();
    assertEquals("", printed());
    // The check was counted, as in the guide's CLI session.
    RateLimitStats stats = setup.rateLimit().stats("api");
    assertEquals(1, stats.totalAllowed());
    assertEquals(new RateLimitResult(true, 94, 0, 100, 1), setup.rateLimit().check("api", "user:42", 5L));
  }

  /** The guide's Java blocks, as text, must occur unchanged in this file. */
  @Test
  void snippetsAreVerbatim() throws Exception {
    // The repository's copy of the published guide (clients/go checks it against
    // ../shared/product-docs wherever that is beside the repository).
    Path guide = Path.of("../testdata/product-docs/rate-limiting-guide.txt");
    String doc = Files.readString(guide);
    String self = Files.readString(Path.of("src/test/java/io/hotkv/client/ProductDocsTest.java"));
    Matcher m = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL).matcher(doc);
    List<String> blocks = new ArrayList<>();
    while (m.find()) {
      blocks.add(m.group(1));
    }
    assertEquals(2, blocks.size(), "Java blocks in the guide");
    for (String block : blocks) {
      StringBuilder indented = new StringBuilder();
      for (String line : block.split("\n", -1)) {
        indented.append(line.isEmpty() ? "" : "    " + line).append('\n');
      }
      String want = indented.toString().stripTrailing();
      assertTrue(self.contains(want), () -> "not verbatim in ProductDocsTest:\n" + block);
    }
  }
}
