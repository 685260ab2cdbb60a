package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.util.KeyValue;

/** Reply parsing without a server: both protocols' shapes, and replies that must be refused. */
class ParsingTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static List<Object> statsResp2(boolean withRate) {
    List<Object> l = new ArrayList<>(List.of(
        b("name"), b("uploads"), b("algo"), b("token_bucket"), b("limit"), 20L, b("window_ms"), 4000L,
        b("unique_keys"), 1L, b("total_allowed"), 21L, b("total_denied"), 28L));
    if (withRate) {
      l.add(b("refill_per_sec"));
      l.add(b("2.5"));
    }
    return l;
  }

  @Test
  void statsInBothProtocols() {
    RateLimitStats want = new RateLimitStats("uploads", Algorithm.TOKEN_BUCKET, 20, 4000, 1, 21, 28, 2.5, 0);
    assertEquals(want, Results.stats(statsResp2(true)));
    List<Object> resp2 = statsResp2(true);
    List<Object> map = new ArrayList<>();
    for (int i = 0; i < resp2.size(); i += 2) {
      Object v = resp2.get(i + 1);
      map.add(new KeyValue<>(resp2.get(i), i == resp2.size() - 2 ? (Object) 2.5 : v));
    }
    assertEquals(want, Results.stats(map));
    // A field from a newer server is ignored.
    List<Object> more = statsResp2(true);
    more.add(b("new_field"));
    more.add(7L);
    assertEquals(want, Results.stats(more));
  }

  @Test
  void badReplies() {
    assertThrows(HotKVReplyException.class, () -> Results.stats(statsResp2(false).subList(0, 12)));
    assertThrows(HotKVReplyException.class, () -> Results.stats(statsResp2(false).subList(0, 13)));
    assertThrows(HotKVReplyException.class, () -> Results.stats(b("OK")));
    List<Object> badAlgo = statsResp2(false);
    badAlgo.set(3, b("fixed_window"));
    assertThrows(HotKVReplyException.class, () -> Results.stats(badAlgo));
    List<Object> badRate = statsResp2(true);
    badRate.set(15, b("fast"));
    assertThrows(HotKVReplyException.class, () -> Results.stats(badRate));
    HotKVReplyException e = assertThrows(HotKVReplyException.class, () -> Results.GCRA.build(List.of(1L, 2L, 3L)));
    assertEquals("hotkv: GCRA: unexpected reply [1, 2, 3]", e.getMessage());
    assertThrows(HotKVReplyException.class, () -> Results.RATELIMIT.build(List.of(1L, 2L, 3L, 4L, b("5"))));
    assertThrows(HotKVReplyException.class, () -> Results.THROTTLE.build(null));
    assertThrows(HotKVReplyException.class, () -> Results.LONG.build(b("1")));
    assertThrows(HotKVReplyException.class, () -> Results.STRING_LIST.build(List.of(1L)));
  }

  @Test
  void rates() {
    assertEquals("5", HotKVCommands.formatRate(5.0));
    assertEquals("2.5", HotKVCommands.formatRate(2.5));
    assertEquals("0.5", HotKVCommands.formatRate(0.5));
    assertEquals("0.002", HotKVCommands.formatRate(0.002));
    assertEquals("0.00000001", HotKVCommands.formatRate(0.00000001));
    assertEquals("0.000000001", HotKVCommands.formatRate(1e-9));
    assertEquals("1000000000000000000000", HotKVCommands.formatRate(1e21));
    assertEquals("0", HotKVCommands.formatRate(0.0));
    assertEquals("-1", HotKVCommands.formatRate(-1.0));
    assertEquals("NaN", HotKVCommands.formatRate(Double.NaN));
    // Every formatted rate reads back as the same double.
    for (double d : new double[] {0.1, 1.0 / 3, 123.456, 7e-7, 2e-3, 9007199254740993.0}) {
      assertEquals(d, Double.parseDouble(HotKVCommands.formatRate(d)));
    }
  }

  @Test
  void algorithms() {
    assertEquals(Algorithm.TOKEN_BUCKET, Algorithm.fromWireName("TOKEN_bucket"));
    assertEquals("leaky_bucket", Algorithm.LEAKY_BUCKET.wireName());
    assertThrows(IllegalArgumentException.class, () -> Algorithm.fromWireName("fixed_window"));
  }
}
