/**
 * Redis Cluster key slots, computed by the client itself.
 *
 * HotKV routes GCRA.* and CL.THROTTLE by their key and RATELIMIT.* by the limiter name, exactly
 * as Redis Cluster routes keys: CRC16 (XMODEM) of the key, or of its hash tag, modulo 16384.
 * node-redis's cluster client does the routing; this module lets the HotKV cluster client check
 * multi-key commands (GCRA.RESET) before sending them, and lets applications see where a limiter
 * lives (for example to group keys by node).
 */

/** Number of hash slots in a Redis (and HotKV) cluster. */
export const SLOT_COUNT = 16384;

// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the checksum Redis Cluster uses.
// A 256-entry table is built once at load so each byte costs one lookup.
const TABLE: Uint16Array = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let b = 0; b < 8; b++) {
      crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    t[i] = crc;
  }
  return t;
})();

/** CRC16 (XMODEM) of bytes, as Redis Cluster computes it. */
export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (let i = 0; i < bytes.length; i++) {
    crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ bytes[i]!) & 0xff]!;
  }
  return crc;
}

/** A key as node-redis accepts it: a string (sent as UTF-8) or raw bytes. */
export type KeyLike = string | Uint8Array;

function toBytes(key: KeyLike): Uint8Array {
  return typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
}

/**
 * The part of a key that is hashed: the bytes between the first `{` and the next `}` when that
 * is non-empty (a hash tag), otherwise the whole key. `{user1000}.following` and
 * `{user1000}.followers` share a slot; `{}x` and `x{}` are hashed whole, as in Redis.
 */
export function hashTag(key: KeyLike): Uint8Array {
  const b = toBytes(key);
  const open = b.indexOf(0x7b); // '{'
  if (open === -1) return b;
  const close = b.indexOf(0x7d, open + 1); // '}'
  if (close === -1 || close === open + 1) return b;
  return b.subarray(open + 1, close);
}

/** The cluster slot (0..16383) of a key or limiter name. */
export function keySlot(key: KeyLike): number {
  return crc16(hashTag(key)) & (SLOT_COUNT - 1);
}
