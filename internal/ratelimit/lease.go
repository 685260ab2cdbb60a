package ratelimit

import "errors"

// MaxConcurrencyLimit bounds a concurrency limiter's limit: every lease holds at least one
// unit and a key's live units never exceed the limit, so a key holds at most this many leases
// (24 bytes each), which bounds one key's memory.
const MaxConcurrencyLimit = 100_000

// LeaseIDsPerMs is how many lease ids a millisecond provides before ids run ahead of the
// clock: an id is max(now_ms * LeaseIDsPerMs, last + 1), so ids read as the time they were
// issued at and stay unique even across restarts as long as the clock does not step back.
const LeaseIDsPerMs = 1_000_000

// Lease is units of a concurrency limiter held by one request since TS (ms), until it is
// released by ID or expires at TS + window.
type Lease struct {
	ID    int64
	TS    int64
	Units int64
}

// Leases is a key's concurrency state: its leases in ascending ID order, which is also
// non-decreasing TS order (Acquire never stamps a lease earlier than the newest one), and
// their running sum of units. It is a sliding-window log whose entries can leave early.
type Leases struct {
	Held []Lease
	Sum  int64
}

// NextLeaseID is the id a lease acquired at nowMs gets when last is the largest id issued or
// applied so far in the same scope. It saturates instead of overflowing (a clock beyond the
// year 2262 or 2^63 leases in one scope).
func NextLeaseID(nowMs, last int64) int64 {
	var id int64
	switch {
	case nowMs > Max/LeaseIDsPerMs:
		id = Max
	case nowMs > 0:
		id = nowMs * LeaseIDsPerMs
	}
	if last >= Max {
		return Max
	}
	return max(id, last+1, 1)
}

// Prune drops the leases that expired at nowMs (acquired at ts <= nowMs - windowMs) and
// reports whether any remain.
func (l *Leases) Prune(nowMs, windowMs int64) bool {
	cut := nowMs - windowMs
	i := 0
	for i < len(l.Held) && l.Held[i].TS <= cut {
		l.Sum -= l.Held[i].Units
		i++
	}
	if i > 0 {
		n := copy(l.Held, l.Held[i:])
		clear(l.Held[n:])
		l.Held = l.Held[:n]
	}
	return len(l.Held) > 0
}

// Check decides a request of cost units under limit at nowMs; it records nothing (Acquire
// does). The caller prunes first, so Sum is the units in flight. A denial's RetryMs is the
// time at which enough leases will have expired (a release may come sooner), walked as the
// sliding window walks its log; -1 when the cost exceeds the limit.
func (l *Leases) Check(nowMs, windowMs, limit, cost int64) WindowResult {
	r := WindowResult{Current: l.Sum}
	switch {
	case cost > limit:
		r.RetryMs = -1
	case cost <= limit-l.Sum:
		r.Allowed = true
	default:
		need := l.Sum + cost - limit
		var sum int64
		for _, e := range l.Held {
			sum += e.Units
			if sum >= need {
				r.RetryMs = e.TS + windowMs - nowMs
				break
			}
		}
	}
	return r
}

// Acquire records a lease of units with id (larger than every held id) at tsMs. A request
// stamped earlier than the newest lease (connections stamp a batch once, so it can run after
// one stamped later) takes the newest lease's ts: it expires late, never early, and the
// leases stay ordered by ts as well as by id. limit bounds how far the slice grows.
func (l *Leases) Acquire(id, tsMs, units, limit int64) {
	n := len(l.Held)
	if n > 0 {
		tsMs = max(tsMs, l.Held[n-1].TS)
	}
	if n == cap(l.Held) {
		// At most min(limit, MaxConcurrencyLimit) leases are ever live (each holds >= 1 unit
		// of a sum <= limit), so grow towards that bound and not past it.
		bound := max(int64(n)+1, min(limit, MaxConcurrencyLimit))
		grown := make([]Lease, n, max(int64(n)+1, min(int64(2*n), bound)))
		copy(grown, l.Held)
		l.Held = grown
	}
	l.Held = append(l.Held, Lease{ID: id, TS: tsMs, Units: units})
	l.Sum += units
}

// Release removes the lease with id and reports whether it was held. Callers prune first, so
// an expired lease is not found. Ids ascend: a binary search finds it.
func (l *Leases) Release(id int64) bool {
	lo, hi := 0, len(l.Held)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l.Held[m].ID < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(l.Held) || l.Held[lo].ID != id {
		return false
	}
	l.Sum -= l.Held[lo].Units
	copy(l.Held[lo:], l.Held[lo+1:])
	l.Held[len(l.Held)-1] = Lease{}
	l.Held = l.Held[:len(l.Held)-1]
	return true
}

// ErrLeaseOrder is NormalizeLeases' error for state no server could have produced.
var ErrLeaseOrder = errors.New("leases must have ids >= 1 in strictly ascending order and units >= 1")

// NormalizeLeases checks journaled or saved leases (ids >= 1 strictly ascending, units >= 1)
// and raises any ts below its predecessor's to it, as Acquire stamps them, so the log stays
// ordered by ts for Prune. It returns the sum of units.
func NormalizeLeases(ls []Lease) (int64, error) {
	var sum int64
	for i := range ls {
		e := &ls[i]
		if e.ID < 1 || e.Units < 1 || (i > 0 && e.ID <= ls[i-1].ID) {
			return 0, ErrLeaseOrder
		}
		if i > 0 && e.TS < ls[i-1].TS {
			e.TS = ls[i-1].TS
		}
		if sum > Max-e.Units {
			return 0, ErrLeaseOrder
		}
		sum += e.Units
	}
	return sum, nil
}
