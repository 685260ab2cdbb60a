package io.hotkv.client;

import java.nio.charset.StandardCharsets;
import redis.clients.jedis.commands.ProtocolCommand;

/**
 * The HotKV commands this client sends, as Jedis {@link ProtocolCommand}s.
 *
 * <p>Jedis only knows Redis's own commands; a {@code ProtocolCommand} is how it accepts others,
 * so these go through the same connection handling, pooling, retries and cluster routing as
 * built-in commands. The names are sent in upper case; the server compares them
 * case-insensitively.
 */
public enum HotKVCommand implements ProtocolCommand {
  /** {@code GCRA.LIMIT key period_ms burst [count]}. */
  GCRA_LIMIT("GCRA.LIMIT"),
  /** {@code GCRA.PEEK key period_ms burst [count]}. */
  GCRA_PEEK("GCRA.PEEK"),
  /** {@code GCRA.LIMITALL numlimits key period_ms burst [key period_ms burst ...] [COUNT count]}. */
  GCRA_LIMITALL("GCRA.LIMITALL"),
  /** {@code GCRA.REFUND key period_ms burst [count]}. */
  GCRA_REFUND("GCRA.REFUND"),
  /** {@code GCRA.RESET key [key ...]}. */
  GCRA_RESET("GCRA.RESET"),
  /** {@code CL.THROTTLE key max_burst count_per_period period_s [quantity]}. */
  CL_THROTTLE("CL.THROTTLE"),
  /** {@code RATELIMIT.CREATE name limit window_ms [ALGO a] [REFILL r] [DRAIN r] [SHADOW]}. */
  RATELIMIT_CREATE("RATELIMIT.CREATE"),
  /**
   * {@code RATELIMIT.UPDATE name [LIMIT n] [WINDOW ms] [REFILL r | DRAIN r] [SHADOW ON|OFF] [AT
   * ms]}.
   */
  RATELIMIT_UPDATE("RATELIMIT.UPDATE"),
  /** {@code RATELIMIT.CHECK name key [COST n]}. */
  RATELIMIT_CHECK("RATELIMIT.CHECK"),
  /** {@code RATELIMIT.PEEK name key}. */
  RATELIMIT_PEEK("RATELIMIT.PEEK"),
  /** {@code RATELIMIT.RELEASE name key lease_id}. */
  RATELIMIT_RELEASE("RATELIMIT.RELEASE"),
  /** {@code RATELIMIT.RESET name key}. */
  RATELIMIT_RESET("RATELIMIT.RESET"),
  /** {@code RATELIMIT.STATS name}. */
  RATELIMIT_STATS("RATELIMIT.STATS"),
  /** {@code RATELIMIT.DROP name}. */
  RATELIMIT_DROP("RATELIMIT.DROP"),
  /** {@code RATELIMIT.LIST}. */
  RATELIMIT_LIST("RATELIMIT.LIST");

  private final String wireName;
  private final byte[] raw;

  HotKVCommand(String wireName) {
    this.wireName = wireName;
    this.raw = wireName.getBytes(StandardCharsets.US_ASCII);
  }

  /** The command name as sent, for example {@code GCRA.LIMIT}. */
  public String wireName() {
    return wireName;
  }

  @Override
  public byte[] getRaw() {
    // Jedis writes the array straight to the socket and never modifies it, so it is shared.
    return raw;
  }
}
