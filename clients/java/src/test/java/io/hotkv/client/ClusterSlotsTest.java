package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Cluster routing without a cluster (HotKV has no cluster mode yet): the slot computation against
 * known values, and the slot each command object carries, which is what Jedis's cluster executor
 * routes on ({@code CommandArguments.getKeyHashSlots()}).
 */
class ClusterSlotsTest {
  /** Slots from redis-server 7.0.15's {@code CLUSTER KEYSLOT} (run with cluster-enabled yes). */
  private static final Object[][] KNOWN = {
    {"foo", 12182},
    {"bar", 5061},
    {"hello", 866},
    {"123456789", 12739}, // CRC16/XMODEM check value 0x31C3
    {"{user1000}.following", 3443},
    {"{user1000}.followers", 3443},
    {"foo{}{bar}", 8363}, // empty tag: the whole key is hashed
    {"foo{{bar}}zap", 4015}, // the tag is "{bar"
    {"foo{bar}{zap}", 5061}, // only the first tag counts: slot("bar")
    {"{}", 15257},
    {"{", 4092},
    {"}{a}", 15495},
    {"api", 6541},
    {"user:42", 15880},
    {"api:user:42", 14902},
    {"rl:{user:42}:sec", 15880},
    {"rl:{user:42}:hour", 15880},
    {"héllo", 11061}, // UTF-8 bytes
    {"", 0},
  };

  @Test
  void knownSlots() {
    for (Object[] k : KNOWN) {
      assertEquals(k[1], ClusterSlots.slot((String) k[0]), () -> "slot(" + k[0] + ")");
    }
    assertEquals(0x31C3, ClusterSlots.crc16("123456789".getBytes(StandardCharsets.US_ASCII), 0, 9));
  }

  /** Agrees with Jedis's own implementation, the one that routes the commands. */
  @Test
  void agreesWithJedis() {
    Random rnd = new Random(42);
    String alphabet = "ab{}:x";
    for (int i = 0; i < 5000; i++) {
      StringBuilder sb = new StringBuilder();
      int len = rnd.nextInt(12);
      for (int j = 0; j < len; j++) {
        sb.append(alphabet.charAt(rnd.nextInt(alphabet.length())));
      }
      String key = sb.toString();
      assertEquals(JedisClusterCRC16.getSlot(key), ClusterSlots.slot(key), key);
    }
  }

  private static Set<Integer> slots(CommandObject<?> c) {
    return c.getArguments().getKeyHashSlots();
  }

  /**
   * Each command routes on the argument the server declares as its key (COMMAND INFO: first key
   * at position 1): the key for GCRA.* and CL.THROTTLE, the limiter name for RATELIMIT.*, never
   * the per-user key of RATELIMIT.CHECK.
   */
  @Test
  void commandsRouteOnTheirKey() {
    int user = ClusterSlots.slot("api:user:42");
    assertEquals(Set.of(user), slots(HotKVCommands.gcraLimit("api:user:42", 60_000, 10, 1)));
    assertEquals(Set.of(user), slots(HotKVCommands.gcraPeek("api:user:42", 60_000, 10, 1)));
    assertEquals(Set.of(user), slots(HotKVCommands.clThrottle("api:user:42", 1, 1, 1, 1)));
    int api = ClusterSlots.slot("api");
    assertEquals(Set.of(api), slots(HotKVCommands.rateLimitCreate("api", 100, 60_000, null, null, null)));
    assertEquals(Set.of(api), slots(HotKVCommands.rateLimitCheck("api", "user:42", 1L)));
    assertEquals(Set.of(api), slots(HotKVCommands.rateLimitCheck("api", "user:42", null)));
    assertEquals(Set.of(api), slots(HotKVCommands.rateLimitPeek("api", "user:42")));
    assertEquals(Set.of(api), slots(HotKVCommands.rateLimitReset("api", "user:42")));
    assertEquals(Set.of(api), slots(HotKVCommands.rateLimitStats("api")));
    assertEquals(Set.of(api), slots(HotKVCommands.rateLimitDrop("api")));
    assertTrue(HotKVCommands.rateLimitList().getArguments().isKeyless());
    // A user's limits with a hash tag share one slot, so one GCRA.RESET can clear them.
    assertEquals(Set.of(15880), slots(HotKVCommands.gcraReset("rl:{user:42}:sec", "rl:{user:42}:hour")));
    assertEquals(2, slots(HotKVCommands.gcraReset("a", "b")).size());
  }

  /** What goes on the wire: the command name, then the arguments in order. */
  @Test
  void wireArguments() {
    CommandArguments a = HotKVCommands.rateLimitCreate("uploads", 20, 4000, Algorithm.TOKEN_BUCKET, 5.0, null).getArguments();
    StringBuilder sb = new StringBuilder();
    a.forEach(r -> sb.append(new String(r.getRaw(), StandardCharsets.UTF_8)).append(' '));
    assertEquals("RATELIMIT.CREATE uploads 20 4000 ALGO token_bucket REFILL 5 ", sb.toString());
    sb.setLength(0);
    HotKVCommands.rateLimitCheck("api", "user:42", null).getArguments()
        .forEach(r -> sb.append(new String(r.getRaw(), StandardCharsets.UTF_8)).append(' '));
    assertEquals("RATELIMIT.CHECK api user:42 ", sb.toString());
  }
}
