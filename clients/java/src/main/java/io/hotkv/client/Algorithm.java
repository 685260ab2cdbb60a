package io.hotkv.client;

import java.util.Locale;

/** A {@code RATELIMIT} limiter algorithm, as {@code RATELIMIT.CREATE ... ALGO} accepts it. */
public enum Algorithm {
  /** The server's default: at most {@code limit} units in any window, without an edge burst. */
  SLIDING_WINDOW("sliding_window"),
  /**
   * A bucket of {@code limit} tokens that starts full and refills at the {@code REFILL} rate per
   * second (default {@code limit} per window); bursts up to {@code limit} pass.
   */
  TOKEN_BUCKET("token_bucket"),
  /**
   * A bucket of size {@code limit} that starts empty and drains at the {@code DRAIN} rate per
   * second (default {@code limit} per window); it replies exactly like a token bucket with the
   * same rate.
   */
  LEAKY_BUCKET("leaky_bucket"),
  /**
   * At most {@code limit} units <em>in flight</em> per key rather than a rate: an allowed check
   * acquires a lease ({@link RateLimitResult#leaseId()}) that holds its units until {@link
   * RateLimit#release}, or until the window has passed since it was acquired, so the slot of a
   * client that crashed frees itself. The limit is at most 100000.
   */
  CONCURRENCY("concurrency");

  private final String wireName;

  Algorithm(String wireName) {
    this.wireName = wireName;
  }

  /** The name on the wire, in lower case, for example {@code token_bucket}. */
  public String wireName() {
    return wireName;
  }

  /**
   * The algorithm named {@code name}, compared case-insensitively like the server does.
   *
   * @throws IllegalArgumentException for a name the client does not know
   */
  public static Algorithm fromWireName(String name) {
    String lower = name.toLowerCase(Locale.ROOT);
    for (Algorithm a : values()) {
      if (a.wireName.equals(lower)) {
        return a;
      }
    }
    throw new IllegalArgumentException("unknown rate-limit algorithm: " + name);
  }

  @Override
  public String toString() {
    return wireName;
  }
}
