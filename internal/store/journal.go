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
//
// e.Args are valid only during the call: they point into the connection's read buffer and
// the caller's scratch space, which the next command reuses. That is what keeps a logged write
// free of allocations; a Journal that keeps an effect (rather than encoding it at once) must
// copy it with CloneEffect.
type Journal interface {
	Append(e Effect)
}

// CloneEffect returns a copy of e whose arguments share no memory with e's, in one allocation
// for the bytes and one for the slice.
func CloneEffect(e Effect) Effect {
	size := 0
	for _, a := range e.Args {
		size += len(a)
	}
	buf := make([]byte, 0, size)
	out := make([][]byte, len(e.Args))
	for i, a := range e.Args {
		buf = append(buf, a...)
		out[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	e.Args = out
	return e
}

// JournalFunc adapts a function to Journal.
type JournalFunc func(Effect)

// Append calls f.
func (f JournalFunc) Append(e Effect) { f(e) }
