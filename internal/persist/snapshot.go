package persist

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hotkv/hotkv/internal/ratelimit"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// SaveOptions controls writing a store's snapshot.
type SaveOptions struct {
	// Now is the save's command time: keys already expired at Now are left out, as is dead
	// limiter state.
	Now int64
	// Held says the caller holds every shard lock (SAVE, shutdown): the walk then takes none.
	// Otherwise shards are locked one at a time (BGSAVE).
	Held bool
	// TimeFloor returns the largest command time used so far. It is read for the header
	// before the walk and again for the footer after it.
	TimeFloor func() int64
	// Version is the writer's release, for the header.
	Version string
	// Ctx, when set, cancels the save between shards.
	Ctx context.Context
	// Progress, when set, counts the keys written so far.
	Progress *atomic.Int64
	// Functions are the function libraries to save, name and code each, written before the
	// keys (a loader has them before any data).
	Functions [][2]string
}

// SaveStats describes a written snapshot.
type SaveStats struct {
	Keys, Limiters, LimiterKeys int64
	Bytes                       int64
	TimeFloorMs                 int64
}

// Write encodes st onto w. Encoding happens in memory under each shard's lock; w is written
// only between shards, with no lock held.
func Write(w io.Writer, st *store.Store, o SaveOptions) (SaveStats, error) {
	var stats SaveStats
	floor := o.TimeFloor
	if floor == nil {
		floor = func() int64 { return o.Now }
	}
	ctx := o.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	enc, err := NewEncoder(w, Header{
		CreatedMs:    time.Now().UnixMilli(),
		TimeFloorMs:  max(floor(), o.Now),
		HotKVVersion: o.Version,
		Databases:    st.NumDBs(),
	})
	if err != nil {
		return stats, err
	}
	flush := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return enc.Flush()
	}
	for _, f := range o.Functions {
		enc.Record(TypeFunction, 0, []byte(f[0]), 0, []byte(f[1]))
	}
	var visitErr error
	var payload []byte // scratch for aggregates encoded during the walk (SAVE)
	err = st.SnapshotWalk(o.Now, o.Held, func(db int, e *store.Entry) bool {
		key := sbytes(e.Key())
		switch e.Val.Kind {
		case store.KindString:
			if e.Val.IsInt {
				enc.StringInt(db, key, e.ExpireAt(), e.Val.Int)
			} else {
				enc.StringRaw(db, key, e.ExpireAt(), e.Val.Bytes())
			}
		case store.KindList, store.KindSet, store.KindZSet, store.KindHash, store.KindStream:
			// Aggregates are encoded by their type (store.Payloader); the record types are
			// numbered as the kinds.
			if payload = e.Payload(payload[:0]); payload == nil {
				visitErr = fmt.Errorf("snapshots cannot hold this %s value (key %q in db %d)", e.Val.Kind.TypeName(), e.Key(), db)
				return false
			}
			enc.Record(RecordType(e.Val.Kind), db, key, e.ExpireAt(), payload)
		default:
			visitErr = fmt.Errorf("snapshots cannot hold %s values yet (key %q in db %d)", e.Val.Kind.TypeName(), e.Key(), db)
			return false
		}
		stats.Keys++
		if o.Progress != nil {
			o.Progress.Add(1)
		}
		return true
	}, flush)
	if visitErr != nil {
		return stats, visitErr
	}
	if err != nil {
		return stats, err
	}
	for _, l := range st.Limiters.All() {
		// With every shard lock held (SAVE) the limiter is frozen too, so its totals and its
		// keys' state agree exactly. A background save walks it shard by shard instead, so
		// admissions after the totals were read may show in the keys' state only.
		if o.Held {
			l.LockState()
		}
		allowed, denied := l.Totals()
		var def store.Definition
		if o.Held {
			def = store.Definition{Limit: l.Limit, WindowMs: l.WindowMs, Rate: l.Rate, Shadow: l.Shadow}
		} else {
			def = l.Definition() // RATELIMIT.UPDATE may be changing it
		}
		var flags uint64
		if def.Shadow {
			flags |= LimiterShadow
		}
		enc.LimiterDef(LimiterDef{
			Name: l.Name, Algo: uint8(l.Algo), Limit: def.Limit, WindowMs: def.WindowMs,
			RateText: def.Rate.Text, IntervalNs: def.Rate.IntervalNs,
			TotalAllowed: allowed, TotalDenied: denied,
			Flags: flags, TotalShadowDenied: l.ShadowDenied(),
		})
		stats.Limiters++
		var lk LimiterKey
		err := l.EachState(o.Now, o.Held, func(key string, tat int64, entries []ratelimit.WindowEntry, leases []ratelimit.Lease) {
			lk = LimiterKey{Limiter: l.Name, Key: sbytes(key), Entries: lk.Entries[:0], Leases: lk.Leases[:0]}
			switch {
			case leases != nil:
				lk.Kind = StateLeases
				for _, e := range leases {
					lk.Leases = append(lk.Leases, [3]int64{e.ID, e.TS, e.Units})
				}
			case entries == nil:
				lk.Kind, lk.TAT = StateTAT, tat
			default:
				lk.Kind = StateLog
				for _, e := range entries {
					lk.Entries = append(lk.Entries, [2]int64{e.TS, e.Units})
				}
			}
			enc.LimiterKey(lk)
			stats.LimiterKeys++
		}, flush)
		if o.Held {
			l.UnlockState()
			if err == nil {
				err = flush()
			}
		}
		if err != nil {
			return stats, err
		}
	}
	stats.TimeFloorMs = max(floor(), o.Now)
	if err := enc.Close(stats.TimeFloorMs); err != nil {
		return stats, err
	}
	return stats, nil
}

