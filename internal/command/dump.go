package command

import (
	"errors"

	"github.com/hotkv/hotkv/internal/rdb"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// DUMP and RESTORE move single values in Redis's own payload format (internal/rdb), so a
// value dumped from Redis restores into HotKV and the other way round: migration tools built
// on DUMP/RESTORE work in both directions. RESTORE follows Redis 7.0's restoreCommand: option
// parsing first, then BUSYKEY, then the TTL, then the payload's checksum, then its contents;
// a TTL already in the past deletes the key (with REPLACE) instead of creating it.
//
// RESTORE is journaled as RESTORE key abs-ms payload REPLACE ABSTTL (or DEL key when the TTL
// had passed): the payload is deterministic data, and the time absolute.

func dumpCommands() []*Command {
	return []*Command{
		{Name: "dump", Arity: 2, Flags: FlagReadOnly, ACL: []string{"keyspace", "read", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRO | KSAccess),
			Group: "generic", Since: "2.6.0",
			Complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
			Syntax:     "key", Summary: "Return a serialized version of the value stored at the specified key.",
			Tips: []string{"nondeterministic_output"},
			Doc: "The payload is Redis's (RDB version 10, as Redis 7.0 writes), in the plain encodings every Redis loads, " +
				"so Redis can RESTORE what HotKV dumps. Streams, and hashes with field TTLs, use a HotKV-only type that Redis refuses.",
			Handler: dumpCommand},
		{Name: "restore", Arity: -4, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"keyspace", "write", "slow", "dangerous"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSOW | KSUpdate),
			Group: "generic", Since: "2.6.0",
			Complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
			Syntax:     "key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]",
			Summary:    "Create a key using the provided serialized value, previously obtained using DUMP.",
			Doc: "Reads payloads of Redis 2.6 to 7.4 (RDB versions up to 12) for strings, lists, sets, sorted sets and hashes in " +
				"every encoding Redis writes (ziplist, listpack, intset, quicklist, LZF-compressed strings), and HotKV's own " +
				"DUMP output. Stream payloads and hashes with field TTLs from Redis are refused as \"Bad data format\".",
			Handler: restoreCommand},
	}
}

func dumpCommand(c *Ctx) {
	e := c.LookupRead(c.Args[1])
	if e == nil {
		c.W.Null()
		return
	}
	o, ok := dumpObject(e)
	if !ok {
		c.Error("ERR this value cannot be dumped")
		return
	}
	c.W.Bulk(rdb.Dump(o))
}

// dumpObject describes a value for rdb.Dump. Members are copied: packed encodings hand out
// strings that alias their bytes.
func dumpObject(e *store.Entry) (*rdb.Object, bool) {
	o := &rdb.Object{}
	switch e.Val.Kind {
	case store.KindString:
		o.Kind, o.Str = rdb.String, append([]byte(nil), StringBytes(&e.Val, nil)...)
	case store.KindList:
		l := e.Val.Obj().(*types.List)
		o.Kind = rdb.List
		for i := range l.Len() {
			o.Elems = append(o.Elems, []byte(l.Index(i)))
		}
	case store.KindSet:
		o.Kind = rdb.Set
		e.Val.Obj().(setOperand).Each(func(m string) bool {
			o.Elems = append(o.Elems, []byte(m))
			return true
		})
	case store.KindZSet:
		o.Kind = rdb.ZSet
		e.Val.Obj().(*types.ZSet).Each(func(m string, score float64) bool {
			o.Elems = append(o.Elems, []byte(m))
			o.Scores = append(o.Scores, score)
			return true
		})
	case store.KindHash:
		h := e.Val.Obj().(*types.Hash)
		if h.HasFieldTTLs() {
			// Redis 7.0's format has no field TTLs (7.4's metadata types are not written):
			// HotKV's own hash payload keeps them, under the private type.
			o.Kind, o.PrivateKind, o.Str = rdb.Private, uint8(store.KindHash), e.Payload(nil)
			return o, o.Str != nil
		}
		o.Kind = rdb.Hash
		h.Each(func(f, v string) bool {
			o.Elems = append(o.Elems, []byte(f), []byte(v))
			return true
		})
	default:
		p := e.Payload(nil)
		if p == nil {
			return nil, false
		}
		o.Kind, o.PrivateKind, o.Str = rdb.Private, uint8(e.Val.Kind), p
	}
	return o, true
}

