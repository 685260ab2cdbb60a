package store

// Effect is one write as a deterministic, time-free command (ARCHITECTURE.md §3): applying it
// on another machine, at another time, gives the same state bit for bit. Times inside are
// absolute (an allowed GCRA.LIMIT is journaled as SET key <TAT> PXAT <ms>, never as GCRA.LIMIT),
// so replaying never re-evaluates a decision.
type Effect struct {
	// DB is the database the effect applies to; -1 for server-wide effects (named limiters).
	DB   int
	Args [][]byte
	// Time is the command time (Unix ms) of the write that produced the effect: the primary's
	// time, which the effect itself does not depend on. The append-only log and replication
	// carry it with every batch so that a replica or a log replay runs each effect at the time
	// it was taken (lazy expiry during replay then decides as the primary did) and keeps the
	// time floor (spec §2.3). 0 when the producer did not know it.
	Time int64
}

// Journal receives effects in the order they take place: it is called with the locks of the
// write held, so two effects on one key can never be reordered. The append-only log,
// snapshots in progress and replication consume it.
type Journal interface {
	Append(e Effect)
}

// JournalFunc adapts a function to Journal.
type JournalFunc func(Effect)

// Append calls f.
func (f JournalFunc) Append(e Effect) { f(e) }
