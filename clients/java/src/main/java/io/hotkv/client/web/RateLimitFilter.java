package io.hotkv.client.web;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import java.io.IOException;
import java.util.Objects;

/**
 * A servlet filter ({@code jakarta.servlet}) that rate limits requests with an {@link
 * HttpRateLimiter}: allowed requests continue down the chain with the RateLimit headers set,
 * refused ones get 429 with Retry-After, and server failures fail open or closed as configured.
 * Requests that are not HTTP pass through unchecked. The leases of concurrency limiters are
 * released when the rest of the chain returns or throws, or, for a request that went
 * asynchronous, when it completes, fails or times out.
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
    if (!(request instanceof HttpServletRequest req) || !(response instanceof HttpServletResponse resp)) {
      chain.doFilter(request, response);
      return;
    }
    if (!limiter.handle(req, resp)) {
      return;
    }
    boolean async = false;
    try {
      chain.doFilter(request, response);
      async = req.isAsyncStarted();
    } finally {
      if (async) {
        // The request is not done until its async processing is: release then.
        req.getAsyncContext().addListener(new ReleaseOnCompletion(limiter, req));
      } else {
        limiter.release(req);
      }
    }
  }

  /** Releases a request's leases when its async processing ends, however it ends. */
  private record ReleaseOnCompletion(HttpRateLimiter limiter, HttpServletRequest request)
      implements AsyncListener {
    @Override
    public void onComplete(AsyncEvent event) {
      limiter.release(request);
    }

    @Override
    public void onTimeout(AsyncEvent event) {
      limiter.release(request);
    }

    @Override
    public void onError(AsyncEvent event) {
      limiter.release(request);
    }

    @Override
    public void onStartAsync(AsyncEvent event) {
      // A new async cycle: keep listening, the request is not done yet.
      event.getAsyncContext().addListener(this);
    }
  }
}
