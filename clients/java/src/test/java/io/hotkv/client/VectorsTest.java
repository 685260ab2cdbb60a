package io.hotkv.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.extension.ExtendWith;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * The shared test vectors (clients/testdata/vectors.json: the specification's vectors in a form
 * every client runs through its own typed API, so that the Go, Python, Node.js and Java clients
 * are held to the same answers), every case in RESP2 and in RESP3. The file's _comment says how
 * a case runs; this follows clients/go/vectors_test.go.
 */
@ExtendWith(HotKVServerExtension.class)
class VectorsTest {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  private static final List<HotKV> clients = new ArrayList<>();

  static JsonNode load() throws Exception {
    // Jackson keeps integers as long (or BigInteger), so values above 2^53 (V13, V16, V23) are
    // compared exactly.
    return new ObjectMapper().readTree(Path.of("../testdata/vectors.json").toFile());
  }

  @AfterAll
  static void closeClients() {
    clients.forEach(HotKV::close);
    clients.clear();
  }

  @TestFactory
  Stream<DynamicNode> sharedVectors(TestServer server) throws Exception {
    JsonNode file = load();
    List<DynamicNode> out = new ArrayList<>();
    for (RedisProtocol proto : Support.PROTOCOLS) {
      HotKV client = Support.client(server, proto);
      clients.add(client);
      List<DynamicNode> cases = new ArrayList<>();
      for (JsonNode c : file.get("cases")) {
        cases.add(DynamicTest.dynamicTest(c.get("name").asText(), () -> runCase(client, file, c, proto)));
      }
      out.add(
          DynamicContainer.dynamicContainer(
              proto.name(),
              Stream.concat(
                  Stream.of(
                      DynamicTest.dynamicTest(
                          "speaks " + proto,
                          () ->
                              assertEquals(
                                  proto == RedisProtocol.RESP3 ? 3 : 2,
                                  Support.negotiatedProtocol(client.jedis())))),
                  cases.stream())));
    }
    assertEquals(48, file.get("cases").size(), "the file has 48 cases");
    return out.stream();
  }

  private static void runCase(HotKV client, JsonNode file, JsonNode vc, RedisProtocol proto) {
    UnifiedJedis jedis = client.jedis();
    Support.clean(client);
    Map<String, String> defaults = strings(file.get("defaults"));
    defaults.forEach(jedis::configSet);
    if (vc.has("config")) {
      strings(vc.get("config")).forEach(jedis::configSet);
    }
    try {
      long t0 = file.get("t0").asLong();
      int i = 0;
      for (JsonNode step : vc.get("steps")) {
        Support.clock(jedis, t0 + step.get("at").asLong());
        String where = proto + " " + vc.get("name").asText() + " step " + i + " (" + step.get("op").asText() + " at t0+" + step.get("at") + ")";
        if (step.has("error")) {
          JedisDataException e =
              assertThrows(JedisDataException.class, () -> run(client, step), where);
          assertEquals(step.get("error").asText(), e.getMessage(), where);
        } else {
          JsonNode got = run(client, step);
          assertEquals(canonical(step.get("expect")), canonical(got), where);
        }
        i++;
      }
    } finally {
      defaults.forEach(jedis::configSet);
    }
  }

