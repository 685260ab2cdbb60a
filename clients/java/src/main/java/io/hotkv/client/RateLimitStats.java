package io.hotkv.client;

import java.time.Duration;

/**
 * The reply of {@code RATELIMIT.STATS}: a limiter's settings, its number of keys with live state
 * and its totals. RESP2 sends it as a flat array of names and values, RESP3 as a map; both parse
 * to this record.
 *
 * @param name the limiter's name
 * @param algorithm the limiter's algorithm
 * @param limit the limit L
 * @param windowMillis the window in milliseconds (for the bucket algorithms it only sets the
 *     default rate)
 * @param uniqueKeys keys with live state now; it drops as state expires
 * @param totalAllowed units allowed since creation (saturating at 2^63-1)
 * @param totalDenied units denied since creation, including requests larger than the limit
 * @param refillPerSecond the token_bucket rate, 0 for the other algorithms
 * @param drainPerSecond the leaky_bucket rate, 0 for the other algorithms
 * @param shadow shadow mode: every check is allowed, decisions are still recorded and counted
 * @param totalShadowDenied units denied in shadow mode and let through anyway (they are in
 *     {@code totalDenied} too); kept when shadow mode is switched off. Servers without shadow
 *     mode send neither field: false and 0.
 */
public record RateLimitStats(
    String name,
    Algorithm algorithm,
    long limit,
    long windowMillis,
    long uniqueKeys,
    long totalAllowed,
    long totalDenied,
    double refillPerSecond,
    double drainPerSecond,
    boolean shadow,
    long totalShadowDenied) {

  /** The stats of a limiter not in shadow mode and never in it (the fields before shadow mode). */
  public RateLimitStats(
      String name,
      Algorithm algorithm,
      long limit,
      long windowMillis,
      long uniqueKeys,
      long totalAllowed,
      long totalDenied,
      double refillPerSecond,
      double drainPerSecond) {
    this(name, algorithm, limit, windowMillis, uniqueKeys, totalAllowed, totalDenied,
        refillPerSecond, drainPerSecond, false, 0);
  }

  /** {@link #windowMillis()} as a Duration. */
  public Duration window() {
    return Duration.ofMillis(windowMillis);
  }

  /**
   * The configured rate of a bucket limiter in units per second (refill or drain), or 0 for a
   * sliding window.
   */
  public double rate() {
    return refillPerSecond != 0 ? refillPerSecond : drainPerSecond;
  }
}
