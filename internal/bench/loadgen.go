package bench

import (
	"bufio"
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

type worker struct {
	conn    net.Conn
	r       *bufio.Reader
	buf     []byte
	rng     *rand.Rand
	stripe  *stripe
	lat     []time.Duration
	reqs    int64
	total   int64
	errs    int64
	firstEr string
	scratch []byte
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

// Run drives one load run and returns its measurements. An error reply does not stop the run
// (it is counted); a broken connection does.
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
	workers := make([]*worker, len(conns))
	stripes := make([]*stripe, min(len(conns), 64))
	for i := range stripes {
		stripes[i] = &stripe{}
	}
	for i, c := range conns {
		workers[i] = &worker{
			conn:   c,
			r:      bufio.NewReaderSize(c, 4096),
			rng:    rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1)),
			stripe: stripes[i%len(stripes)],
		}
	}
	defer func() {
		for _, w := range workers {
			w.conn.Close()
		}
	}()

	var (
		start      = time.Now()
		measureAt  = start.Add(cfg.Warmup)
		stopAt     time.Time
		remaining  atomic.Int64
		claimed    atomic.Int64
		done       atomic.Bool
		completed  atomic.Int64
		wg         sync.WaitGroup
		errMu      sync.Mutex
		runErr     error
		perConnGap time.Duration
	)
	if cfg.Duration > 0 {
		stopAt = measureAt.Add(cfg.Duration)
	}
	remaining.Store(cfg.Requests)
	if cfg.Rate > 0 {
		perConnGap = time.Duration(float64(time.Second) * float64(cfg.Conns) * float64(cfg.Pipeline) / cfg.Rate)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		done.Store(true)
		for _, w := range workers {
			w.conn.SetDeadline(time.Now())
		}
	}()
	if cfg.Progress != nil {
		go progress(ctx, cfg, &completed)
	}

	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Stagger open-loop connections evenly over one gap so their sends do not bunch.
			var due time.Time
			if perConnGap > 0 {
				due = start.Add(perConnGap * time.Duration(i) / time.Duration(len(workers)))
			}
			cmd := i % len(cfg.Commands)
			var lastReply time.Time
			for !done.Load() {
				now := time.Now()
				if !stopAt.IsZero() && now.After(stopAt) {
					return
				}
				measuring := !now.Before(measureAt)
				var base int64
				if cfg.Requests > 0 && measuring {
					if remaining.Add(-int64(cfg.Pipeline)) <= -int64(cfg.Pipeline) {
						return
					}
					base = claimed.Add(int64(cfg.Pipeline)) - int64(cfg.Pipeline)
				}
				if perConnGap > 0 {
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
				}
				w.buf = w.buf[:0]
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
					w.buf = cfg.Commands[cmd].Append(w.buf, n)
					cmd++
					if cmd == len(cfg.Commands) {
						cmd = 0
					}
				}
				t0 := time.Now()
				if perConnGap > 0 {
					// A request held back because the server had not yet answered the one
					// before is charged from when it was due (no coordinated omission). One
					// sent late only because the timer woke late (Go's sleeps round up to the
					// poller's millisecond when a thread is idle) was not delayed by the
					// server: it counts from when it was sent.
					if lastReply.After(due) {
						t0 = due
					}
					due = due.Add(perConnGap)
				}
				measuring = !t0.Before(measureAt)
				phase := 0
				if cfg.Phase != nil && cfg.Phase.Load() != 0 {
					phase = 1
				}
				if _, err := w.conn.Write(w.buf); err != nil {
					if !done.Load() {
						errMu.Lock()
						runErr = firstErr(runErr, fmt.Errorf("write: %w", err))
						errMu.Unlock()
						cancel()
					}
					return
				}
				w.lat = w.lat[:0]
				for range batch {
					var isErr bool
					var first int
					var err error
					if cfg.CountFirst {
						isErr, first, err = w.readCounted()
					} else {
						isErr, err = w.readReply()
					}
					if err != nil {
						if !done.Load() {
							errMu.Lock()
							runErr = firstErr(runErr, fmt.Errorf("read: %w", err))
							errMu.Unlock()
							cancel()
						}
						return
					}
					if measuring {
						w.lat = append(w.lat, time.Since(t0))
						w.reqs++
						if isErr {
							w.errs++
						}
						switch first {
						case 1:
							w.zero++
						case 2:
							w.nonzero++
						}
					}
				}
				lastReply = time.Now()
				w.total += int64(batch)
				if measuring {
					w.stripe.mu.Lock()
					for _, d := range w.lat {
						w.stripe.hist[phase].Record(d)
					}
					w.stripe.mu.Unlock()
					completed.Add(int64(batch))
				}
			}
		}()
	}
	wg.Wait()
	end := time.Now()
	if !stopAt.IsZero() && end.After(stopAt) {
		end = stopAt
	}
	if runErr != nil {
		return nil, runErr
	}
	res := &Result{Hist: &Histogram{}, Phases: [2]*Histogram{{}, {}}, Elapsed: end.Sub(measureAt)}
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

