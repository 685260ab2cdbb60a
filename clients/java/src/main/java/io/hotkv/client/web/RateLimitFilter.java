package io.hotkv.client.web;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Objects;

/**
 * A servlet filter ({@code jakarta.servlet}) that rate limits requests with an {@link
 * HttpRateLimiter}: allowed requests continue down the chain with the RateLimit headers set,
 * refused ones get 429 with Retry-After, and server failures fail open or closed as configured.
 * Requests that are not HTTP pass through unchecked.
 *
 * <pre>{@code
 * HttpRateLimiter limiter = HttpRateLimiter.builder(client)
 *     .limit(Limit.gcra("per-second", Duration.ofSeconds(1), 5))
 *     .build();
 * servletContext.addFilter("rate-limit", new RateLimitFilter(limiter)).addMappingForUrlPatterns(null, false, "/api/*");
 * }</pre>
 */
public final class RateLimitFilter implements Filter {
  private final HttpRateLimiter limiter;

  /** A filter applying {@code limiter}. */
  public RateLimitFilter(HttpRateLimiter limiter) {
    this.limiter = Objects.requireNonNull(limiter, "limiter");
  }

  @Override
  public void doFilter(ServletRequest request, ServletResponse response, FilterChain chain)
      throws IOException, ServletException {
    if (request instanceof HttpServletRequest req
        && response instanceof HttpServletResponse resp
        && !limiter.handle(req, resp)) {
      return;
    }
    chain.doFilter(request, response);
  }
}
