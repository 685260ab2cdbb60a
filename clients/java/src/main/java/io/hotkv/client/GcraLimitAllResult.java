package io.hotkv.client;

import java.time.Duration;
import java.util.List;

/**
 * The reply of {@code GCRA.LIMITALL}: {@code [denied, retry_after_ms, <GCRA.LIMIT reply of each
 * limit>...]}, identical in RESP2 and RESP3.
 *
 * @param denied true when at least one limit refused the request; then nothing was recorded
 *     anywhere
 * @param retryAfterMillis -1 when admitted; when denied, the largest wait among the denying
 *     limits, or -1 when one of them can never allow the count (count &gt; its burst)
 * @param limits each limit's {@code GCRA.LIMIT} reply, in the order the limits were given; when
 *     the request was denied they say what each limit would have answered, and none was recorded
 */
public record GcraLimitAllResult(boolean denied, long retryAfterMillis, List<GcraResult> limits) {

  /** Keeps the list unmodifiable, as a record's value should be. */
  public GcraLimitAllResult {
    limits = List.copyOf(limits);
  }

  /** {@code !denied()}, for readability at call sites. */
  public boolean allowed() {
    return !denied;
  }

  /** A request that can never be admitted: its count exceeds a limit's burst. */
  public boolean tooLarge() {
    return denied && retryAfterMillis < 0;
  }

  /**
   * {@link #retryAfterMillis()} as a Duration: zero when admitted, the wait when denied, and
   * negative (-1 ms) when the request can never be admitted ({@link #tooLarge()}).
   */
  public Duration retryAfter() {
    return Results.millis(retryAfterMillis, !denied);
  }
}
