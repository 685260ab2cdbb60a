package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// SnapResult splits one open-loop run's latencies by whether a BGSAVE was in progress.
type SnapResult struct {
	Keys            int64
	Rate            float64
	Saves           int
	Outside, During *Histogram
	// SaveTime is the total time snapshots were in progress.
	SaveTime time.Duration
}

// snapshotWarmup is the unrecorded start of a BGSAVE latency run: the load settles (and the
// fill's garbage is collected) before anything is measured or saved.
const snapshotWarmup = 2 * time.Second

// FillSnapshotKeys empties the server and SETs keys key:0 ... key:N-1 (16-byte values), the
// dataset SnapshotLatency measures.
func FillSnapshotKeys(ctx context.Context, addr string, keys int64) error {
	if _, err := Do(ctx, addr, "FLUSHALL"); err != nil {
		return err
	}
	fill := ParseTemplate("SET", "key:"+RandPlaceholder, "xxxxxxxxxxxxxxxx")
	_, err := Run(ctx, Config{Addr: addr, Conns: 8, Pipeline: 64, Requests: keys, Sequential: true, Commands: []Template{fill}})
	return err
}

// SnapshotLatency runs GET and SET over the keys FillSnapshotKeys made, at a fixed rate for d
// (after an unrecorded warmup), starting a BGSAVE one second in and again one second after
// each finishes, and records latencies during the snapshots apart from the rest: the issue's
// "p99 during a snapshot of 1M keys" against the p99 of the same run without one.
//
// op is BGSAVE, or BGREWRITEAOF for a server with the append-only log on (the rewrite walks
// the keyspace the same way and writes a new base snapshot).
func SnapshotLatency(ctx context.Context, addr, op string, keys int64, rate float64, conns int, d time.Duration) (SnapResult, error) {
	res := SnapResult{Keys: keys, Rate: rate}
	field := "rdb_bgsave_in_progress"
	if op == "BGREWRITEAOF" {
		field = "aof_rewrite_in_progress"
	}
	var phase atomic.Int32
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	saveErr := make(chan error, 1)
	go func() {
		saveErr <- func() error {
			wait := snapshotWarmup + time.Second
			for {
				select {
				case <-runCtx.Done():
					return nil
				case <-time.After(wait):
				}
				wait = time.Second
				phase.Store(1)
				began := time.Now()
				if _, err := Do(ctx, addr, op); err != nil {
					return fmt.Errorf("%s: %w", op, err)
				}
				for {
					time.Sleep(5 * time.Millisecond)
					info, err := Info(ctx, addr, "persistence")
					if err != nil {
						return err
					}
					if info[field] == "0" {
						break
					}
				}
				phase.Store(0)
				res.SaveTime += time.Since(began)
				res.Saves++
				if runCtx.Err() != nil {
					return nil
				}
			}
		}()
	}()
	r, err := Run(runCtx, Config{
		Addr: addr, Conns: conns, Pipeline: 1, Duration: d, Warmup: snapshotWarmup, Keyspace: uint64(keys), Rate: rate, Phase: &phase,
		Commands: []Template{ParseTemplate("GET", "key:"+RandPlaceholder), ParseTemplate("SET", "key:"+RandPlaceholder, "xxxxxxxxxxxxxxxx")},
	})
	cancel()
	if e := <-saveErr; e != nil && err == nil {
		err = e
	}
	if err != nil {
		return res, err
	}
	res.Outside, res.During = r.Phases[0], r.Phases[1]
	return res, nil
}