  private static Map<String, String> strings(JsonNode obj) {
    Map<String, String> m = new TreeMap<>();
    obj.fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().asText()));
    return m;
  }

  private static String text(JsonNode args, String name) {
    JsonNode n = args.get(name);
    return n == null || n.isNull() ? null : n.asText();
  }

  /** Runs one step through the typed API and returns the result in the vectors' JSON shape. */
  private static JsonNode run(HotKV client, JsonNode step) {
    JsonNode a = step.has("args") ? step.get("args") : F.objectNode();
    String op = step.get("op").asText();
    switch (op) {
      case "gcra_limit", "gcra_peek" -> {
        String key = a.get("key").asText();
        long period = a.get("period_ms").asLong();
        long burst = a.get("burst").asLong();
        GcraResult r;
        if (op.equals("gcra_limit")) {
          r = a.has("count")
              ? client.gcra().limit(key, period, burst, a.get("count").asLong())
              : client.gcra().limit(key, period, burst);
        } else {
          r = a.has("count")
              ? client.gcra().peek(key, period, burst, a.get("count").asLong())
              : client.gcra().peek(key, period, burst);
        }
        return F.objectNode()
            .put("denied", r.denied())
            .put("limit", r.limit())
            .put("remaining", r.remaining())
            .put("retry_after_ms", r.retryAfterMillis())
            .put("reset_after_ms", r.resetAfterMillis());
      }
      case "gcra_reset" -> {
        List<String> keys = new ArrayList<>();
        a.get("keys").forEach(k -> keys.add(k.asText()));
        return F.numberNode(client.gcra().reset(keys.toArray(String[]::new)));
      }
      case "cl_throttle" -> {
        String key = a.get("key").asText();
        long maxBurst = a.get("max_burst").asLong();
        long perPeriod = a.get("count_per_period").asLong();
        long periodS = a.get("period_s").asLong();
        ThrottleResult r = a.has("quantity")
            ? client.gcra().throttle(key, maxBurst, perPeriod, periodS, a.get("quantity").asLong())
            : client.gcra().throttle(key, maxBurst, perPeriod, periodS);
        return F.objectNode()
            .put("limited", r.limited())
            .put("limit", r.limit())
            .put("remaining", r.remaining())
            .put("retry_after_s", r.retryAfterSeconds())
            .put("reset_after_s", r.resetAfterSeconds());
      }
      case "ratelimit_create" -> {
        String algo = text(a, "algo");
        String refill = text(a, "refill");
        String drain = text(a, "drain");
        return F.textNode(
            client
                .rateLimit()
                .create(
                    a.get("name").asText(),
                    a.get("limit").asLong(),
                    a.get("window_ms").asLong(),
                    algo == null ? null : Algorithm.fromWireName(algo),
                    refill == null ? null : Double.valueOf(refill),
                    drain == null ? null : Double.valueOf(drain)));
      }
      case "ratelimit_check", "ratelimit_peek" -> {
        String name = a.get("name").asText();
        String key = a.get("key").asText();
        RateLimitResult r = op.equals("ratelimit_peek")
            ? client.rateLimit().peek(name, key)
            // Without "cost" the typed call sends no COST (null), exercising the server's default.
            : client.rateLimit().check(name, key, a.has("cost") ? a.get("cost").asLong() : null);
        return F.objectNode()
            .put("allowed", r.allowed())
            .put("remaining", r.remaining())
            .put("retry_after_ms", r.retryAfterMillis())
            .put("limit", r.limit())
            .put("current", r.current());
      }
      case "ratelimit_reset" -> {
        return F.numberNode(
            client.rateLimit().reset(a.get("name").asText(), a.get("key").asText()) ? 1 : 0);
      }
      case "ratelimit_stats" -> {
        RateLimitStats s = client.rateLimit().stats(a.get("name").asText());
        ObjectNode o = F.objectNode()
            .put("name", s.name())
            .put("algo", s.algorithm().wireName())
            .put("limit", s.limit())
            .put("window_ms", s.windowMillis())
            .put("unique_keys", s.uniqueKeys())
            .put("total_allowed", s.totalAllowed())
            .put("total_denied", s.totalDenied());
        if (s.refillPerSecond() != 0) {
          o.put("refill_per_sec", s.refillPerSecond());
        }
        if (s.drainPerSecond() != 0) {
          o.put("drain_per_sec", s.drainPerSecond());
        }
        return o;
      }
      case "ratelimit_drop" -> {
        return F.textNode(client.rateLimit().drop(a.get("name").asText()));
      }
      case "ratelimit_list" -> {
        var arr = F.arrayNode();
        client.rateLimit().list().forEach(arr::add);
        return arr;
      }
      case "raw" -> {
        List<String> cmd = new ArrayList<>();
        step.get("cmd").forEach(x -> cmd.add(x.asText()));
        Object reply =
            Support.raw(
                client.jedis(), cmd.get(0), cmd.subList(1, cmd.size()).toArray(String[]::new));
        return rawToJson(reply);
      }
      default -> fail("unknown op " + op);
    }
    return null;
  }

  private static JsonNode rawToJson(Object reply) {
    if (reply == null) {
      return F.nullNode();
    }
    if (reply instanceof Long n) {
      return F.numberNode(n);
    }
    if (reply instanceof byte[] b) {
      return F.textNode(new String(b, StandardCharsets.UTF_8));
    }
    if (reply instanceof List<?> l) {
      var arr = F.arrayNode();
      l.forEach(x -> arr.add(rawToJson(x)));
      return arr;
    }
    throw new AssertionError("unexpected raw reply " + reply);
  }

  /**
   * One comparable text form for an expectation and a result: numbers as plain decimals (so 5
   * and 5.0 and a long and an int compare equal), object keys sorted.
   */
  static String canonical(JsonNode n) {
    if (n == null || n.isNull()) {
      return "null";
    }
    if (n.isNumber()) {
      BigDecimal d = n.decimalValue().stripTrailingZeros();
      return d.signum() == 0 ? "0" : d.toPlainString();
    }
    if (n.isTextual()) {
      return '"' + n.asText() + '"';
    }
    if (n.isBoolean()) {
      return Boolean.toString(n.asBoolean());
    }
    if (n.isArray()) {
      List<String> parts = new ArrayList<>();
      n.forEach(x -> parts.add(canonical(x)));
      return parts.toString();
    }
    Map<String, String> m = new TreeMap<>();
    Iterator<Map.Entry<String, JsonNode>> it = n.fields();
    while (it.hasNext()) {
      var e = it.next();
      m.put(e.getKey(), canonical(e.getValue()));
    }
    return m.toString();
  }
}
