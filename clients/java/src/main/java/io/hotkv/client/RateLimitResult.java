package io.hotkv.client;

import java.time.Duration;

/**
 * The reply of {@code RATELIMIT.CHECK} and {@code RATELIMIT.PEEK}:
 * {@code [allowed, remaining, retry_after_ms, limit, current]}, and a sixth field, {@code
 * lease_id}, from a {@code CHECK} on a {@link Algorithm#CONCURRENCY} limiter. Note the polarity: the first
 * field is "allowed", where GCRA's is "denied"; the record names them so they cannot be mixed
 * up.
 *
 * @param allowed true when the request passes ({@code CHECK} counted it)
 * @param remaining {@code limit - current - cost} when allowed ({@code PEEK}:
 *     {@code limit - current}), {@code max(0, limit - current)} when denied
 * @param retryAfterMillis 0 when allowed; when denied, the milliseconds until a request of this
 *     cost would pass if nothing else happens (at least 1), or -1 when cost &gt; limit
 * @param limit the limiter's limit; 0 means the limiter does not exist ({@link
 *     #unknownLimiter()})
 * @param current the units in use before this request
 * @param leaseId the lease an allowed {@code CHECK} on a concurrency limiter acquired, to give
 *     back with {@link RateLimit#release} when the work is done; 0 when none was (denied, {@code
 *     PEEK}, or another algorithm, whose replies have five fields). An opaque 64-bit id; a Java
 *     {@code long} holds it exactly.
 */
public record RateLimitResult(
    boolean allowed, long remaining, long retryAfterMillis, long limit, long current, long leaseId) {

  /** A result without a lease (the five-field reply of every algorithm but concurrency). */
  public RateLimitResult(
      boolean allowed, long remaining, long retryAfterMillis, long limit, long current) {
    this(allowed, remaining, retryAfterMillis, limit, current, 0);
  }

  /**
   * The all-zero reply the server gives for a limiter that does not exist. It is not an error
   * on the wire, but it is a configuration problem: {@link #allowed()} is false.
   */
  public boolean unknownLimiter() {
    return limit == 0;
  }

  /** A cost above the limit, which can never be allowed. */
  public boolean tooLarge() {
    return !allowed && retryAfterMillis < 0;
  }

  /**
   * {@link #retryAfterMillis()} as a Duration: zero when allowed, the wait when denied, negative
   * (-1 ms) when the request can never be allowed.
   */
  public Duration retryAfter() {
    return Results.millis(retryAfterMillis, allowed);
  }
}