// restoredValue builds the store value of a decoded payload, in the encoding its size calls
// for, as Redis converts what it loads.
func restoredValue(o *rdb.Object, now int64) (store.Value, bool) {
	switch o.Kind {
	case rdb.String:
		return StringValue(o.Str), true
	case rdb.List:
		l := types.NewList()
		for _, e := range o.Elems {
			l.PushRight(string(e))
		}
		return store.ObjValue(store.KindList, l), true
	case rdb.Set:
		s := types.NewSet()
		for _, e := range o.Elems {
			s.Add(string(e))
		}
		return store.ObjValue(store.KindSet, s), true
	case rdb.ZSet:
		maxLen := 0
		for _, e := range o.Elems {
			maxLen = max(maxLen, len(e))
		}
		z := types.NewZSetFor(len(o.Elems), maxLen)
		for i, e := range o.Elems {
			z.Set(string(e), o.Scores[i])
		}
		return store.ObjValue(store.KindZSet, z), true
	case rdb.Hash:
		h := types.NewHash()
		for i := 0; i+1 < len(o.Elems); i += 2 {
			h.Set(string(o.Elems[i]), string(o.Elems[i+1]))
		}
		return store.ObjValue(store.KindHash, h), true
	case rdb.StreamValue:
		return restoredStream(o.Stream)
	case rdb.Private:
		if f := privateLoaders[store.Kind(o.PrivateKind)]; f != nil {
			return f(o.Str, now)
		}
	}
	return store.Value{}, false
}

// restoredStream builds a stream read from a Redis payload, as Redis's loader does: a legacy
// payload's groups get the entries-read Redis estimates for them.
func restoredStream(rs *rdb.Stream) (store.Value, bool) {
	x := types.NewStream()
	for _, e := range rs.Entries {
		x.Append(types.StreamID(e.ID), e.Fields)
	}
	x.SetMeta(types.StreamID(rs.LastID), rs.EntriesAdded, true, types.StreamID(rs.MaxDeleted))
	for _, g := range rs.Groups {
		read := g.EntriesRead
		if rs.Legacy {
			read = x.EstimateEntriesRead(types.StreamID(g.LastID))
		}
		sg := x.CreateGroup(string(g.Name), types.StreamID(g.LastID), read)
		if sg == nil {
			return store.Value{}, false // a duplicate group name
		}
		for _, c := range g.Consumers {
			sc := sg.CreateConsumer(string(c.Name), c.SeenTime)
			if sc == nil {
				return store.Value{}, false
			}
			for _, p := range c.Pending {
				n := sg.Assign(types.StreamID(p.ID), sc, p.DeliveryTime)
				n.DeliveryCount = p.DeliveryCount
			}
		}
	}
	return store.ObjValue(store.KindStream, x), true
}

// privateLoaders decode HotKV-only payloads (rdb.TypeHotKV) from their snapshot payload at
// time now; an empty result (a hash whose field TTLs have all passed) is a zero Value.
var privateLoaders = map[store.Kind]func(p []byte, now int64) (store.Value, bool){
	store.KindHash: func(p []byte, now int64) (store.Value, bool) {
		h, err := types.HashFromPayload(p)
		if err != nil {
			return store.Value{}, false
		}
		if h.ExpireFields(now, nil); h.Len() == 0 {
			return store.Value{}, true
		}
		return h.Value(), true
	},
	store.KindStream: func(p []byte, _ int64) (store.Value, bool) {
		x, err := types.StreamFromPayload(p)
		if err != nil {
			return store.Value{}, false
		}
		return store.ObjValue(store.KindStream, x), true
	},
}

