package io.hotkv.client.web;

import java.time.Duration;
import java.util.Objects;

/**
 * One limit a request must pass: a GCRA limit ({@link #gcra}), which needs nothing created on the
 * server, or a named {@code RATELIMIT} limiter ({@link #limiter}). Instances are immutable; the
 * {@code with} methods return modified copies.
 */
public final class Limit {
  enum Kind {
    GCRA,
    LIMITER
  }

  final Kind kind;
  final String policy;
  final String limiter;
  final String prefix;
  final long periodMillis;
  final long burst;
  final KeyResolver key;

  private Limit(
      Kind kind,
      String policy,
      String limiter,
      String prefix,
      long periodMillis,
      long burst,
      KeyResolver key) {
    this.kind = kind;
    this.policy = policy;
    this.limiter = limiter;
    this.prefix = prefix;
    this.periodMillis = periodMillis;
    this.burst = burst;
    this.key = key;
  }

  /**
   * A limit of {@code burst} units per {@code period} with smooth refill ({@code GCRA.LIMIT}):
   * bursts of up to {@code burst}, then one unit every {@code period / burst}. Its state lives in
   * the key {@code rl:<name>:<request key>} (change the prefix with {@link #withPrefix}). {@code
   * name} is also the policy name in the RateLimit headers. The period is sent in whole
   * milliseconds.
   */
  public static Limit gcra(String name, Duration period, long burst) {
    return new Limit(Kind.GCRA, name, null, "rl:" + name + ":", period.toMillis(), burst, null);
  }

  /**
   * A named {@code RATELIMIT} limiter, which must have been created (for example at start-up
   * with {@code client.rateLimit().create(...)}). The limiter name is also the policy name. Its
   * window for RateLimit-Policy's {@code w} is read with {@code RATELIMIT.STATS} and cached.
   */
  public static Limit limiter(String name) {
    return new Limit(Kind.LIMITER, name, name, null, 0, 0, null);
  }

  /** This limit keyed by {@code key} instead of the limiter's default key. */
  public Limit withKey(KeyResolver key) {
    return new Limit(kind, policy, limiter, prefix, periodMillis, burst, key);
  }

  /**
   * A GCRA limit whose state keys start with {@code prefix} instead of {@code rl:<name>:}. Use a
   * prefix no application key shares: an integer-valued key of yours would be taken as limiter
   * state. It changes nothing for a named limiter.
   */
  public Limit withPrefix(String prefix) {
    return new Limit(kind, policy, limiter, Objects.requireNonNull(prefix), periodMillis, burst, key);
  }

  /** This limit with another policy name in the headers. */
  public Limit withPolicy(String name) {
    return new Limit(kind, name, limiter, prefix, periodMillis, burst, key);
  }

  /** The limit's name in the RateLimit-Policy and RateLimit headers. */
  public String policy() {
    return policy;
  }

  @Override
  public String toString() {
    return kind == Kind.GCRA
        ? "Limit.gcra(" + policy + ", " + periodMillis + "ms, " + burst + ")"
        : "Limit.limiter(" + limiter + ")";
  }
}