// SaveFile writes st's snapshot to path atomically (WriteFile).
func SaveFile(path string, st *store.Store, o SaveOptions) (SaveStats, error) {
	var stats SaveStats
	n, err := WriteFile(path, func(w io.Writer) error {
		var err error
		stats, err = Write(w, st, o)
		return err
	})
	stats.Bytes = n
	return stats, err
}

// LoadOptions controls loading a snapshot.
type LoadOptions struct {
	// SetFloor, when set, receives the snapshot's time floor: from the header as soon as it
	// is read, and the (later) footer value at the end.
	SetFloor func(ms int64)
	// Now returns the command time to load at, read after the header's floor is applied:
	// keys already expired then are skipped, as Redis skips them loading an RDB file.
	Now func() int64
	// MaxLimiterName bounds limiter names (RATELIMIT.CREATE's rule); 0 means 512.
	MaxLimiterName int
	// Function loads a function library's code; an error fails the load. Without it a
	// snapshot holding libraries is refused rather than loaded without them.
	Function func(code []byte) error
	// Progress, when set, is called every ProgressEvery records with the keys loaded so far
	// and the offset of the record just read (the start-up log's loading progress). An error
	// it returns stops the load with that error (a shutdown during the load).
	Progress func(keys, bytes int64) error
}

// ProgressEvery is how many records Load reads between two Progress calls: often enough for
// a once-a-second report, rarely enough to cost nothing next to decoding.
const ProgressEvery = 1024

// LoadStats describes a loaded snapshot.
type LoadStats struct {
	Header      Header
	Footer      Footer
	Keys        int64 // keys loaded
	Expired     int64 // keys skipped because they had expired
	Limiters    int64
	LimiterKeys int64
	Functions   int64
}

