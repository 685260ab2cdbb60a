package io.hotkv.client;

import java.time.Duration;

/**
 * What {@code RATELIMIT.UPDATE} changes: each null component is left as it is and not sent; at
 * least one must be set (the server replies {@code ERR syntax error} otherwise). The algorithm
 * cannot change. Immutable: start from {@link #of()} and chain the changes, each returning a new
 * value, for example {@code RateLimitUpdate.of().limit(200).shadow(false)}.
 *
 * <p>The server's {@code AT ms} option is not offered: it is the instant the server journals a
 * conversion at, not an application setting (as in the Go client).
 *
 * @param limit the new limit ({@code LIMIT}), or null
 * @param windowMillis the new window in milliseconds ({@code WINDOW}), or null; a limiter on the
 *     default rate (limit per window) follows it
 * @param refill the new token_bucket rate in tokens per second ({@code REFILL}), or null
 * @param drain the new leaky_bucket rate in units per second ({@code DRAIN}), or null
 * @param shadow shadow mode on or off ({@code SHADOW ON|OFF}), or null
 */
public record RateLimitUpdate(
    Long limit, Long windowMillis, Double refill, Double drain, Boolean shadow) {

  private static final RateLimitUpdate NONE = new RateLimitUpdate(null, null, null, null, null);

  /** No change yet: the start of a chain. Sent as it is, the server refuses it. */
  public static RateLimitUpdate of() {
    return NONE;
  }

  /** This update with a new limit. */
  public RateLimitUpdate limit(long limit) {
    return new RateLimitUpdate(limit, windowMillis, refill, drain, shadow);
  }

  /** This update with a new window in milliseconds. */
  public RateLimitUpdate windowMillis(long windowMillis) {
    return new RateLimitUpdate(limit, windowMillis, refill, drain, shadow);
  }

  /** This update with a new window, sent in whole milliseconds (truncated). */
  public RateLimitUpdate window(Duration window) {
    return windowMillis(HotKVCommands.millis(window));
  }

  /** This update with a new token_bucket rate in tokens per second. */
  public RateLimitUpdate refill(double perSecond) {
    return new RateLimitUpdate(limit, windowMillis, perSecond, drain, shadow);
  }

  /** This update with a new leaky_bucket rate in units per second. */
  public RateLimitUpdate drain(double perSecond) {
    return new RateLimitUpdate(limit, windowMillis, refill, perSecond, shadow);
  }

  /** This update switching shadow mode on (true) or off (false). */
  public RateLimitUpdate shadow(boolean on) {
    return new RateLimitUpdate(limit, windowMillis, refill, drain, on);
  }
}
