package server

import (
	"errors"
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
// systemd, a STATUS= line that `systemctl status` shows. Clients connected meanwhile get
// -LOADING, and INFO persistence shows the position (loading_loaded_bytes).
type loadProgress struct {
	s     *Server
	what  string
	total int64 // bytes to read
	start time.Time
	next  time.Time
	calls int
	// keys loaded from a snapshot or base, effects replayed from log segments.
	keys, effects int64
	// delay is key-load-delay: microseconds to sleep per key (or effect) loaded, a test aid.
	delay int64
	// batchEffects is the size of the log batch just replayed, for step.
	batchEffects int64
}

func (s *Server) newLoadProgress(what string, total int64) *loadProgress {
	now := time.Now()
	s.persist.loadStart.Store(now.Unix())
	s.persist.loadTotal.Store(total)
	s.persist.loadDone.Store(0)
	return &loadProgress{s: s, what: what, total: total, start: now, next: now.Add(loadProgressInterval),
		delay: s.cfg.GetInt("key-load-delay")}
}

// errLoadStopped ends a start-up load that a shutdown asked to stop (Server.StopLoading).
var errLoadStopped = errors.New("shutdown requested while loading the data")

// step is the loaders' progress callback: items (keys or effects) more were loaded and done
// bytes read. It publishes the position for INFO (loading_loaded_bytes), applies
// key-load-delay, stops the load when a shutdown asked for it, and reports (update).
func (p *loadProgress) step(items, done int64) error {
	p.s.persist.loadDone.Store(done)
	if p.delay > 0 {
		time.Sleep(time.Duration(items*p.delay) * time.Microsecond)
	} else if p.delay < 0 {
		// Redis sleeps 1 µs for one key in -delay, chosen at random: the same time on average.
		time.Sleep(time.Duration(items/-p.delay) * time.Microsecond)
	}
	if p.s.loadStopAsked() {
		return errLoadStopped
	}
	p.update(done)
	return nil
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