func restoreCommand(c *Ctx) {
	replace, absTTL := false, false
	idle, freq := int64(-1), int64(-1)
	for j := 4; j < len(c.Args); j++ {
		more := len(c.Args) - j - 1
		switch {
		case c.ArgIs(j, "replace"):
			replace = true
		case c.ArgIs(j, "absttl"):
			absTTL = true
		case c.ArgIs(j, "idletime") && more >= 1 && freq == -1:
			v, ok := c.Int(j + 1)
			if !ok {
				return
			}
			if v < 0 {
				c.Error("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle = v
			j++
		case c.ArgIs(j, "freq") && more >= 1 && idle == -1:
			v, ok := c.Int(j + 1)
			if !ok {
				return
			}
			if v < 0 || v > 255 {
				c.Error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq = v
			j++
		default:
			c.Syntax()
			return
		}
	}
	key := c.Args[1]
	old := c.Lookup(key)
	if !replace && old != nil {
		c.Error("BUSYKEY Target key name already exists.")
		return
	}
	ttl, ok := c.Int(2)
	if !ok {
		return
	}
	if ttl < 0 {
		c.Error("ERR Invalid TTL value, must be >= 0")
		return
	}
	o, err := rdb.Restore(c.Args[3])
	if err != nil {
		if errors.Is(err, rdb.ErrChecksum) {
			c.Error("ERR DUMP payload version or checksum are wrong")
		} else {
			c.Error("ERR Bad data format")
		}
		return
	}
	v, ok := restoredValue(o, c.Now)
	if !ok {
		c.Error("ERR Bad data format")
		return
	}
	if ttl > 0 && !absTTL {
		ttl += c.Now
	}
	if (ttl > 0 && ttl <= c.Now) || v.Kind == store.KindNone {
		// Already expired: nothing is created, and with REPLACE the old key is gone.
		if old != nil {
			c.DB.Remove(old)
			c.Dirty(1)
			c.notify(evGeneric, "del", key)
			c.emitDel(key)
		} else {
			c.skipEffect()
		}
		c.W.OK()
		return
	}
	if old != nil {
		c.DB.Remove(old)
	}
	e := c.DB.Set(key, v, ttl, false, c.Now)
	// As Redis's objectSetLRUOrLFU: FREQ counts only under an LFU policy and IDLETIME only
	// under the others, since the entry's lru field holds one or the other.
	lfu := c.Store.Mem.Policy().LFU()
	switch {
	case idle >= 0 && !lfu:
		e.SetIdle(c.Now, idle)
	case freq >= 0 && lfu:
		e.SetFreq(uint8(freq))
	}
	c.Dirty(1)
	c.notify(evGeneric, "restore", key)
	c.markReadyIn(c.DB.ID, key, e)
	if c.Store.Journal != nil {
		if ttl > 0 {
			c.Emit(c.DB.ID, effRestore, key, c.effInt(ttl), c.Args[3], effReplace, effAbsTTL)
		} else {
			c.Emit(c.DB.ID, effRestore, key, c.effInt(0), c.Args[3], effReplace)
		}
	}
	c.W.OK()
}

var (
	effRestore = []byte("RESTORE")
	effReplace = []byte("REPLACE")
	effAbsTTL  = []byte("ABSTTL")
)

// DumpPayload is DUMP's reply for an entry (nil if its value cannot be dumped): a sharded
// cluster moves keys between shards as RESTORE commands (docs/cluster.md, "Moving slots").
// The caller holds the entry's shard lock.
func DumpPayload(e *store.Entry) []byte {
	o, ok := dumpObject(e)
	if !ok {
		return nil
	}
	return rdb.Dump(o)
}