// readCounted consumes one reply like readReply and also classifies it: 1 for an array whose
// first element is the integer 0, 2 for one whose first element is another integer, else 0.
func (w *worker) readCounted() (isErr bool, first int, err error) {
	line, err := w.line()
	if err != nil {
		return false, 0, err
	}
	if len(line) < 2 || line[0] != '*' || line[1] == '-' || line[1] == '0' {
		isErr, err = w.readRest(line)
		return isErr, 0, err
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil {
		return false, 0, fmt.Errorf("bad aggregate length %q", line)
	}
	el, err := w.line()
	if err != nil {
		return false, 0, err
	}
	if len(el) > 1 && el[0] == ':' {
		first = 2
		if len(el) == 2 && el[1] == '0' {
			first = 1
		}
	}
	if isErr, err = w.readRest(el); err != nil {
		return false, 0, err
	}
	for range n - 1 {
		e, err := w.readReply()
		if err != nil {
			return false, 0, err
		}
		isErr = isErr || e
	}
	return isErr, first, nil
}

// readReply consumes one reply (RESP2 or RESP3) and reports whether it was an error.
func (w *worker) readReply() (bool, error) {
	line, err := w.line()
	if err != nil {
		return false, err
	}
	return w.readRest(line)
}

// readRest consumes the rest of a reply whose first line has been read.
func (w *worker) readRest(line []byte) (bool, error) {
	if len(line) == 0 {
		return false, errors.New("empty reply line")
	}
	switch line[0] {
	case '+', ':', '_', ',', '#', '(':
		return false, nil
	case '-':
		if w.firstEr == "" {
			w.firstEr = string(line[1:])
		}
		return true, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return false, fmt.Errorf("bad bulk length %q", line)
		}
		if n >= 0 {
			if _, err := w.r.Discard(n + 2); err != nil {
				return false, err
			}
		}
		return line[0] == '!', nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return false, fmt.Errorf("bad aggregate length %q", line)
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		isErr := false
		for range n {
			e, err := w.readReply()
			if err != nil {
				return false, err
			}
			isErr = isErr || e
		}
		return isErr, nil
	}
	return false, fmt.Errorf("unknown reply type %q", line)
}

// line reads one CRLF-terminated line without the CRLF. The slice is valid until the next read.
func (w *worker) line() ([]byte, error) {
	l, err := w.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// A status line longer than the buffer (a long error): keep it whole.
		w.scratch = append(w.scratch[:0], l...)
		for err == bufio.ErrBufferFull {
			l, err = w.r.ReadSlice('\n')
			w.scratch = append(w.scratch, l...)
		}
		l = w.scratch
	}
	if err != nil {
		return nil, err
	}
	if len(l) < 2 || l[len(l)-2] != '\r' {
		return nil, fmt.Errorf("reply line without CRLF: %q", l)
	}
	return l[:len(l)-2], nil
}
