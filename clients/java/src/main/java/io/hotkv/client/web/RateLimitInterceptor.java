package io.hotkv.client.web;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.util.Objects;
import org.springframework.web.servlet.HandlerInterceptor;

/**
 * A Spring MVC {@link HandlerInterceptor} that rate limits requests with an {@link
 * HttpRateLimiter}, for applications that limit per handler mapping rather than with a servlet
 * filter. Register it with {@code WebMvcConfigurer.addInterceptors}:
 *
 * <pre>{@code
 * registry.addInterceptor(new RateLimitInterceptor(limiter)).addPathPatterns("/api/**");
 * }</pre>
 *
 * <p>The leases of concurrency limiters are released in {@link #afterCompletion}, which Spring
 * calls when the request is done, also when the handler threw (for an async request, when its
 * async processing has completed).
 *
 * <p>spring-webmvc is an optional dependency of this library: this class needs it on the class
 * path, the rest of the library does not.
 */
public final class RateLimitInterceptor implements HandlerInterceptor {
  private final HttpRateLimiter limiter;

  /** An interceptor applying {@code limiter}. */
  public RateLimitInterceptor(HttpRateLimiter limiter) {
    this.limiter = Objects.requireNonNull(limiter, "limiter");
  }

  /** Checks the request; when it is refused (or fails closed) the response is already written. */
  @Override
  public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler)
      throws Exception {
    return limiter.handle(request, response);
  }

  /** Gives back the request's concurrency leases. */
  @Override
  public void afterCompletion(
      HttpServletRequest request, HttpServletResponse response, Object handler, Exception ex) {
    limiter.release(request);
  }
}
