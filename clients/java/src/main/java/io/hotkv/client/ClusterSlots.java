package io.hotkv.client;

import java.nio.charset.StandardCharsets;

/**
 * Redis Cluster hash slots, as the cluster specification defines them: {@code CRC16(key) mod
 * 16384}, where only the hash tag is hashed when the key has one (the bytes between the first
 * {@code {} and the next {@code }}, if that is not empty).
 *
 * <p>Jedis computes the slot itself when it routes a command; this class exists so that
 * applications can check that keys meant to stay together (the keys of one {@code GCRA.RESET},
 * a user's limits) share a slot, and so the tests can check that every command routes on the
 * argument the server declares as its key.
 */
public final class ClusterSlots {
  /** The number of hash slots in a Redis cluster. */
  public static final int SLOTS = 16384;

  private ClusterSlots() {}

  /** The hash slot of a key given as text (UTF-8 encoded, as Jedis sends it). */
  public static int slot(String key) {
    return slot(key.getBytes(StandardCharsets.UTF_8));
  }

  /** The hash slot of a key. */
  public static int slot(byte[] key) {
    int start = 0;
    int end = key.length;
    for (int i = 0; i < key.length; i++) {
      if (key[i] == '{') {
        for (int j = i + 1; j < key.length; j++) {
          if (key[j] == '}') {
            if (j > i + 1) {
              start = i + 1;
              end = j;
            }
            break;
          }
        }
        break; // only the first '{' counts, tagged or not
      }
    }
    return crc16(key, start, end) & (SLOTS - 1);
  }

  /**
   * CRC16 in the XMODEM variant the cluster uses (polynomial 0x1021, initial value 0, no
   * reflection), computed bit by bit: keys are short, and this avoids a 512-byte table.
   */
  static int crc16(byte[] data, int from, int to) {
    int crc = 0;
    for (int i = from; i < to; i++) {
      crc ^= (data[i] & 0xff) << 8;
      for (int b = 0; b < 8; b++) {
        crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
      }
      crc &= 0xffff;
    }
    return crc;
  }
}
