package io.hotkv.client.web;

/**
 * A named limiter does not exist on the server. The server answers checks against it with all
 * zeros, which would refuse every request; the rate limiter treats it as the configuration error
 * it is, like an unreachable server (fail open or closed).
 */
public class UnknownLimiterException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception for the limiter {@code name}. */
  public UnknownLimiterException(String name) {
    super("hotkv: limiter does not exist: \"" + name + "\"");
  }
}
