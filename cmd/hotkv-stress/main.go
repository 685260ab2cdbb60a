// Command hotkv-stress checks HotKV's expiry requirement against a running server: millions of
// keys that expire on their own must be reclaimed without latency spikes (ARCHITECTURE.md §4).
//
// It loads -keys keys with `SET key val PX <ttl>` (pipelined), then waits for DBSIZE to fall
// back to where it started. DBSIZE counts keys that expired but were not reclaimed yet (as in
// Redis), and the tool never reads the keys, so the wait measures active expiry alone. Meanwhile
// a separate connection sends PING every millisecond and records each round trip.
//
// The requirement: DBSIZE is back within -max-reclaim (10 s) of the last key's expiry, and no
// PING issued after loading ended takes longer than -max-latency (10 ms). Pings during loading
// are reported too, but not judged: there the load generator itself competes for the CPU.
//
// Point it at real Redis with -addr for a side by side comparison; `make stress-expiry` runs
// both. Exit status: 0 pass, 1 requirement failed, 2 the check could not run.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

type options struct {
	addr       string
	keys       int
	ttl        time.Duration
	timeout    time.Duration
	batch      int
	db         int
	prefix     string
	value      string
	pingEvery  time.Duration
	maxReclaim time.Duration
	maxLatency time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.addr, "addr", "127.0.0.1:6379", "server address")
	flag.IntVar(&o.keys, "keys", 1_000_000, "keys to load")
	flag.DurationVar(&o.ttl, "ttl", time.Second, "time to live of each key (sent as PX milliseconds)")
	flag.DurationVar(&o.timeout, "timeout", time.Minute, "give up waiting for DBSIZE this long after the last key expired")
	flag.IntVar(&o.batch, "batch", 1000, "SET commands per pipeline")
	flag.IntVar(&o.db, "db", 0, "database to use")
	flag.StringVar(&o.prefix, "prefix", "stress:", "key prefix")
	flag.StringVar(&o.value, "value", "val", "value of every key")
	flag.DurationVar(&o.pingEvery, "ping-every", time.Millisecond, "PING period on the latency connection")
	flag.DurationVar(&o.maxReclaim, "max-reclaim", 10*time.Second, "requirement: DBSIZE back to its start value within this long after the last key expired")
	flag.DurationVar(&o.maxLatency, "max-latency", 10*time.Millisecond, "requirement: slowest PING after loading")
	flag.Parse()
	if flag.NArg() > 0 || o.keys <= 0 || o.batch <= 0 || o.ttl < time.Millisecond || o.pingEvery <= 0 {
		fmt.Fprintln(os.Stderr, "usage: hotkv-stress [-addr host:port] [-keys N] [-ttl 1s] [-timeout 1m] ...; -keys, -batch, -ttl and -ping-every must be positive")
		os.Exit(2)
	}
	ok, err := run(o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hotkv-stress:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// sample is one PING round trip, sent at `at` after the start.
type sample struct {
	at, rtt time.Duration
}

func run(o options, out io.Writer) (bool, error) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: o.addr, DB: o.db, Protocol: 2, PoolSize: 2,
		DisableIdentity: true, MaxRetries: -1, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return false, fmt.Errorf("%s: %w", o.addr, err)
	}
	base, err := rdb.DBSize(ctx).Result()
	if err != nil {
		return false, fmt.Errorf("DBSIZE: %w", err)
	}
	fmt.Fprintf(out, "hotkv-stress: %s (%s), db %d\n", o.addr, serverName(ctx, rdb), o.db)
	if base != 0 {
		fmt.Fprintf(out, "note: db %d already holds %d keys; waiting for DBSIZE to return to %d\n", o.db, base, base)
	}

	pinger, err := startPinger(o.addr, o.db, o.pingEvery)
	if err != nil {
		return false, err
	}
	start := pinger.start

	// Load.
	ttlMs := strconv.FormatInt(o.ttl.Milliseconds(), 10)
	for i := 0; i < o.keys; i += o.batch {
		pipe := rdb.Pipeline()
		for j := i; j < min(i+o.batch, o.keys); j++ {
			pipe.Do(ctx, "SET", o.prefix+strconv.Itoa(j), o.value, "PX", ttlMs)
		}
		cmds, err := pipe.Exec(ctx)
		if err != nil {
			for _, c := range cmds {
				if c.Err() != nil {
					err = fmt.Errorf("%s: %w", strings.Join(argStrings(c.Args()), " "), c.Err())
					break
				}
			}
			pinger.stop()
			return false, fmt.Errorf("loading: %w", err)
		}
	}
	loaded := time.Since(start)
	// The last SET ran at or before `loaded`, so every key has expired by lastExpiry.
	lastExpiry := loaded + o.ttl
	loadedCount, err := rdb.DBSize(ctx).Result()
	if err != nil {
		pinger.stop()
		return false, fmt.Errorf("DBSIZE: %w", err)
	}

	// Wait for active expiry to reclaim everything, without touching a key.
	var trace []string
	nextTrace := time.Second
	reclaimed := time.Duration(-1)
	var left int64
	deadline := lastExpiry + o.timeout
	for {
		n, err := rdb.DBSize(ctx).Result()
		now := time.Since(start)
		if err != nil {
			pinger.stop()
			return false, fmt.Errorf("DBSIZE: %w", err)
		}
		left = n - base
		if now >= nextTrace {
			trace = append(trace, fmt.Sprintf("+%.1fs:%d", now.Seconds(), left))
			nextTrace = now.Truncate(time.Second) + time.Second
		}
		if left <= 0 && now >= lastExpiry {
			reclaimed = now
			break
		}
		if now > deadline {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	samples, pingErr := pinger.stop()

	// Report.
	fmt.Fprintf(out, "load:     %d keys with SET key %s PX %s in %.2f s (%.0f keys/s, %d per pipeline); DBSIZE after loading: %d\n",
		o.keys, o.value, ttlMs, loaded.Seconds(), float64(o.keys)/loaded.Seconds(), o.batch, loadedCount-base)
	fmt.Fprintf(out, "DBSIZE:   %s\n", strings.Join(trace, " "))
	pass := true
	if reclaimed < 0 {
		pass = false
		fmt.Fprintf(out, "expiry:   FAIL: %d keys still not reclaimed %.1f s after the last key expired (gave up after -timeout %s)\n",
			left, (time.Since(start) - lastExpiry).Seconds(), o.timeout)
	} else {
		took := reclaimed - lastExpiry
		verdict := "PASS"
		if took > o.maxReclaim {
			verdict, pass = "FAIL", false
		}
		fmt.Fprintf(out, "expiry:   %s: last key expired at +%.2f s; DBSIZE back to %d at +%.2f s: reclaimed %.2f s after expiry (limit %s)\n",
			verdict, lastExpiry.Seconds(), base, reclaimed.Seconds(), max(took, 0).Seconds(), o.maxReclaim)
	}
	end := reclaimed
	if end < 0 {
		end = time.Since(start)
	}
	var loading, expiring []time.Duration
	for _, s := range samples {
		switch {
		case s.at < loaded:
			loading = append(loading, s.rtt)
		case s.at <= end:
			expiring = append(expiring, s.rtt)
		}
	}
	fmt.Fprintf(out, "latency:  PING every %s on its own connection\n", o.pingEvery)
	fmt.Fprintf(out, "          %-22s %7s %9s %9s %9s %9s\n", "phase", "pings", "p50", "p99", "p99.9", "max")
	fmt.Fprintf(out, "          %-22s %s   (not judged: the loader shares the CPU)\n", "loading", stats(loading))
	verdict := "PASS"
	switch {
	case pingErr != nil:
		verdict, pass = "FAIL ("+pingErr.Error()+")", false
	case len(expiring) == 0:
		verdict, pass = "FAIL (no pings)", false
	case slices.Max(expiring) > o.maxLatency:
		verdict, pass = "FAIL", false
	}
	fmt.Fprintf(out, "          %-22s %s   %s: max limit %s\n", "after loading, expiring", stats(expiring), verdict, o.maxLatency)
	if pass {
		fmt.Fprintln(out, "result:   PASS")
	} else {
		fmt.Fprintln(out, "result:   FAIL")
	}
	return pass, nil
}

// serverName identifies the server from INFO server.
func serverName(ctx context.Context, rdb *redis.Client) string {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "INFO failed: " + err.Error()
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	if v := fields["hotkv_version"]; v != "" {
		return "HotKV " + v
	}
	return "Redis " + fields["redis_version"]
}

func stats(d []time.Duration) string {
	if len(d) == 0 {
		return fmt.Sprintf("%7d %9s %9s %9s %9s", 0, "-", "-", "-", "-")
	}
	s := slices.Clone(d)
	slices.Sort(s)
	q := func(p float64) string { return ms(s[min(len(s)-1, int(p*float64(len(s))))]) }
	return fmt.Sprintf("%7d %9s %9s %9s %9s", len(s), q(0.5), q(0.99), q(0.999), ms(s[len(s)-1]))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

func argStrings(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = fmt.Sprint(a)
	}
	return out
}

// pinger sends PING on its own plain connection at a fixed period and records every round
// trip. It writes the request bytes itself so the measurement is the server's, not a client
// library's.
type pinger struct {
	start   time.Time
	nc      net.Conn
	quit    chan struct{}
	wg      sync.WaitGroup
	samples []sample
	err     error
}

func startPinger(addr string, db int, every time.Duration) (*pinger, error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &pinger{nc: nc, quit: make(chan struct{}), samples: make([]sample, 0, 1<<16)}
	br := bufio.NewReader(nc)
	if db != 0 {
		sel := fmt.Sprintf("*2\r\n$6\r\nSELECT\r\n$%d\r\n%d\r\n", len(strconv.Itoa(db)), db)
		if _, err := nc.Write([]byte(sel)); err != nil {
			return nil, err
		}
		if line, err := br.ReadString('\n'); err != nil || line != "+OK\r\n" {
			return nil, fmt.Errorf("SELECT %d: %q %v", db, line, err)
		}
	}
	p.start = time.Now()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		// A thread of its own keeps the Go scheduler's latency out of the numbers.
		runtime.LockOSThread()
		req := []byte("*1\r\n$4\r\nPING\r\n")
		var reply [7]byte
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-tick.C:
			}
			_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
			sent := time.Now()
			if _, err := nc.Write(req); err != nil {
				p.err = err
				return
			}
			if _, err := io.ReadFull(br, reply[:]); err != nil || string(reply[:]) != "+PONG\r\n" {
				p.err = errors.Join(fmt.Errorf("PING reply %q", reply[:]), err)
				return
			}
			p.samples = append(p.samples, sample{at: sent.Sub(p.start), rtt: time.Since(sent)})
		}
	}()
	return p, nil
}

// stop ends the pings and returns the samples and the first error.
func (p *pinger) stop() ([]sample, error) {
	close(p.quit)
	p.wg.Wait()
	_ = p.nc.Close()
	return p.samples, p.err
}
