package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RandPlaceholder in a command argument is replaced by a random key number for every request,
// as in redis-benchmark, so both tools' command lines read the same.
const RandPlaceholder = "__rand_int__"

// randDigits is the width of a substituted key number: redis-benchmark's, so keys are the same
// length whichever tool made them.
const randDigits = 12

// Template is one request shape: its arguments, some with RandPlaceholder in them.
type Template struct {
	args []tmplArg
}

type tmplArg struct {
	prefix, suffix string
	rand           bool
}

// ParseTemplate splits a command line into a Template.
func ParseTemplate(args ...string) Template {
	t := Template{args: make([]tmplArg, len(args))}
	for i, a := range args {
		if p, s, ok := strings.Cut(a, RandPlaceholder); ok {
			t.args[i] = tmplArg{prefix: p, suffix: s, rand: true}
		} else {
			t.args[i] = tmplArg{prefix: a}
		}
	}
	return t
}

// String renders the template as a command line.
func (t Template) String() string {
	parts := make([]string, len(t.args))
	for i, a := range t.args {
		if a.rand {
			parts[i] = a.prefix + RandPlaceholder + a.suffix
		} else {
			parts[i] = a.prefix
		}
	}
	return strings.Join(parts, " ")
}

// Append encodes one request as a RESP array of bulk strings, with key number n (below
// 10^12) in place of every placeholder. It allocates nothing once buf has grown.
func (t Template) Append(buf []byte, n uint64) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(t.args)), 10)
	buf = append(buf, '\r', '\n')
	for _, a := range t.args {
		l := len(a.prefix)
		if a.rand {
			l += randDigits + len(a.suffix)
		}
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(l), 10)
		buf = append(buf, '\r', '\n')
		buf = append(buf, a.prefix...)
		if a.rand {
			buf = appendKeyNumber(buf, n)
			buf = append(buf, a.suffix...)
		}
		buf = append(buf, '\r', '\n')
	}
	return buf
}

// AppendKey appends the key of number n to buf: the first argument with a placeholder, as
// Append writes it, so a benchmark can compute the slot of the key a number stands for
// (nothing is appended when the template has no placeholder).
func (t Template) AppendKey(buf []byte, n uint64) []byte {
	for _, a := range t.args {
		if a.rand {
			buf = append(buf, a.prefix...)
			buf = appendKeyNumber(buf, n)
			return append(buf, a.suffix...)
		}
	}
	return buf
}

// appendKeyNumber writes n as randDigits zero-padded digits (n below 10^12).
func appendKeyNumber(buf []byte, n uint64) []byte {
	var d [randDigits]byte
	for i := randDigits - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(buf, d[:]...)
}

// Config is one load run.
type Config struct {
	Addr string
	// Conns is the number of connections, each with one outstanding batch at a time.
	Conns int
	// Pipeline is the number of requests written together before their replies are read.
	Pipeline int
	// Duration bounds a run by time (after Warmup); Requests bounds it by count. One is set.
	Duration time.Duration
	Requests int64
	// Warmup runs the load without recording it, so connection setup, the server's first
	// allocations and CPU frequency ramps are not measured.
	Warmup time.Duration
	// Keyspace is how many distinct key numbers RandPlaceholder draws from (uniformly).
	Keyspace uint64
	// Rate, when positive, makes the run open-loop: requests are sent at this total rate
	// (spread evenly over the connections) and latency counts from when each request was due,
	// not when it was sent, so a stalled server is charged for the requests it delayed
	// (no coordinated omission).
	Rate float64
	// Commands are the request templates; a run cycles through them (most runs have one).
	Commands []Template
	// Seed makes key choices repeatable across runs and servers.
	Seed uint64
	// Progress, when set, receives a status line every second.
	Progress io.Writer
	// Label names the run on the progress line.
	Label string
	// Sequential, in a run bounded by Requests, numbers keys 0, 1, 2, ... instead of drawing
	// them at random: a fill that creates exactly Requests keys.
	Sequential bool
	// Phase, when set, is read as each request is due and selects which of Result.Phases
	// (0 or 1) records it: how the snapshot benchmark separates latencies during a BGSAVE
	// from the rest of the same run.
	Phase *atomic.Int32
	// CountFirst classifies each measured reply by the first element of an array reply: how
	// a rate-limit benchmark checks what it measured was allowed decisions (GCRA.LIMIT's
	// first element is 0 when allowed, the Lua GCRA's is the count admitted).
	CountFirst bool
	// KeyPool, when set, replaces the key numbers: the number drawn (below len(KeyPool), or
	// the sequential one) indexes the pool and its entry goes in place of the placeholder.
	// A sharded benchmark hands each connection the numbers whose keys its shard owns
	// (ShardKeyPools), so that no request is redirected; Keyspace is then unused.
	KeyPool []uint64
	// Goroutines drives a closed-loop run with a goroutine per connection instead of the event
	// loops (Run): to compare the two load generators on the same server.
	Goroutines bool
}

