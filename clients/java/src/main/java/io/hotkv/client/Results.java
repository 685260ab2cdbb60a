package io.hotkv.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.Builder;
import redis.clients.jedis.util.KeyValue;

/**
 * Jedis {@link Builder}s that turn raw replies into the result records.
 *
 * <p>They work on Jedis's raw reply objects, which differ by protocol: integers are {@code
 * Long}, bulk and simple strings {@code byte[]}, arrays {@code List}, and in RESP3 maps are a
 * {@code List<KeyValue>} and doubles a {@code Double}. Parsing the raw form ourselves (instead
 * of through Jedis's typed builders) is what lets one builder accept both protocols.
 */
final class Results {
  private Results() {}

  static Duration millis(long ms, boolean passed) {
    if (ms < 0) {
      return passed ? Duration.ZERO : Duration.ofMillis(-1);
    }
    return Duration.ofMillis(ms);
  }

  /** Parses the five-integer array of every decision command. */
  static long[] fiveInts(String command, Object data) {
    return ints(command, data, 5, 5);
  }

  /** Parses an array of {@code min} to {@code max} integers. */
  static long[] ints(String command, Object data, int min, int max) {
    if (data instanceof List<?> list && list.size() >= min && list.size() <= max) {
      long[] out = new long[list.size()];
      for (int i = 0; i < out.length; i++) {
        if (!(list.get(i) instanceof Long n)) {
          throw unexpected(command, data);
        }
        out[i] = n;
      }
      return out;
    }
    throw unexpected(command, data);
  }

  static HotKVReplyException unexpected(String command, Object data) {
    return new HotKVReplyException("hotkv: " + command + ": unexpected reply " + render(data));
  }

  /** Renders a raw reply for error messages, with byte arrays as text. */
  static String render(Object data) {
    if (data instanceof byte[] b) {
      return "\"" + new String(b, StandardCharsets.UTF_8) + "\"";
    }
    if (data instanceof List<?> list) {
      List<String> parts = new ArrayList<>();
      for (Object o : list) {
        parts.add(render(o));
      }
      return parts.toString();
    }
    if (data instanceof KeyValue<?, ?> kv) {
      return render(kv.getKey()) + "=" + render(kv.getValue());
    }
    return String.valueOf(data);
  }

  static final Builder<GcraResult> GCRA =
      new Builder<>() {
        @Override
        public GcraResult build(Object data) {
          long[] v = fiveInts("GCRA", data);
          return new GcraResult(v[0] != 0, v[1], v[2], v[3], v[4]);
        }
      };

  static final Builder<GcraLimitAllResult> GCRA_ALL =
      new Builder<>() {
        @Override
        public GcraLimitAllResult build(Object data) {
          if (!(data instanceof List<?> list)
              || list.size() < 3
              || !(list.get(0) instanceof Long denied)
              || !(list.get(1) instanceof Long retry)) {
            throw unexpected("GCRA.LIMITALL", data);
          }
          List<GcraResult> limits = new ArrayList<>(list.size() - 2);
          for (Object o : list.subList(2, list.size())) {
            long[] v = fiveInts("GCRA.LIMITALL", o);
            limits.add(new GcraResult(v[0] != 0, v[1], v[2], v[3], v[4]));
          }
          return new GcraLimitAllResult(denied != 0, retry, limits);
        }
      };

  static final Builder<ThrottleResult> THROTTLE =
      new Builder<>() {
        @Override
        public ThrottleResult build(Object data) {
          long[] v = fiveInts("CL.THROTTLE", data);
          return new ThrottleResult(v[0] != 0, v[1], v[2], v[3], v[4]);
        }
      };

  static final Builder<RateLimitResult> RATELIMIT =
      new Builder<>() {
        @Override
        public RateLimitResult build(Object data) {
          // Five integers, or six from a concurrency limiter's CHECK (the lease id).
          long[] v = ints("RATELIMIT", data, 5, 6);
          return new RateLimitResult(v[0] != 0, v[1], v[2], v[3], v[4], v.length == 6 ? v[5] : 0);
        }
      };

  static final Builder<Long> LONG =
      new Builder<>() {
        @Override
        public Long build(Object data) {
          if (data instanceof Long n) {
            return n;
          }
          throw unexpected("integer reply", data);
        }
      };

  static final Builder<Boolean> BOOLEAN =
      new Builder<>() {
        @Override
        public Boolean build(Object data) {
          return LONG.build(data) != 0;
        }
      };

  static final Builder<String> STATUS =
      new Builder<>() {
        @Override
        public String build(Object data) {
          if (data instanceof byte[] b) {
            return new String(b, StandardCharsets.UTF_8);
          }
          throw unexpected("status reply", data);
        }
      };

