package io.hotkv.client;

import java.nio.charset.StandardCharsets;
import java.util.List;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.ProtocolCommand;

/** Test helpers: clients in either protocol, raw commands and the server clock. */
public final class Support {
  private Support() {}

  public static final long T0 = 1_700_000_000_000L;

  /** A pooled Jedis client speaking the given protocol to the test server. */
  public static UnifiedJedis jedis(TestServer server, RedisProtocol protocol) {
    return RedisClient.builder()
        .hostAndPort(new HostAndPort(server.host, server.port))
        .clientConfig(DefaultJedisClientConfig.builder().protocol(protocol).build())
        .build();
  }

  public static HotKV client(TestServer server, RedisProtocol protocol) {
    return new HotKV(jedis(server, protocol));
  }

  /** Any command by name, for raw steps and server administration. */
  public record Raw(String name) implements ProtocolCommand {
    @Override
    public byte[] getRaw() {
      return name.getBytes(StandardCharsets.UTF_8);
    }
  }

  public static Object raw(UnifiedJedis jedis, String name, String... args) {
    return jedis.sendCommand(new Raw(name), args);
  }

  public static void clock(UnifiedJedis jedis, long unixMillis) {
    raw(jedis, "DEBUG", "CLOCK", "SET", Long.toString(unixMillis));
  }

  /** FLUSHALL and drop every limiter: a clean server for the next test. */
  public static void clean(HotKV client) {
    client.jedis().flushAll();
    for (String name : client.rateLimit().list()) {
      client.rateLimit().drop(name);
    }
  }

  /** The protocol a connection of this client actually speaks, from CLIENT INFO. */
  public static int negotiatedProtocol(UnifiedJedis jedis) {
    Object info = raw(jedis, "CLIENT", "INFO");
    String text = new String((byte[]) info, StandardCharsets.UTF_8);
    for (String field : text.trim().split(" ")) {
      if (field.startsWith("resp=")) {
        return Integer.parseInt(field.substring(5));
      }
    }
    throw new AssertionError("no resp= in CLIENT INFO: " + text);
  }

  public static final List<RedisProtocol> PROTOCOLS = List.of(RedisProtocol.RESP2, RedisProtocol.RESP3);
}
