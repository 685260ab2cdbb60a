package io.hotkv.client;

import java.time.Duration;

/**
 * One limit of {@link Gcra#limitAll(java.util.List, long)} ({@code GCRA.LIMITALL}): a key with
 * its own period and burst, as {@code GCRA.LIMIT} takes them.
 *
 * @param key the GCRA state key
 * @param periodMillis the limit's period in milliseconds (1 to 10^12)
 * @param burst the units allowed per period
 */
public record GcraLimitSpec(String key, long periodMillis, long burst) {

  /** A limit with the period as a Duration (whole milliseconds, truncated). */
  public static GcraLimitSpec of(String key, Duration period, long burst) {
    return new GcraLimitSpec(key, HotKVCommands.millis(period), burst);
  }
}
