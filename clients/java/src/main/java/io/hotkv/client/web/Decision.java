package io.hotkv.client.web;

import jakarta.servlet.ServletRequest;
import java.util.List;
import java.util.Optional;

/**
 * The rate limiter's verdict on a request. It is stored as a request attribute, so the
 * application (for an allowed request) and the denied handler can read it with {@link
 * #from(ServletRequest)}.
 *
 * @param allowed every limit allows the request (and it was counted)
 * @param retryAfter the Retry-After value: the longest wait among the refusing limits, in whole
 *     seconds rounded up; 0 when allowed or when only too-large refusals remain, in which case no
 *     Retry-After is sent because waiting would not help
 * @param tooLarge some limit can never allow the request's cost
 * @param results one entry per limit, in configuration order
 */
public record Decision(boolean allowed, long retryAfter, boolean tooLarge, List<LimitResult> results) {

  /** The request attribute holding the decision. */
  public static final String ATTRIBUTE = Decision.class.getName();

  /** The decision made for this request, if the rate limiter made one. */
  public static Optional<Decision> from(ServletRequest request) {
    return request.getAttribute(ATTRIBUTE) instanceof Decision d ? Optional.of(d) : Optional.empty();
  }
}
