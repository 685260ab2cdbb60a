package io.hotkv.client;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import redis.clients.jedis.CommandArguments;
import redis.clients.jedis.CommandObject;

/**
 * Jedis {@link CommandObject}s for every HotKV rate-limiting command, with the reply parsed into
 * its result record.
 *
 * <p>{@link HotKV} runs them with {@code UnifiedJedis.executeCommand}; use them directly to send
 * the commands in a pipeline or transaction, where Jedis hands back a {@code Response<T>}:
 *
 * <pre>{@code
 * try (AbstractPipeline p = jedis.pipelined()) {
 *   Response<GcraResult> perSecond = p.executeCommand(HotKVCommands.gcraLimit("rl:{user:42}:sec", 1000, 10, 1));
 *   Response<GcraResult> perHour = p.executeCommand(HotKVCommands.gcraLimit("rl:{user:42}:hour", 3_600_000, 1000, 1));
 *   p.sync();
 *   boolean ok = perSecond.get().allowed() && perHour.get().allowed();
 * }
 * }</pre>
 *
 * <p><b>Routing.</b> Each command marks its routing argument as a key ({@link
 * CommandArguments#key(Object)}), so a cluster client sends it to the node serving that key's
 * hash slot: the key for {@code GCRA.*} and {@code CL.THROTTLE}, the limiter name for {@code
 * RATELIMIT.*} (where the server declares the name as the command's key), and nothing for
 * {@code RATELIMIT.LIST}, which goes to any node. The other arguments are plain arguments: in
 * particular the per-user key of {@code RATELIMIT.CHECK} is not a key of the keyspace and does
 * not take part in routing.
 *
 * <p>Arguments are not validated here: a period of 0, a negative burst and so on reach the server
 * and come back as its exact error ({@code JedisDataException}).
 */
public final class HotKVCommands {
  private HotKVCommands() {}

  private static CommandArguments args(HotKVCommand cmd) {
    return new CommandArguments(cmd);
  }

  /** Whole milliseconds of a Duration, truncated toward zero like {@code Duration.toMillis}. */
  static long millis(Duration d) {
    return d.toMillis();
  }

  /**
   * {@code GCRA.LIMIT key period_ms burst count}: allows or denies a request of {@code count}
   * units under {@code burst} units per {@code periodMillis} with smooth refill, and records it
   * if allowed, atomically. A denied request changes nothing.
   */
  public static CommandObject<GcraResult> gcraLimit(
      String key, long periodMillis, long burst, long count) {
    return new CommandObject<>(
        args(HotKVCommand.GCRA_LIMIT).key(key).add(periodMillis).add(burst).add(count),
        Results.GCRA);
  }

  /**
   * {@code GCRA.PEEK key period_ms burst count}: what {@link #gcraLimit} would reply now, without
   * recording anything.
   */
  public static CommandObject<GcraResult> gcraPeek(
      String key, long periodMillis, long burst, long count) {
    return new CommandObject<>(
        args(HotKVCommand.GCRA_PEEK).key(key).add(periodMillis).add(burst).add(count),
        Results.GCRA);
  }

  /**
   * {@code GCRA.LIMITALL numlimits key period_ms burst ... COUNT count}: the request of {@code
   * count} units is admitted only if every limit allows it, and is then recorded in every key as
   * {@link #gcraLimit} would; if any limit denies, nothing is recorded. Every limit's key is
   * marked as a key, so a cluster client routes by them (they must share one slot).
   */
  public static CommandObject<GcraLimitAllResult> gcraLimitAll(List<GcraLimitSpec> limits, long count) {
    CommandArguments a = args(HotKVCommand.GCRA_LIMITALL).add(limits.size());
    for (GcraLimitSpec l : limits) {
      a.key(l.key()).add(l.periodMillis()).add(l.burst());
    }
    return new CommandObject<>(a.add("COUNT").add(count), Results.GCRA_ALL);
  }

  /**
   * {@code GCRA.REFUND key period_ms burst count}: gives {@code count} units back to a GCRA key,
   * never beyond a full burst; the reply is shaped like {@link #gcraLimit}'s, with denied false.
   */
  public static CommandObject<GcraResult> gcraRefund(
      String key, long periodMillis, long burst, long count) {
    return new CommandObject<>(
        args(HotKVCommand.GCRA_REFUND).key(key).add(periodMillis).add(burst).add(count),
        Results.GCRA);
  }

  /**
   * {@code GCRA.RESET key [key ...]}: deletes GCRA (and CL.THROTTLE) state; the reply is how many
   * of the listed keys existed. In a cluster all keys must hash to one slot.
   */
  public static CommandObject<Long> gcraReset(String... keys) {
    CommandArguments a = args(HotKVCommand.GCRA_RESET);
    for (String k : keys) {
      a.key(k);
    }
    return new CommandObject<>(a, Results.LONG);
  }

  /**
   * {@code CL.THROTTLE key max_burst count_per_period period_s quantity}, the redis-cell
   * compatible form: {@code countPerPeriod} units per {@code periodSeconds}, bursts of {@code
   * maxBurst + 1}. Quantity 0 only reports the state. It stores the same state as GCRA.LIMIT.
   */
  public static CommandObject<ThrottleResult> clThrottle(
      String key, long maxBurst, long countPerPeriod, long periodSeconds, long quantity) {
    return new CommandObject<>(
        args(HotKVCommand.CL_THROTTLE)
            .key(key)
            .add(maxBurst)
            .add(countPerPeriod)
            .add(periodSeconds)
            .add(quantity),
        Results.THROTTLE);
  }