// Result is what a run measured.
type Result struct {
	Requests int64
	// Total counts every reply, warmup included: the denominator of a server's CPU time
	// per request, which is read over the whole run.
	Total  int64
	Errors int64
	// FirstError is the first error reply's text, if any.
	FirstError string
	Elapsed    time.Duration
	Hist       *Histogram
	// Phases split Hist by Config.Phase (all in Phases[0] without one).
	Phases [2]*Histogram
	// FirstZero and FirstNonZero count the measured replies that are arrays whose first
	// element is the integer 0, or another integer (Config.CountFirst).
	FirstZero, FirstNonZero int64
}

// Throughput is requests per second over the measured interval.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// stripe is a pair of histograms shared by a group of connections: with up to 64 connections
// each has its own, beyond that they share 64, so ten thousand connections do not need ten
// thousand histograms. A connection records a whole batch under one lock acquisition.
type stripe struct {
	mu   sync.Mutex
	hist [2]Histogram
}

// worker is one connection's state, whichever engine drives it.
type worker struct {
	conn net.Conn // the goroutine engine's
	fd   int      // the event loop's (a raw socket)
	in   inbuf
	buf  []byte
	// off is how much of buf is written (the event loop's writes may be partial), and waitOut
	// says the loop waits for the socket to take the rest.
	off     int
	waitOut bool
	rng     *rand.Rand
	stripe  *stripe
	cmd     int
	// The batch in flight: when it was sent, how many replies are still due, whether it is
	// measured and in which phase.
	t0        time.Time
	pending   int
	measuring bool
	phase     int
	lat       []time.Duration
	reqs      int64
	total     int64
	errs      int64
	firstEr   string
	// zero and nonzero count replies by their first integer (Config.CountFirst).
	zero, nonzero int64
}

// dialAll opens n connections, at most 128 dials at a time so a listen backlog (Redis's is 511)
// never overflows into SYN retries that would delay the start by a second.
func dialAll(ctx context.Context, addr string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	sem := make(chan struct{}, 128)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	d := net.Dialer{Timeout: 10 * time.Second}
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := d.DialContext(ctx, "tcp", addr)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	if firstErr != nil {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		return nil, fmt.Errorf("dial %s: %w", addr, firstErr)
	}
	return conns, nil
}

// run is one Run's shared state: its clock, its request budget and its first error.
type run struct {
	cfg        Config
	start      time.Time
	measureAt  time.Time
	stopAt     time.Time
	perConnGap time.Duration
	remaining  atomic.Int64
	claimed    atomic.Int64
	completed  atomic.Int64
	done       atomic.Bool
	cancel     context.CancelFunc
	errMu      sync.Mutex
	err        error
}

// fail records a connection's error and stops the run, unless the run was already stopping
// (its connections are closed under it).
func (rn *run) fail(err error) {
	if rn.done.Load() {
		return
	}
	rn.errMu.Lock()
	rn.err = firstErr(rn.err, err)
	rn.errMu.Unlock()
	rn.cancel()
}