// Load reads a snapshot from r into st, which should be empty. name is what errors call the
// file. A record that cannot be applied (a key in a database st does not have, a duplicate
// key, an invalid limiter) is an error naming its offset, like corruption.
func Load(r io.Reader, name string, st *store.Store, o LoadOptions) (LoadStats, error) {
	var stats LoadStats
	d, err := NewDecoder(r, name)
	if err != nil {
		return stats, err
	}
	stats.Header = d.Header()
	if o.SetFloor != nil {
		o.SetFloor(stats.Header.TimeFloorMs)
	}
	now := time.Now().UnixMilli()
	if o.Now != nil {
		now = o.Now()
	}
	maxName := o.MaxLimiterName
	if maxName == 0 {
		maxName = 512
	}
	for records := 1; ; records++ {
		rec, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return stats, err
		}
		if o.Progress != nil && records%ProgressEvery == 0 {
			if err := o.Progress(stats.Keys, rec.Offset); err != nil {
				return stats, err
			}
		}
		switch rec.Type {
		case TypeFunction:
			if o.Function == nil {
				return stats, d.Corrupt(rec.Offset, "function library %q, but this loader cannot load functions", truncate(rec.Key))
			}
			if err := o.Function(rec.Body); err != nil {
				return stats, d.Corrupt(rec.Offset, "function library %q: %v", truncate(rec.Key), err)
			}
			stats.Functions++
		case TypeString, TypeList, TypeSet, TypeZSet, TypeHash, TypeStream:
			if rec.DB >= st.NumDBs() {
				return stats, d.Corrupt(rec.Offset, "key in database %d, but this server has %d databases (start it with databases %d or more)",
					rec.DB, st.NumDBs(), rec.DB+1)
			}
			v, empty, err := keyValue(rec, now)
			if err != nil {
				return stats, d.Corrupt(rec.Offset, "%v", err)
			}
			if empty || (rec.ExpireAt != 0 && now > rec.ExpireAt) {
				stats.Expired++
				continue
			}
			if !st.DB(rec.DB).Restore(rec.Key, v, rec.ExpireAt, now) {
				return stats, d.Corrupt(rec.Offset, "duplicate key %q in database %d", truncate(rec.Key), rec.DB)
			}
			stats.Keys++
		case TypeLimiterDef:
			def, err := ParseLimiterDef(rec)
			if err != nil {
				return stats, d.Corrupt(rec.Offset, "%v", err)
			}
			l, err := limiterFromDef(def, maxName)
			if err != nil {
				return stats, d.Corrupt(rec.Offset, "limiter %q: %v", truncate(rec.Key), err)
			}
			if !st.Limiters.Create(l, 1<<63-1) {
				return stats, d.Corrupt(rec.Offset, "duplicate limiter %q", truncate(rec.Key))
			}
			l.SetTotals(def.TotalAllowed, def.TotalDenied)
			l.SetShadowDenied(def.TotalShadowDenied)
			stats.Limiters++
		case TypeLimiterKey:
			k, err := ParseLimiterKey(rec)
			if err != nil {
				return stats, d.Corrupt(rec.Offset, "%v", err)
			}
			if err := restoreLimiterKey(st, k); err != nil {
				return stats, d.Corrupt(rec.Offset, "limiter %q key %q: %v", truncate([]byte(k.Limiter)), truncate(k.Key), err)
			}
			stats.LimiterKeys++
		}
	}
	stats.Footer = d.Footer()
	if o.SetFloor != nil {
		o.SetFloor(stats.Footer.TimeFloorMs)
	}
	return stats, nil
}

// LoadFile loads the snapshot at path. A missing file is reported as an error satisfying
// errors.Is(err, fs.ErrNotExist).
func LoadFile(path string, st *store.Store, o LoadOptions) (LoadStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return LoadStats{}, err
	}
	defer f.Close()
	return Load(f, path, st, o)
}

// limiterFromDef checks a definition against RATELIMIT.CREATE's rules and builds the limiter.
func limiterFromDef(d LimiterDef, maxName int) (*store.Limiter, error) {
	switch {
	case len(d.Name) == 0 || len(d.Name) > maxName:
		return nil, fmt.Errorf("name length %d out of range", len(d.Name))
	case d.Algo > uint8(store.Concurrency):
		return nil, fmt.Errorf("unknown algorithm %d", d.Algo)
	case d.Limit < 1 || d.Limit > ratelimit.Max:
		return nil, fmt.Errorf("limit %d out of range", d.Limit)
	case d.WindowMs < 1 || d.WindowMs > 1_000_000_000_000:
		return nil, fmt.Errorf("window %d out of range", d.WindowMs)
	case d.IntervalNs < 1:
		return nil, fmt.Errorf("rate interval %d out of range", d.IntervalNs)
	case d.RateText != "" && (store.Algo(d.Algo) == store.SlidingWindow || store.Algo(d.Algo) == store.Concurrency):
		return nil, fmt.Errorf("a %s limiter with a rate", store.Algo(d.Algo))
	case store.Algo(d.Algo) == store.Concurrency && d.Limit > ratelimit.MaxConcurrencyLimit:
		return nil, fmt.Errorf("limit %d above %d for a concurrency limiter", d.Limit, ratelimit.MaxConcurrencyLimit)
	}
	rate := ratelimit.DefaultRate(d.Limit, d.WindowMs)
	if d.RateText != "" {
		var err error
		if rate, err = ratelimit.ParseRate(d.RateText, d.Limit); err != nil {
			return nil, fmt.Errorf("rate %q: %v", d.RateText, err)
		}
	}
	// The interval the state was computed with, not a re-derived one: the next decision
	// continues exactly where the saved one left off.
	rate.IntervalNs = d.IntervalNs
	return &store.Limiter{Name: d.Name, Algo: store.Algo(d.Algo), Limit: d.Limit, WindowMs: d.WindowMs, Rate: rate,
		Shadow: d.Flags&LimiterShadow != 0}, nil
}

