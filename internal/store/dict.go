package store

import "unsafe"

// dict is a shard's hash table: chained buckets over a chunked slab of entries.
//
// It is hand-written rather than a Go map for three reasons the product depends on:
//   - SCAN needs a cursor that survives resizes. Power-of-two buckets walked in reverse-binary
//     order (Redis's dictScan) return every key present for the whole scan at least once,
//     even when the table grows or shrinks between calls. A Go map cannot resume.
//   - RANDOMKEY needs a random element in O(1) expected time.
//   - Entries live in fixed-size chunks that never move, so a *Entry stays valid while the
//     shard lock is held, however many keys are inserted meanwhile.
//
// Buckets hold entry index + 1 (0 = empty) and entries link through next, so the index arrays
// contain no pointers for the garbage collector to scan.
type dict struct {
	buckets []int32
	chunks  [][]Entry
	free    []int32 // indexes of deleted entries, reused before the slab grows
	used    int     // entries in the slab, live or free
	count   int     // live entries
}

const (
	// chunkSize is the entries per slab chunk: 640 entries, 40 KiB. A chunk is one Go
	// allocation of pointer-holding entries, and its size decides what it really costs: up to
	// 32 KiB such objects carry an 8-byte allocation header that pushes a power-of-two size
	// into the next size class (and off cache-line alignment), while larger ones are whole
	// pages with no header. 40 KiB is the smallest size that is exact pages. Small chunks
	// matter because a shard's last chunk is partly empty (half of one on average): with 64
	// shards per database, 1024-entry chunks left 20 bytes per key idle at 200k keys, 640
	// leave 6 on average. Indexing divides by a constant, which compiles to a multiply.
	chunkSize    = 640
	minBuckets   = 16
	noEntry      = int32(0)
	shrinkFactor = 8 // shrink when fewer than 1/8 of the buckets are used
)

func (d *dict) at(i int32) *Entry {
	u := uint32(i)
	return &d.chunks[u/chunkSize][u%chunkSize]
}

// find returns the entry for key, or nil.
func (d *dict) find(key []byte, h uint64) *Entry {
	if d.count == 0 {
		return nil
	}
	h32 := uint32(h)
	for i := d.buckets[h&uint64(len(d.buckets)-1)]; i != noEntry; {
		e := d.at(i - 1)
		if e.hash == h32 && e.klen == uint32(len(key)) && unsafe.String(e.kptr, e.klen) == string(key) {
			return e
		}
		i = e.next
	}
	return nil
}

// insert adds a new entry for key, which must not be present, and returns it zeroed but for
// the key. The key bytes are copied.
func (d *dict) insert(key []byte, h uint64) *Entry {
	if d.count >= len(d.buckets) {
		d.resize(max(minBuckets, 2*len(d.buckets)))
	}
	var idx int32
	if n := len(d.free); n > 0 {
		idx = d.free[n-1]
		d.free = d.free[:n-1]
	} else {
		if d.used/chunkSize == len(d.chunks) {
			d.chunks = append(d.chunks, make([]Entry, chunkSize))
		}
		idx = int32(d.used)
		d.used++
	}
	e := d.at(idx)
	b := h & uint64(len(d.buckets)-1)
	k := string(key)
	*e = Entry{kptr: unsafe.StringData(k), klen: uint32(len(k)), hash: uint32(h), next: d.buckets[b], self: idx}
	d.buckets[b] = idx + 1
	d.count++
	return e
}

// remove unlinks e from its chain and frees its slot.
func (d *dict) remove(e *Entry) {
	b := uint64(e.hash) & uint64(len(d.buckets)-1)
	link := &d.buckets[b]
	for *link != noEntry {
		cur := d.at(*link - 1)
		if cur == e {
			*link = e.next
			break
		}
		link = &cur.next
	}
	idx := e.self
	*e = Entry{self: idx, next: -1} // drop references so the GC can reclaim them
	d.free = append(d.free, idx)
	d.count--
	if d.count == 0 {
		// Give the memory back after a flush or mass expiry.
		*d = dict{}
		return
	}
	if len(d.buckets) > minBuckets && d.count*shrinkFactor < len(d.buckets) {
		d.resize(max(minBuckets, nextPow2(d.count*2)))
	}
}

