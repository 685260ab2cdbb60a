package io.hotkv.client;

import java.time.Duration;
import java.util.List;

/**
 * GCRA rate limiting ({@code GCRA.LIMIT}, {@code GCRA.PEEK}, {@code GCRA.LIMITALL}, {@code
 * GCRA.REFUND}, {@code GCRA.RESET}) and its
 * redis-cell compatible form ({@code CL.THROTTLE}), from {@link HotKV#gcra()}. These need no setup
 * and are available on every plan: each key holds its own limiter state and expires by itself.
 *
 * <p>State lives in ordinary string keys; an integer-valued key of yours would be taken as state
 * and overwritten, so use a dedicated prefix such as {@code rl:}. A key holding anything else is
 * answered with {@code WRONGTYPE} and left alone.
 */
public final class Gcra {
  private final HotKV client;

  Gcra(HotKV client) {
    this.client = client;
  }

  /**
   * {@code GCRA.LIMIT key periodMillis burst}: a request of one unit under {@code burst} units
   * per {@code periodMillis} ms (1 to 10^12) with smooth refill, recorded if allowed.
   */
  public GcraResult limit(String key, long periodMillis, long burst) {
    return limit(key, periodMillis, burst, 1);
  }

  /**
   * {@code GCRA.LIMIT key periodMillis burst count}: a request of {@code count} units. A count
   * above the burst is always denied with {@code retryAfterMillis} -1 ({@link
   * GcraResult#tooLarge()}).
   */
  public GcraResult limit(String key, long periodMillis, long burst, long count) {
    return client.execute(HotKVCommands.gcraLimit(key, periodMillis, burst, count));
  }

  /** {@link #limit(String, long, long)} with the period as a Duration (whole ms, truncated). */
  public GcraResult limit(String key, Duration period, long burst) {
    return limit(key, HotKVCommands.millis(period), burst, 1);
  }

  /** {@link #limit(String, long, long, long)} with the period as a Duration. */
  public GcraResult limit(String key, Duration period, long burst, long count) {
    return limit(key, HotKVCommands.millis(period), burst, count);
  }

  /** {@code GCRA.PEEK}: what {@link #limit(String, long, long)} would reply, recording nothing. */
  public GcraResult peek(String key, long periodMillis, long burst) {
    return peek(key, periodMillis, burst, 1);
  }

  /**
   * {@code GCRA.PEEK key periodMillis burst count}: what {@link #limit(String, long, long, long)}
   * would reply now, including the units the request would use, recording nothing. Read-only, so
   * replicas may serve it.
   */
  public GcraResult peek(String key, long periodMillis, long burst, long count) {
    return client.execute(HotKVCommands.gcraPeek(key, periodMillis, burst, count));
  }

  /** {@link #peek(String, long, long)} with the period as a Duration. */
  public GcraResult peek(String key, Duration period, long burst) {
    return peek(key, HotKVCommands.millis(period), burst, 1);
  }

  /** {@link #peek(String, long, long, long)} with the period as a Duration. */
  public GcraResult peek(String key, Duration period, long burst, long count) {
    return peek(key, HotKVCommands.millis(period), burst, count);
  }

  /** {@link #limitAll(List, long)} for a request of one unit. */
  public GcraLimitAllResult limitAll(List<GcraLimitSpec> limits) {
    return limitAll(limits, 1);
  }

  /** {@link #limitAll(List, long)} for a request of one unit, limits as arguments. */
  public GcraLimitAllResult limitAll(GcraLimitSpec... limits) {
    return limitAll(List.of(limits), 1);
  }

  /**
   * {@code GCRA.LIMITALL numlimits key period burst ... COUNT count}: a request of {@code count}
   * units checked against several limits at once (per user and per organisation, per second and
   * per day). It is admitted only if every limit allows it, and then recorded in every key as
   * {@link #limit(String, long, long, long)} would; if any limit denies, nothing is recorded. Two
   * {@code limit} calls cannot do this: the first spends its unit even when the second denies.
   *
   * <p>The server accepts 1 to 256 limits; a key listed twice is charged twice. In a cluster all
   * keys must hash to one slot (use a hash tag such as {@code {user42}}).
   */
  public GcraLimitAllResult limitAll(List<GcraLimitSpec> limits, long count) {
    return client.execute(HotKVCommands.gcraLimitAll(limits, count));
  }

  /** {@link #refund(String, long, long, long)} of one unit. */
  public GcraResult refund(String key, long periodMillis, long burst) {
    return refund(key, periodMillis, burst, 1);
  }

  /**
   * {@code GCRA.REFUND key periodMillis burst count}: gives {@code count} units back, for "charge
   * only on success" flows ({@code limit} before the work, {@code refund} when the work should not
   * have counted: it failed, it was served from cache). Use the limit's period and burst. The
   * refund never goes beyond a full burst; an absent or full key is left alone, and a key that
   * becomes full is deleted. The reply has {@code denied} false; {@code remaining} and {@code
   * resetAfterMillis} describe the key after the refund.
   */
  public GcraResult refund(String key, long periodMillis, long burst, long count) {
    return client.execute(HotKVCommands.gcraRefund(key, periodMillis, burst, count));
  }

  /** {@link #refund(String, long, long)} with the period as a Duration. */
  public GcraResult refund(String key, Duration period, long burst) {
    return refund(key, HotKVCommands.millis(period), burst, 1);
  }

  /** {@link #refund(String, long, long, long)} with the period as a Duration. */
  public GcraResult refund(String key, Duration period, long burst, long count) {
    return refund(key, HotKVCommands.millis(period), burst, count);
  }

  /**
   * {@code GCRA.RESET key [key ...]}: deletes the state of the keys and returns how many existed
   * (a key listed twice counts once). If an existing key is not GCRA state the server replies
   * {@code WRONGTYPE} and deletes nothing. In a cluster all keys must hash to one slot (use hash
   * tags such as {@code rl:{user:42}:sec}). At least one key is required by the server.
   */
  public long reset(String... keys) {
    return client.execute(HotKVCommands.gcraReset(keys));
  }

  /**
   * {@code CL.THROTTLE key maxBurst countPerPeriod periodSeconds 1}: redis-cell's interface to the
   * same limiter, {@code countPerPeriod} units per {@code periodSeconds} with bursts of {@code
   * maxBurst + 1}; times in the reply are whole seconds.
   */
  public ThrottleResult throttle(String key, long maxBurst, long countPerPeriod, long periodSeconds) {
    return throttle(key, maxBurst, countPerPeriod, periodSeconds, 1);
  }

  /**
   * {@code CL.THROTTLE key maxBurst countPerPeriod periodSeconds quantity}; quantity 0 only
   * reports the state.
   */
  public ThrottleResult throttle(
      String key, long maxBurst, long countPerPeriod, long periodSeconds, long quantity) {
    return client.execute(
        HotKVCommands.clThrottle(key, maxBurst, countPerPeriod, periodSeconds, quantity));
  }
}
