package replication

// KeySlot is the Redis Cluster hash slot of key (0..16383): CRC16 (XMODEM) of the key, or of
// its hash tag, the part between the first "{" and the next "}" when that part is not empty,
// so that clients route a key here exactly as they route it to a Redis Cluster.
func KeySlot(key []byte) int {
	for i, c := range key {
		if c == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						key = key[i+1 : j]
					}
					return int(crc16(key) & 16383)
				}
			}
			break
		}
	}
	return int(crc16(key) & 16383)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), as Redis Cluster uses.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