func restoreLimiterKey(st *store.Store, k LimiterKey) error {
	l := st.Limiters.Get([]byte(k.Limiter))
	if l == nil {
		return fmt.Errorf("no such limiter defined before it")
	}
	var entries []ratelimit.WindowEntry
	switch {
	case k.Kind == StateLeases && l.Algo == store.Concurrency:
		if len(k.Leases) == 0 {
			return fmt.Errorf("no leases")
		}
		leases := make([]ratelimit.Lease, len(k.Leases))
		for i, e := range k.Leases {
			leases[i] = ratelimit.Lease{ID: e[0], TS: e[1], Units: e[2]}
		}
		if _, err := ratelimit.NormalizeLeases(leases); err != nil {
			return err
		}
		if !l.RestoreLeases(k.Key, leases) {
			return fmt.Errorf("duplicate key state")
		}
		return nil
	case k.Kind == StateTAT && l.Algo != store.SlidingWindow && l.Algo != store.Concurrency:
	case k.Kind == StateLog && l.Algo == store.SlidingWindow:
		if len(k.Entries) == 0 {
			return fmt.Errorf("empty log")
		}
		// Entries are kept in the order written. They increase in time unless DEBUG CLOCK
		// moved the clock backwards, which the server allows; a snapshot must load whatever
		// state the server could hold, so order is not checked.
		entries = make([]ratelimit.WindowEntry, len(k.Entries))
		for i, e := range k.Entries {
			if e[1] < 1 {
				return fmt.Errorf("log entry %d (%d, %d) has no units", i, e[0], e[1])
			}
			entries[i] = ratelimit.WindowEntry{TS: e[0], Units: e[1]}
		}
	default:
		return fmt.Errorf("state kind %d does not fit algorithm %s", k.Kind, l.Algo)
	}
	if !l.RestoreState(k.Key, k.TAT, entries) {
		return fmt.Errorf("duplicate key state")
	}
	return nil
}

// sbytes views a string as bytes without copying; the encoder only reads them.
func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// truncate shortens a key for an error message.
func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

// keyValue decodes the value of a key record at time now. empty reports a value with nothing
// left to load: a hash whose field TTLs have all passed, which is an expired key.
func keyValue(rec *Record, now int64) (v store.Value, empty bool, err error) {
	switch rec.Type {
	case TypeString:
		isInt, n, raw, err := ParseString(rec)
		if err != nil {
			return v, false, err
		}
		if isInt {
			return store.Value{Kind: store.KindString, IsInt: true, Int: n}, false, nil
		}
		return store.BytesValue(bytes.Clone(raw)), false, nil
	case TypeList:
		l, err := types.ListFromPayload(rec.Body)
		if err != nil {
			return v, false, fmt.Errorf("LIST: %v", err)
		}
		return l.Value(), false, nil
	case TypeSet:
		s, err := types.SetFromPayload(rec.Body)
		if err != nil {
			return v, false, fmt.Errorf("SET: %v", err)
		}
		return s.Value(), false, nil
	case TypeZSet:
		z, err := types.ZSetFromPayload(rec.Body)
		if err != nil {
			return v, false, fmt.Errorf("ZSET: %v", err)
		}
		return z.Value(), false, nil
	case TypeHash:
		h, err := types.HashFromPayload(rec.Body)
		if err != nil {
			return v, false, fmt.Errorf("HASH: %v", err)
		}
		// Fields whose TTL passed are not loaded.
		h.ExpireFields(now, nil)
		return h.Value(), h.Len() == 0, nil
	case TypeStream:
		x, err := types.StreamFromPayload(rec.Body)
		if err != nil {
			return v, false, fmt.Errorf("STREAM: %v", err)
		}
		return store.ObjValue(store.KindStream, x), false, nil
	}
	return v, false, fmt.Errorf("record type %v holds no key", rec.Type)
}
