package io.hotkv.client.web;

/**
 * One limit's part in a {@link Decision}, in header units (seconds).
 *
 * @param policy the limit's policy name
 * @param allowed whether this limit allows the request
 * @param tooLarge the cost exceeds this limit's capacity, so no wait helps
 * @param quota the policy's {@code q}: the GCRA burst or the limiter's limit
 * @param window the policy's {@code w} in seconds, at least 1; 0 when unknown (a limiter's
 *     settings could not be read), and then {@code w} is left out
 * @param remaining the RateLimit {@code r}: units left after this request when it was counted,
 *     units left before it when it was not (a refusal, or another limit refused it)
 * @param reset the RateLimit {@code t} in seconds, or -1 when omitted (a named limiter that
 *     allows: its reply has no reset time); when this limit refuses it equals {@code retryAfter}
 * @param retryAfter the wait in whole seconds, rounded up, when this limit refuses; 0 when it
 *     allows or when {@code tooLarge}
 */
public record LimitResult(
    String policy,
    boolean allowed,
    boolean tooLarge,
    long quota,
    long window,
    long remaining,
    long reset,
    long retryAfter) {}
