package server

import (
	"fmt"
	"time"
)

// loadProgressInterval is how often a start-up load reports its progress. A variable so that
// tests can see reports on a small dataset.
var loadProgressInterval = time.Second

// loadExtendTimeout is how far each progress report pushes systemd's start timeout
// (EXTEND_TIMEOUT_USEC): a load that keeps making progress is never killed by
// TimeoutStartSec, one that stalls is, this long after its last report.
const loadExtendTimeout = 30 * time.Second

// loadProgress reports how far a start-up load has got, at most every loadProgressInterval:
// a log line (percent of the bytes read, keys and effects so far and per second) and, under
// systemd, a STATUS= line that `systemctl status` shows. Clients cannot ask, since nothing
// listens until the load is done.
type loadProgress struct {
	s     *Server
	what  string
	total int64 // bytes to read
	start time.Time
	next  time.Time
	calls int
	// keys loaded from a snapshot or base, effects replayed from log segments.
	keys, effects int64
}

func (s *Server) newLoadProgress(what string, total int64) *loadProgress {
	now := time.Now()
	return &loadProgress{s: s, what: what, total: total, start: now, next: now.Add(loadProgressInterval)}
}

// update records the position (bytes read of total) and reports if the interval is over.
// It reads the clock only every 16 calls: it is called per batch of a log.
func (p *loadProgress) update(done int64) {
	p.calls++
	if p.calls%16 != 0 && loadProgressInterval >= time.Millisecond {
		return
	}
	now := time.Now()
	if now.Before(p.next) {
		return
	}
	p.next = now.Add(loadProgressInterval)
	elapsed := now.Sub(p.start).Seconds()
	perc := 0.0
	if p.total > 0 {
		perc = min(100, float64(done)*100/float64(p.total))
	}
	keysRate, effectsRate := int64(0), int64(0)
	if elapsed > 0 {
		keysRate, effectsRate = int64(float64(p.keys)/elapsed), int64(float64(p.effects)/elapsed)
	}
	attrs := []any{"percent", fmt.Sprintf("%.1f", perc), "keys", p.keys, "keys_per_sec", keysRate}
	status := fmt.Sprintf("STATUS=Loading the %s: %.0f%% done, %d keys (%d keys/s)", p.what, perc, p.keys, keysRate)
	if p.effects > 0 {
		attrs = append(attrs, "effects", p.effects, "effects_per_sec", effectsRate)
		status += fmt.Sprintf(", %d effects replayed (%d/s)", p.effects, effectsRate)
	}
	attrs = append(attrs, "seconds", fmt.Sprintf("%.1f", elapsed))
	p.s.log.Info("Loading the "+p.what, attrs...)
	p.s.notify(fmt.Sprintf("%s\nEXTEND_TIMEOUT_USEC=%d", status, loadExtendTimeout.Microseconds()))
}

// keyCount is the number of keys in every database, for the line that ends a load.
func (s *Server) keyCount() int64 {
	n := 0
	for i := 0; i < s.store.NumDBs(); i++ {
		n += s.store.DB(i).Keys()
	}
	return int64(n)
}
