package io.hotkv.client;

import redis.clients.jedis.exceptions.JedisException;

/**
 * A reply the client could not parse into its result type, for example a server that answers a
 * rate-limit command with something other than five integers. Server errors are not reported
 * with this class: they arrive unchanged as Jedis's {@code JedisDataException} with the
 * server's exact text.
 */
public class HotKVReplyException extends JedisException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception; the message starts with {@code hotkv:} and names the command. */
  public HotKVReplyException(String message) {
    super(message);
  }
}
