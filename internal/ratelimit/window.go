package ratelimit

// WindowEntry is one slot of a sliding-window log: units admitted at TS (ms).
type WindowEntry struct {
	TS    int64
	Units int64
}

// Window is a key's sliding-window log (spec §8.4): entries with strictly increasing TS and
// their running sum. A unit admitted at s counts until exactly s+W.
type Window struct {
	Entries []WindowEntry
	Sum     int64
}

// WindowResult is a sliding-window decision. RetryMs is -1 when the cost exceeds the limit.
type WindowResult struct {
	Allowed bool
	Current int64
	RetryMs int64
}

// Prune drops entries that have left the window at nowMs and reports whether any remain
// (a key without entries has no state).
func (w *Window) Prune(nowMs, windowMs int64) bool {
	cut := nowMs - windowMs
	i := 0
	for i < len(w.Entries) && w.Entries[i].TS <= cut {
		w.Sum -= w.Entries[i].Units
		i++
	}
	if i > 0 {
		n := copy(w.Entries, w.Entries[i:])
		clear(w.Entries[n:])
		w.Entries = w.Entries[:n]
	}
	return len(w.Entries) > 0
}

// Check decides a request of cost units under limit per windowMs at nowMs; with record, an
// allowed request is added to the log, merging down to at most maxEntries entries. The caller
// prunes first (Prune), so Sum is the current usage.
func (w *Window) Check(nowMs, windowMs, limit, cost, maxEntries int64, record bool) WindowResult {
	r := WindowResult{Current: w.Sum}
	switch {
	case cost > limit:
		r.RetryMs = -1
	case cost <= limit-w.Sum:
		r.Allowed = true
		if record {
			w.add(nowMs, cost, limit, maxEntries)
		}
	default:
		need := w.Sum + cost - limit
		var sum int64
		for _, e := range w.Entries {
			sum += e.Units
			if sum >= need {
				r.RetryMs = e.TS + windowMs - nowMs
				break
			}
		}
	}
	return r
}

func (w *Window) add(nowMs, units, limit, maxEntries int64) {
	w.Sum += units
	// A request can hold an earlier time than the last entry: its connection read the clock
	// before another's, which then took the key's lock first. Its units go into the last
	// entry: the log keeps strictly increasing times (RATELIMIT.SETSTATE, snapshots and
	// Prune rely on it), and counting them at the later time only makes them leave the
	// window later: it can deny a little early, never admit more.
	if n := len(w.Entries); n > 0 && w.Entries[n-1].TS >= nowMs {
		w.Entries[n-1].Units += units
	} else {
		if n == cap(w.Entries) {
			// The log never holds more than min(limit, K+1) entries (each holds >= 1 unit of
			// a live sum <= limit; one over K is merged at once), so grow to that bound and
			// no further instead of append's doubling past it.
			bound := min(limit, maxEntries+1)
			grown := make([]WindowEntry, n, max(int64(n)+1, min(int64(2*n), bound)))
			copy(grown, w.Entries)
			w.Entries = grown
		}
		w.Entries = append(w.Entries, WindowEntry{TS: nowMs, Units: units})
	}
	for int64(len(w.Entries)) > maxEntries && len(w.Entries) > 1 {
		w.mergeClosest()
	}
}

// mergeClosest merges the adjacent pair with the smallest gap (the oldest on ties) into one
// entry at the LATER timestamp. Units then leave the window late, never early, so the log can
// deny a little early but never admits more than the limit in any window.
func (w *Window) mergeClosest() {
	best := 0
	bestGap := int64(Max)
	for i := 0; i+1 < len(w.Entries); i++ {
		if gap := w.Entries[i+1].TS - w.Entries[i].TS; gap < bestGap {
			best, bestGap = i, gap
		}
	}
	w.Entries[best+1].Units += w.Entries[best].Units
	copy(w.Entries[best:], w.Entries[best+1:])
	w.Entries[len(w.Entries)-1] = WindowEntry{}
	w.Entries = w.Entries[:len(w.Entries)-1]
}