// resize rebuilds the bucket array with n buckets (a power of two), walking the slab in memory
// order with each entry's stored hash bits: no key is read or hashed. It is not incremental:
// a shard of N keys pauses for one pass over its entries, which sharding keeps small.
func (d *dict) resize(n int) {
	nb := make([]int32, n)
	mask := uint64(n - 1)
	for i := 0; i < d.used; i++ {
		e := d.at(int32(i))
		if e.next < 0 {
			continue // a free slot
		}
		b := uint64(e.hash) & mask
		e.next = nb[b]
		nb[b] = e.self + 1
	}
	d.buckets = nb
}

// scan calls fn for every entry in the bucket the cursor names, plus the buckets that map to it
// in a larger table, and returns the next cursor (0 when done). This is Redis's reverse-binary
// cursor: it guarantees that entries present for the whole scan are visited at least once.
func (d *dict) scan(cursor uint64, fn func(e *Entry)) uint64 {
	if d.count == 0 {
		return 0
	}
	mask := uint64(len(d.buckets) - 1)
	for i := d.buckets[cursor&mask]; i != noEntry; {
		e := d.at(i - 1)
		next := e.next
		fn(e)
		i = next
	}
	cursor |= ^mask
	cursor = reverseBits(cursor)
	cursor++
	cursor = reverseBits(cursor)
	return cursor
}

// random returns a random live entry, or nil when empty. rnd supplies random numbers.
func (d *dict) random(rnd func(n uint64) uint64) *Entry {
	if d.count == 0 {
		return nil
	}
	mask := uint64(len(d.buckets) - 1)
	for {
		i := d.buckets[rnd(mask+1)]
		if i == noEntry {
			continue
		}
		// Pick uniformly inside the chain, as Redis's dictGetFairRandomKey approximates.
		n := 0
		for j := i; j != noEntry; j = d.at(j - 1).next {
			n++
		}
		k := rnd(uint64(n))
		for ; k > 0; k-- {
			i = d.at(i - 1).next
		}
		return d.at(i - 1)
	}
}

// each calls fn for every live entry; fn must not insert or delete.
func (d *dict) each(fn func(e *Entry) bool) {
	for _, i := range d.buckets {
		for i != noEntry {
			e := d.at(i - 1)
			next := e.next
			if !fn(e) {
				return
			}
			i = next
		}
	}
}

// eachSlab visits every live entry in slab order: the order entries sit in memory, so the walk
// streams through the chunks instead of jumping to a random entry per bucket. Snapshots copy a
// shard this way while holding its lock, where every cache miss is time the shard's commands
// wait. fn may delete the entry it is given.
func (d *dict) eachSlab(fn func(e *Entry) bool) {
	for c, chunk := range d.chunks {
		n := min(chunkSize, d.used-c*chunkSize)
		for i := range chunk[:max(n, 0)] {
			if e := &chunk[i]; e.next != -1 {
				if !fn(e) {
					return
				}
			}
		}
	}
}

func reverseBits(v uint64) uint64 {
	v = (v>>1)&0x5555555555555555 | (v&0x5555555555555555)<<1
	v = (v>>2)&0x3333333333333333 | (v&0x3333333333333333)<<2
	v = (v>>4)&0x0F0F0F0F0F0F0F0F | (v&0x0F0F0F0F0F0F0F0F)<<4
	v = (v>>8)&0x00FF00FF00FF00FF | (v&0x00FF00FF00FF00FF)<<8
	v = (v>>16)&0x0000FFFF0000FFFF | (v&0x0000FFFF0000FFFF)<<16
	return v>>32 | v<<32
}

func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}
