package io.hotkv.client;

import java.time.Duration;
import java.util.List;

/**
 * Named limiters ({@code RATELIMIT.*}, an Enterprise feature), from {@link HotKV#rateLimit()}.
 * Create a limiter once with its algorithm and limits, then check any number of keys (user ids,
 * IP addresses, API keys) against it.
 *
 * <p>In a cluster a limiter lives on the node serving the slot of its name, and every command
 * naming it is routed there; {@link #list()} lists the limiters of one node.
 */
public final class RateLimit {
  private final HotKV client;

  RateLimit(HotKV client) {
    this.client = client;
  }

  /**
   * {@code RATELIMIT.CREATE name limit windowMillis [ALGO algorithm] [REFILL refill] [DRAIN
   * drain]}; each null argument is left out and the server's default applies (sliding window; a
   * bucket's rate defaults to {@code limit} per window). {@code refill} is for {@link
   * Algorithm#TOKEN_BUCKET}, {@code drain} for {@link Algorithm#LEAKY_BUCKET}, both in units per
   * second.
   *
   * <p>Creating a name that exists fails with {@code ERR limiter already exists or limit reached},
   * even with identical settings, so an application that creates its limiters at start-up may
   * ignore that error. To change a limiter in place, keeping its state, use {@link #update}.
   *
   * @return {@code "OK"}
   */
  public String create(
      String name, long limit, long windowMillis, Algorithm algorithm, Double refill, Double drain) {
    return create(name, limit, windowMillis, algorithm, refill, drain, false);
  }

  /**
   * {@link #create(String, long, long, Algorithm, Double, Double)} with {@code shadow}: true sends
   * the SHADOW flag and creates the limiter in shadow mode. Every check is then allowed while the
   * decision is still recorded and counted as an enforced limiter would, so a limit can be
   * measured in production before it is enforced ({@code update(name,
   * RateLimitUpdate.of().shadow(false))} turns it off). A shadow denial is an allowed result with
   * {@link RateLimitResult#retryAfterMillis()} other than 0.
   *
   * @return {@code "OK"}
   */
  public String create(
      String name,
      long limit,
      long windowMillis,
      Algorithm algorithm,
      Double refill,
      Double drain,
      boolean shadow) {
    return client.execute(
        HotKVCommands.rateLimitCreate(name, limit, windowMillis, algorithm, refill, drain, shadow));
  }

  /** {@link #create(String, long, long, Algorithm, Double, Double)} with the window as a Duration. */
  public String create(
      String name, long limit, Duration window, Algorithm algorithm, Double refill, Double drain) {
    return create(name, limit, HotKVCommands.millis(window), algorithm, refill, drain);
  }

  /**
   * {@link #create(String, long, long, Algorithm, Double, Double, boolean)} with the window as a
   * Duration.
   */
  public String create(
      String name,
      long limit,
      Duration window,
      Algorithm algorithm,
      Double refill,
      Double drain,
      boolean shadow) {
    return create(name, limit, HotKVCommands.millis(window), algorithm, refill, drain, shadow);
  }

  /**
   * {@code RATELIMIT.UPDATE name [LIMIT n] [WINDOW ms] [REFILL r | DRAIN r] [SHADOW ON|OFF]}:
   * changes a limiter in place, sending only what {@code update} sets. The limiter keeps its
   * keys' state and its totals: a sliding window keeps its log (a key above a lowered limit
   * waits until enough units age out), a bucket keeps each key's units in use, clamped to the new
   * limit. A limiter on the default rate stays on it, recomputed from the new limit and window.
   * An unknown limiter gives {@code ERR limiter not found}.
   *
   * @return {@code "OK"}
   */
  public String update(String name, RateLimitUpdate update) {
    return client.execute(HotKVCommands.rateLimitUpdate(name, update));
  }

  /**
   * {@code RATELIMIT.CHECK name key [COST cost]}: checks a request of {@code cost} units for
   * {@code key} (null: one unit, the server's default) and counts it if allowed. A limiter that
   * does not exist is not an error: the reply is all zeros, so {@link RateLimitResult#allowed()}
   * is false and {@link RateLimitResult#unknownLimiter()} true.
   */
  public RateLimitResult check(String name, String key, Long cost) {
    return client.execute(HotKVCommands.rateLimitCheck(name, key, cost));
  }

  /** {@link #check(String, String, Long)} for one unit. */
  public RateLimitResult check(String name, String key) {
    return check(name, key, null);
  }

  /**
   * {@code RATELIMIT.PEEK name key}: the reply {@code CHECK} would give for a cost of one,
   * counting nothing. Read-only.
   */
  public RateLimitResult peek(String name, String key) {
    return client.execute(HotKVCommands.rateLimitPeek(name, key));
  }

  /**
   * {@code RATELIMIT.RELEASE name key leaseId}: gives back a lease a {@link Algorithm#CONCURRENCY}
   * limiter's check acquired ({@link RateLimitResult#leaseId()}), freeing its units at once. True
   * when the key held that live lease and it is now released; false when it was released
   * already, had expired, was never issued or is another key's. Releasing is idempotent, so
   * retrying is safe: release in a {@code finally} right after an allowed check.
   *
   * <p>Errors ({@code JedisDataException}): a lease id of 0 or less is {@code ERR invalid lease:
   * must be a positive integer}, an unknown limiter {@code ERR limiter not found}, another
   * algorithm's limiter {@code ERR limiter is not a concurrency limiter}.
   */
  public boolean release(String name, String key, long leaseId) {
    return client.execute(HotKVCommands.rateLimitRelease(name, key, leaseId));
  }

  /**
   * {@code RATELIMIT.RESET name key}: forgets one key's state; true when it had some. An unknown
   * limiter gives {@code ERR limiter not found}.
   */
  public boolean reset(String name, String key) {
    return client.execute(HotKVCommands.rateLimitReset(name, key));
  }

  /** {@code RATELIMIT.STATS name}: settings, live keys, totals and shadow mode. */
  public RateLimitStats stats(String name) {
    return client.execute(HotKVCommands.rateLimitStats(name));
  }

  /**
   * {@code RATELIMIT.DROP name}: deletes the limiter with its state and totals; checks against it
   * then reply all zeros.
   *
   * @return {@code "OK"}
   */
  public String drop(String name) {
    return client.execute(HotKVCommands.rateLimitDrop(name));
  }

  /**
   * {@code RATELIMIT.LIST}: the limiter names, sorted bytewise. In a cluster this is one node's
   * list (whichever node Jedis picks for a keyless command); ask each primary for all of them.
   */
  public List<String> list() {
    return client.execute(HotKVCommands.rateLimitList());
  }
}