// next builds w's next batch in w.buf and starts its clock; false once the run is over for w.
// due is an open-loop batch's due time (zero in a closed loop).
func (rn *run) next(w *worker, due time.Time, lastReply time.Time) bool {
	cfg := &rn.cfg
	now := time.Now()
	if rn.done.Load() || (!rn.stopAt.IsZero() && now.After(rn.stopAt)) {
		return false
	}
	measuring := !now.Before(rn.measureAt)
	var base int64
	if cfg.Requests > 0 && measuring {
		if rn.remaining.Add(-int64(cfg.Pipeline)) <= -int64(cfg.Pipeline) {
			return false
		}
		base = rn.claimed.Add(int64(cfg.Pipeline)) - int64(cfg.Pipeline)
	}
	w.buf, w.off = w.buf[:0], 0
	batch := cfg.Pipeline
	if cfg.Requests > 0 && measuring && base+int64(batch) > cfg.Requests {
		batch = int(cfg.Requests - base) // the last, short batch of a counted run
	}
	for j := range batch {
		var n uint64
		if cfg.Sequential && cfg.Requests > 0 {
			n = uint64(base) + uint64(j)
		} else {
			n = w.rng.Uint64N(cfg.Keyspace)
		}
		if cfg.KeyPool != nil {
			n = cfg.KeyPool[n%uint64(len(cfg.KeyPool))]
		}
		w.buf = cfg.Commands[w.cmd].Append(w.buf, n)
		w.cmd++
		if w.cmd == len(cfg.Commands) {
			w.cmd = 0
		}
	}
	w.t0 = time.Now()
	// A request held back because the server had not yet answered the one before is charged
	// from when it was due (no coordinated omission). One sent late only because the timer
	// woke late (Go's sleeps round up to the poller's millisecond when a thread is idle) was
	// not delayed by the server: it counts from when it was sent.
	if !due.IsZero() && lastReply.After(due) {
		w.t0 = due
	}
	w.measuring = !w.t0.Before(rn.measureAt)
	w.phase = 0
	if cfg.Phase != nil && cfg.Phase.Load() != 0 {
		w.phase = 1
	}
	w.pending = batch
	w.lat = w.lat[:0]
	return true
}

// got consumes the replies at the start of w.in, up to the batch's pending count, timing them
// at now; it returns whether the batch is complete.
func (rn *run) got(w *worker, now time.Time) (bool, error) {
	var rp reply
	for w.pending > 0 {
		n, err := scanReply(w.in.data(), &rp)
		if err != nil || n == 0 {
			return false, err
		}
		w.in.r += n
		w.pending--
		w.total++
		if !w.measuring {
			continue
		}
		w.lat = append(w.lat, now.Sub(w.t0))
		w.reqs++
		if rp.isErr {
			w.errs++
			if w.firstEr == "" {
				w.firstEr = string(rp.errText)
			}
		}
		if rn.cfg.CountFirst {
			switch rp.first {
			case 1:
				w.zero++
			case 2:
				w.nonzero++
			}
		}
	}
	if w.measuring {
		w.stripe.mu.Lock()
		for _, d := range w.lat {
			w.stripe.hist[w.phase].Record(d)
		}
		w.stripe.mu.Unlock()
		rn.completed.Add(int64(len(w.lat)))
	}
	return true, nil
}