  /**
   * {@code RATELIMIT.CREATE name limit window_ms [ALGO a] [REFILL r] [DRAIN r]}; null means "not
   * given" (the server's default). Rates are units per second, written as plain decimals.
   */
  public static CommandObject<String> rateLimitCreate(
      String name, long limit, long windowMillis, Algorithm algorithm, Double refill, Double drain) {
    return rateLimitCreate(name, limit, windowMillis, algorithm, refill, drain, false);
  }

  /**
   * {@code RATELIMIT.CREATE name limit window_ms [ALGO a] [REFILL r] [DRAIN r] [SHADOW]}: as
   * above, with {@code shadow} true sending the SHADOW flag (a limiter in shadow mode: every
   * check allowed, decisions still recorded and counted).
   */
  public static CommandObject<String> rateLimitCreate(
      String name,
      long limit,
      long windowMillis,
      Algorithm algorithm,
      Double refill,
      Double drain,
      boolean shadow) {
    CommandArguments a = args(HotKVCommand.RATELIMIT_CREATE).key(name).add(limit).add(windowMillis);
    if (algorithm != null) {
      a.add("ALGO").add(algorithm.wireName());
    }
    if (refill != null) {
      a.add("REFILL").add(formatRate(refill));
    }
    if (drain != null) {
      a.add("DRAIN").add(formatRate(drain));
    }
    if (shadow) {
      a.add("SHADOW");
    }
    return new CommandObject<>(a, Results.STATUS);
  }

  /**
   * {@code RATELIMIT.UPDATE name [LIMIT n] [WINDOW ms] [REFILL r | DRAIN r] [SHADOW ON|OFF]}:
   * only the update's non-null components are sent, in that order; replies {@code OK}.
   */
  public static CommandObject<String> rateLimitUpdate(String name, RateLimitUpdate update) {
    CommandArguments a = args(HotKVCommand.RATELIMIT_UPDATE).key(name);
    if (update.limit() != null) {
      a.add("LIMIT").add(update.limit().longValue());
    }
    if (update.windowMillis() != null) {
      a.add("WINDOW").add(update.windowMillis().longValue());
    }
    if (update.refill() != null) {
      a.add("REFILL").add(formatRate(update.refill()));
    }
    if (update.drain() != null) {
      a.add("DRAIN").add(formatRate(update.drain()));
    }
    if (update.shadow() != null) {
      a.add("SHADOW").add(update.shadow() ? "ON" : "OFF");
    }
    return new CommandObject<>(a, Results.STATUS);
  }

  /**
   * Writes a rate in the server's syntax, a plain decimal without exponent ({@code 5}, {@code
   * 2.5}, {@code 0.00000001}). {@code BigDecimal.valueOf} starts from {@code Double.toString},
   * which reads back as the same double, so the server gets exactly the caller's value. NaN and
   * infinities are sent as Java spells them and refused by the server ({@code ERR invalid rate:
   * must be a positive number}).
   */
  static String formatRate(double rate) {
    if (Double.isNaN(rate) || Double.isInfinite(rate)) {
      return Double.toString(rate);
    }
    if (rate == 0) {
      return "0";
    }
    return BigDecimal.valueOf(rate).stripTrailingZeros().toPlainString();
  }

  /**
   * {@code RATELIMIT.CHECK name key [COST n]}: checks a request of {@code cost} units (null: the
   * server's default of 1, and no COST argument) and counts it if allowed. An unknown limiter
   * replies all zeros ({@link RateLimitResult#unknownLimiter()}).
   */
  public static CommandObject<RateLimitResult> rateLimitCheck(String name, String key, Long cost) {
    CommandArguments a = args(HotKVCommand.RATELIMIT_CHECK).key(name).add(key);
    if (cost != null) {
      a.add("COST").add(cost.longValue());
    }
    return new CommandObject<>(a, Results.RATELIMIT);
  }

  /** {@code RATELIMIT.PEEK name key}: the state for a cost of 1, counting nothing. */
  public static CommandObject<RateLimitResult> rateLimitPeek(String name, String key) {
    return new CommandObject<>(
        args(HotKVCommand.RATELIMIT_PEEK).key(name).add(key), Results.RATELIMIT);
  }

  /**
   * {@code RATELIMIT.RELEASE name key lease_id}: gives back a concurrency lease; true when the key
   * held that live lease and it is now released (the server's 1).
   */
  public static CommandObject<Boolean> rateLimitRelease(String name, String key, long leaseId) {
    return new CommandObject<>(
        args(HotKVCommand.RATELIMIT_RELEASE).key(name).add(key).add(leaseId), Results.BOOLEAN);
  }

  /** {@code RATELIMIT.RESET name key}: true when the key had state (the server's 1). */
  public static CommandObject<Boolean> rateLimitReset(String name, String key) {
    return new CommandObject<>(
        args(HotKVCommand.RATELIMIT_RESET).key(name).add(key), Results.BOOLEAN);
  }

  /** {@code RATELIMIT.STATS name}, in RESP2 or RESP3. */
  public static CommandObject<RateLimitStats> rateLimitStats(String name) {
    return new CommandObject<>(args(HotKVCommand.RATELIMIT_STATS).key(name), Results.STATS);
  }

  /** {@code RATELIMIT.DROP name}: deletes the limiter with its state; replies {@code OK}. */
  public static CommandObject<String> rateLimitDrop(String name) {
    return new CommandObject<>(args(HotKVCommand.RATELIMIT_DROP).key(name), Results.STATUS);
  }

  /** {@code RATELIMIT.LIST}: the node's limiter names, sorted bytewise. Keyless. */
  public static CommandObject<List<String>> rateLimitList() {
    return new CommandObject<>(args(HotKVCommand.RATELIMIT_LIST), Results.STRING_LIST);
  }
}
