package io.hotkv.client;

import java.time.Duration;

/**
 * The reply of {@code CL.THROTTLE} (redis-cell compatible):
 * {@code [limited, limit, remaining, retry_after_s, reset_after_s]}, times in whole seconds,
 * rounded as the server's {@code throttle-compat} setting says ({@code redis-cell} by default).
 *
 * @param limited true when the request is refused (nothing was written)
 * @param limit {@code max_burst + 1}
 * @param remaining units available after this request; unlike {@code GCRA.LIMIT} a refusal
 *     reports the true remaining, as redis-cell does
 * @param retryAfterSeconds -1 when allowed, or when the quantity exceeds the limit and no wait
 *     helps; otherwise the seconds to wait (in the default redis-cell mode a wait under 1 ms
 *     reads 0)
 * @param resetAfterSeconds seconds until the limit is fully restored
 */
public record ThrottleResult(
    boolean limited, long limit, long remaining, long retryAfterSeconds, long resetAfterSeconds) {

  /** {@code !limited()}. */
  public boolean allowed() {
    return !limited;
  }

  /** A quantity above the limit, which can never be allowed. */
  public boolean tooLarge() {
    return limited && retryAfterSeconds < 0;
  }

  /**
   * {@link #retryAfterSeconds()} as a Duration: zero when allowed, negative (-1 s) when the
   * request can never be allowed.
   */
  public Duration retryAfter() {
    if (retryAfterSeconds < 0) {
      return limited ? Duration.ofSeconds(-1) : Duration.ZERO;
    }
    return Duration.ofSeconds(retryAfterSeconds);
  }

  /** {@link #resetAfterSeconds()} as a Duration. */
  public Duration resetAfter() {
    return Duration.ofSeconds(resetAfterSeconds);
  }
}