// Run drives one load run and returns its measurements. An error reply does not stop the run
// (it is counted); a broken connection does.
//
// A closed-loop run on Linux is driven by event loops of its own (epoll, one per GOMAXPROCS),
// not by a goroutine per connection: at pipeline 1 the load generator shares the machine's
// cores with the servers it measures, and the loops spend about a sixth less CPU per request
// (no read that finds nothing before every wait, no goroutine wakeups), which the servers get
// instead. Config.Goroutines, or an open-loop run, uses a goroutine per connection.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Conns <= 0 {
		cfg.Conns = 1
	}
	if cfg.Pipeline <= 0 {
		cfg.Pipeline = 1
	}
	if len(cfg.KeyPool) > 0 {
		cfg.Keyspace = uint64(len(cfg.KeyPool))
	}
	if cfg.Keyspace == 0 {
		cfg.Keyspace = 1
	}
	if len(cfg.Commands) == 0 {
		return nil, errors.New("no command to run")
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return nil, errors.New("set a duration or a request count")
	}
	conns, err := dialAll(ctx, cfg.Addr, cfg.Conns)
	if err != nil {
		return nil, err
	}
	loops := epollEngine && cfg.Rate <= 0 && !cfg.Goroutines
	workers := make([]*worker, len(conns))
	stripes := make([]*stripe, min(len(conns), 64))
	for i := range stripes {
		stripes[i] = &stripe{}
	}
	for i, c := range conns {
		workers[i] = &worker{
			conn:   c,
			fd:     -1,
			rng:    rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1)),
			stripe: stripes[i%len(stripes)],
			cmd:    i % len(cfg.Commands),
		}
	}
	defer func() {
		for _, w := range workers {
			if w.conn != nil {
				w.conn.Close()
			}
		}
	}()
	if loops {
		if err := takeFds(workers); err != nil {
			return nil, err
		}
		defer closeFds(workers)
	}

	rn := &run{cfg: cfg, start: time.Now()}
	rn.measureAt = rn.start.Add(cfg.Warmup)
	if cfg.Duration > 0 {
		rn.stopAt = rn.measureAt.Add(cfg.Duration)
	}
	rn.remaining.Store(cfg.Requests)
	if cfg.Rate > 0 {
		rn.perConnGap = time.Duration(float64(time.Second) * float64(cfg.Conns) * float64(cfg.Pipeline) / cfg.Rate)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rn.cancel = cancel
	go func() {
		<-ctx.Done()
		rn.done.Store(true)
		for _, w := range workers {
			if w.conn != nil {
				w.conn.SetDeadline(time.Now())
			}
		}
	}()
	if cfg.Progress != nil {
		go progress(ctx, cfg, &rn.completed)
	}

	if loops {
		runLoops(rn, workers)
	} else {
		var wg sync.WaitGroup
		for i, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rn.goroutine(w, i, len(workers))
			}()
		}
		wg.Wait()
	}
	end := time.Now()
	if !rn.stopAt.IsZero() && end.After(rn.stopAt) {
		end = rn.stopAt
	}
	if rn.err != nil {
		return nil, rn.err
	}
	res := &Result{Hist: &Histogram{}, Phases: [2]*Histogram{{}, {}}, Elapsed: end.Sub(rn.measureAt)}
	for _, st := range stripes {
		for p := range st.hist {
			res.Phases[p].Merge(&st.hist[p])
			res.Hist.Merge(&st.hist[p])
		}
	}
	for _, w := range workers {
		res.Requests += w.reqs
		res.Total += w.total
		res.Errors += w.errs
		res.FirstZero += w.zero
		res.FirstNonZero += w.nonzero
		if res.FirstError == "" {
			res.FirstError = w.firstEr
		}
	}
	if cfg.Progress != nil {
		fmt.Fprint(cfg.Progress, "\r\033[K")
	}
	return res, nil
}

// goroutine drives connection i of n with blocking reads and writes: the engine of open-loop
// runs (each connection keeps its own schedule) and of platforms without the event loop.
func (rn *run) goroutine(w *worker, i, n int) {
	// Stagger open-loop connections evenly over one gap so their sends do not bunch.
	var due, lastReply time.Time
	if rn.perConnGap > 0 {
		due = rn.start.Add(rn.perConnGap * time.Duration(i) / time.Duration(n))
	}
	for {
		if rn.perConnGap > 0 {
			if d := time.Until(due); d > 0 {
				time.Sleep(d)
			}
		}
		if !rn.next(w, due, lastReply) {
			return
		}
		if rn.perConnGap > 0 {
			due = due.Add(rn.perConnGap)
		}
		if _, err := w.conn.Write(w.buf); err != nil {
			rn.fail(fmt.Errorf("write: %w", err))
			return
		}
		for {
			complete, err := rn.got(w, time.Now())
			if err != nil {
				rn.fail(fmt.Errorf("read: %w", err))
				return
			}
			if complete {
				break
			}
			m, err := w.conn.Read(w.in.space())
			w.in.w += m
			if err != nil && m == 0 {
				rn.fail(fmt.Errorf("read: %w", err))
				return
			}
		}
		lastReply = time.Now()
	}
}

func firstErr(old, new error) error {
	if old != nil {
		return old
	}
	return new
}

func progress(ctx context.Context, cfg Config, completed *atomic.Int64) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n := completed.Load()
			fmt.Fprintf(cfg.Progress, "\r\033[K%s: %d req/s, %d done", cfg.Label, n-last, n)
			last = n
		}
	}
}
