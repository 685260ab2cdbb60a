package ratelimit

import "sync/atomic"

// DecisionCounter counts the allowed and denied requests of one rate-limit command. It is
// bumped on the command's hot path, so it is one atomic add and no allocation; each count
// sits on a cache line of its own, so that neither the other count nor the fields around the
// counter (the store's Limiters pointer, read by every RATELIMIT command) share a line with a
// value every core writes. Counts only grow for the life of the process (CONFIG RESETSTAT
// leaves them): they are Prometheus counters, and rate() handles restarts.
type DecisionCounter struct {
	_       [64]byte
	allowed atomic.Uint64
	_       [56]byte
	denied  atomic.Uint64
	_       [56]byte
}

// Count records one decision.
func (c *DecisionCounter) Count(allowed bool) {
	if allowed {
		c.allowed.Add(1)
	} else {
		c.denied.Add(1)
	}
}

// Load returns the allowed and denied counts.
func (c *DecisionCounter) Load() (allowed, denied uint64) {
	return c.allowed.Load(), c.denied.Load()
}

// Decisions are the decision counters of the commands that keep GCRA state in keys, which
// unlike named limiters have no totals of their own (metrics: hotkv_gcra_requests_total).
// GCRA.PEEK decides nothing and is not counted.
type Decisions struct {
	GCRALimit  DecisionCounter
	CLThrottle DecisionCounter
}
