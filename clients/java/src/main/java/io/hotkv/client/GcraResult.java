package io.hotkv.client;

import java.time.Duration;

/**
 * The reply of {@code GCRA.LIMIT} and {@code GCRA.PEEK}:
 * {@code [denied, limit, remaining, retry_after_ms, reset_after_ms]}, identical in RESP2 and
 * RESP3.
 *
 * @param denied true when the request is refused; a denied request changed nothing
 * @param limit the burst the call was made with
 * @param remaining units still available after this request (0 when denied)
 * @param retryAfterMillis -1 when allowed; when denied, the milliseconds until this same request
 *     would be allowed if nothing else happens (at least 1), or -1 when count &gt; burst and no
 *     wait can help. Waits are rounded up on the server, so waiting this long is enough.
 * @param resetAfterMillis milliseconds until a full burst is available again; right after an
 *     allowed {@code GCRA.LIMIT} it equals the key's {@code PTTL}
 */
public record GcraResult(
    boolean denied, long limit, long remaining, long retryAfterMillis, long resetAfterMillis) {

  /** {@code !denied()}, for readability at call sites. */
  public boolean allowed() {
    return !denied;
  }

  /**
   * A request that can never be allowed because its count exceeds the burst: answer "too large"
   * rather than ask the caller to wait.
   */
  public boolean tooLarge() {
    return denied && retryAfterMillis < 0;
  }

  /**
   * {@link #retryAfterMillis()} as a Duration: zero when allowed, the wait when denied, and
   * negative (-1 ms) when the request can never be allowed ({@link #tooLarge()}).
   */
  public Duration retryAfter() {
    return Results.millis(retryAfterMillis, !denied);
  }

  /** {@link #resetAfterMillis()} as a Duration. */
  public Duration resetAfter() {
    return Duration.ofMillis(resetAfterMillis);
  }
}