  static final Builder<List<String>> STRING_LIST =
      new Builder<>() {
        @Override
        public List<String> build(Object data) {
          if (!(data instanceof List<?> list)) {
            throw unexpected("RATELIMIT.LIST", data);
          }
          List<String> out = new ArrayList<>(list.size());
          for (Object o : list) {
            if (!(o instanceof byte[] b)) {
              throw unexpected("RATELIMIT.LIST", data);
            }
            out.add(new String(b, StandardCharsets.UTF_8));
          }
          return List.copyOf(out);
        }
      };

  static final Builder<RateLimitStats> STATS =
      new Builder<>() {
        @Override
        public RateLimitStats build(Object data) {
          return stats(data);
        }
      };

  /**
   * Parses RATELIMIT.STATS: a flat name/value array in RESP2, a map in RESP3. Fields the client
   * does not know are ignored, so a newer server may add some; the seven fields every limiter
   * has must all be there.
   */
  static RateLimitStats stats(Object data) {
    if (!(data instanceof List<?> list)) {
      throw unexpected("RATELIMIT.STATS", data);
    }
    List<Object[]> pairs = new ArrayList<>();
    if (!list.isEmpty() && list.get(0) instanceof KeyValue<?, ?>) {
      for (Object o : list) {
        if (!(o instanceof KeyValue<?, ?> kv)) {
          throw unexpected("RATELIMIT.STATS", data);
        }
        pairs.add(new Object[] {kv.getKey(), kv.getValue()});
      }
    } else {
      if (list.size() % 2 != 0) {
        throw unexpected("RATELIMIT.STATS", data);
      }
      for (int i = 0; i < list.size(); i += 2) {
        pairs.add(new Object[] {list.get(i), list.get(i + 1)});
      }
    }
    String name = null;
    Algorithm algo = null;
    long limit = 0, window = 0, keys = 0, allowed = 0, denied = 0;
    double refill = 0, drain = 0;
    // The shadow fields came later and trail the reply: an older server leaves these defaults.
    boolean shadow = false;
    long shadowDenied = 0;
    int seen = 0;
    try {
      for (Object[] p : pairs) {
        if (!(p[0] instanceof byte[] k)) {
          throw unexpected("RATELIMIT.STATS", data);
        }
        switch (new String(k, StandardCharsets.UTF_8)) {
          case "name" -> {
            name = text(p[1], data);
            seen++;
          }
          case "algo" -> {
            algo = Algorithm.fromWireName(text(p[1], data));
            seen++;
          }
          case "limit" -> {
            limit = integer(p[1], data);
            seen++;
          }
          case "window_ms" -> {
            window = integer(p[1], data);
            seen++;
          }
          case "unique_keys" -> {
            keys = integer(p[1], data);
            seen++;
          }
          case "total_allowed" -> {
            allowed = integer(p[1], data);
            seen++;
          }
          case "total_denied" -> {
            denied = integer(p[1], data);
            seen++;
          }
          case "refill_per_sec" -> refill = number(p[1], data);
          case "drain_per_sec" -> drain = number(p[1], data);
          case "shadow" -> {
            long on = integer(p[1], data);
            if (on != 0 && on != 1) {
              throw unexpected("RATELIMIT.STATS", data);
            }
            shadow = on == 1;
          }
          case "total_shadow_denied" -> shadowDenied = integer(p[1], data);
          default -> {
            // a field added by a newer server
          }
        }
      }
    } catch (IllegalArgumentException e) {
      throw unexpected("RATELIMIT.STATS", data);
    }
    if (seen != 7) {
      throw unexpected("RATELIMIT.STATS", data);
    }
    return new RateLimitStats(
        name, algo, limit, window, keys, allowed, denied, refill, drain, shadow, shadowDenied);
  }

  private static String text(Object v, Object data) {
    if (v instanceof byte[] b) {
      return new String(b, StandardCharsets.UTF_8);
    }
    throw unexpected("RATELIMIT.STATS", data);
  }

  private static long integer(Object v, Object data) {
    if (v instanceof Long n) {
      return n;
    }
    throw unexpected("RATELIMIT.STATS", data);
  }

  /**
   * A rate: RESP3 sends a double, RESP2 a bulk string holding the shortest decimal that reads
   * back as the server's double, so parsing it gives the same value in both protocols.
   */
  private static double number(Object v, Object data) {
    if (v instanceof Double d) {
      return d;
    }
    if (v instanceof Long n) {
      return n;
    }
    if (v instanceof byte[] b) {
      return Double.parseDouble(new String(b, StandardCharsets.UTF_8));
    }
    throw unexpected("RATELIMIT.STATS", data);
  }
}
