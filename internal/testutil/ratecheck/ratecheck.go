// Package ratecheck checks the central safety invariant of the failover tests: however nodes
// crash, pause, partition or hand over leadership, a GCRA limiter never admits more than its
// documented bound (../shared/design/ha-and-cluster.md §3.7):
//
//	allowed in any window of length w ≤ burst + ⌊w·burst/period⌋ + ⌈skew·burst/period⌉ + slack
//
// where skew is the largest clock difference between servers and slack absorbs rounding (the
// §5.3 test uses 1 for millisecond rounding).
//
// Many clients record each GCRA.LIMIT call in a History: when it was sent, when the reply
// came, and the reply array ([denied, limit, remaining, retry_after_ms, reset_after_ms]) or
// the error. The server's decision happened at some unknown instant between the two, so the
// check is conservative: a set of admissions is charged to the window from the earliest send
// to the latest reply among them. The checker finds, over every such window, whether the
// count exceeds the bound, and reports the violation whose window ends first, so a failing
// run points at the moment the guarantee first broke. Failed calls (errors, timeouts) are
// not counted: the design promises that an uncertain call is never counted twice in the
// client's favour, and only acknowledged admissions can over-admit.
//
// The search is O(n log n) per key (a segment tree over admissions ordered by reply time,
// swept by send time), so a run with hundreds of thousands of calls checks in well under a
// second.
package ratecheck

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Limit is a key's GCRA parameters, as passed to GCRA.LIMIT key period burst.
type Limit struct {
	Burst  int64
	Period time.Duration
}

// Bound is what the checker tolerates beyond burst + ⌊w·burst/period⌋.
type Bound struct {
	// ClockSkew is the largest clock difference between the servers that evaluated the key;
	// each T = period/burst of it allows one more admission. Zero on one host.
	ClockSkew time.Duration
	// Slack is a fixed number of extra admissions allowed (1 for millisecond rounding).
	Slack int64
}

// extra is the allowance on top of burst: ⌈skew·burst/period⌉ + slack.
func (b Bound) extra(l Limit) int64 {
	e := b.Slack
	if b.ClockSkew > 0 {
		num := int64(b.ClockSkew) * l.Burst
		e += (num + int64(l.Period) - 1) / int64(l.Period)
	}
	return e
}

// Max is the most admissions the bound allows in a window of length w.
func (b Bound) Max(l Limit, w time.Duration) int64 {
	if w <= 0 {
		return l.Burst + b.extra(l)
	}
	hi, lo := bits.Mul64(uint64(w), uint64(l.Burst))
	if hi >= uint64(l.Period) { // the quotient would not fit in 64 bits: no bound at all
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(l.Period))
	return l.Burst + int64(q) + b.extra(l)
}

// Op is one GCRA.LIMIT call as a client saw it.
type Op struct {
	Client int
	Key    string
	// Start is when the call was sent, End when its reply (or error) arrived. A recorder
	// with a single timestamp per reply sets both to it.
	Start, End time.Time
	// Count is the units requested (GCRA.LIMIT's optional count); 0 means 1.
	Count int64
	// Reply is GCRA.LIMIT's reply array; nil when Err is set.
	Reply []int64
	// Err is the call's error (timeout, -TRYAGAIN, -CLUSTERDOWN, connection lost): the
	// outcome is unknown.
	Err error
}

// Outcome classifies an Op.
type Outcome int

const (
	Allowed Outcome = iota
	Denied
	Failed
)

// Outcome is Failed for an error, else Allowed or Denied by the reply's first element.
func (o Op) Outcome() Outcome {
	switch {
	case o.Err != nil:
		return Failed
	case len(o.Reply) > 0 && o.Reply[0] == 0:
		return Allowed
	}
	return Denied
}

func (o Op) units() int64 {
	if o.Count <= 0 {
		return 1
	}
	return o.Count
}

func (o Op) String() string {
	s := fmt.Sprintf("client %d %s [%s, %s]", o.Client, o.Key, o.Start.Format("15:04:05.000000"), o.End.Format("15:04:05.000000"))
	if o.Err != nil {
		return s + " error: " + o.Err.Error()
	}
	return s + fmt.Sprintf(" %v", o.Reply)
}

// History collects Ops from many client goroutines.
type History struct {
	mu  sync.Mutex
	ops []Op
}

// Record adds one call.
func (h *History) Record(op Op) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops returns a copy of everything recorded so far.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// ReplyInts converts a client library's decoded reply (go-redis returns []any of int64) to
// the []int64 an Op holds.
func ReplyInts(v any) ([]int64, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("GCRA.LIMIT reply is %T, not an array", v)
	}
	out := make([]int64, len(arr))
	for i, e := range arr {
		n, ok := e.(int64)
		if !ok {
			return nil, fmt.Errorf("GCRA.LIMIT reply element %d is %T, not an integer", i, e)
		}
		out[i] = n
	}
	return out, nil
}

// Violation is a window in which more was admitted than the bound allows.
type Violation struct {
	Key      string
	Limit    Limit
	From, To time.Time // the window: earliest send to latest reply of the admissions in it
	Admitted int64     // units admitted in the window
	Max      int64     // what the bound allows there
	Ops      []Op      // the admissions charged to the window, by reply time
}

func (v *Violation) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "key %q (burst %d per %v): %d admitted in the %v from %s to %s, bound %d",
		v.Key, v.Limit.Burst, v.Limit.Period, v.Admitted, v.To.Sub(v.From), v.From.Format("15:04:05.000000"),
		v.To.Format("15:04:05.000000"), v.Max)
	show := v.Ops
	if len(show) > 6 {
		show = append(slices.Clone(show[:3]), show[len(show)-3:]...)
	}
	for i, op := range show {
		if len(v.Ops) > 6 && i == 3 {
			fmt.Fprintf(&b, "\n  ... %d more", len(v.Ops)-6)
		}
		b.WriteString("\n  " + op.String())
	}
	return b.String()
}

// KeyReport summarises one key.
type KeyReport struct {
	Key                               string
	Limit                             Limit
	Attempts, Allowed, Denied, Failed int64
	// AdmittedUnits sums Count over allowed calls.
	AdmittedUnits int64
	// MaxExcess is the largest (admitted − burst − ⌊w·burst/period⌋) over all windows: how
	// close the run came to the bound (a violation when above the bound's extra).
	MaxExcess int64
	// Violation is the first window over the bound, or nil.
	Violation *Violation
}

// Report is the result of Check.
type Report struct {
	Keys map[string]*KeyReport
	// Problems are replies that do not fit the protocol (wrong length, a limit that is not
	// the key's burst, a negative remaining): the run is invalid, whatever the counts say.
	Problems []string
}

// Err is nil when no key violated the bound and every reply was well formed; otherwise it
// describes the earliest violation (by window end) and the problems.
func (r *Report) Err() error {
	var first *Violation
	for _, k := range r.Keys {
		if v := k.Violation; v != nil && (first == nil || v.To.Before(first.To)) {
			first = v
		}
	}
	var errs []error
	if first != nil {
		errs = append(errs, first)
	}
	for i, p := range r.Problems {
		if i == 10 {
			errs = append(errs, fmt.Errorf("... %d more malformed replies", len(r.Problems)-10))
			break
		}
		errs = append(errs, errors.New(p))
	}
	return errors.Join(errs...)
}

// Check verifies ops against each key's limit (every key in ops must be in limits).
func Check(ops []Op, limits map[string]Limit, b Bound) *Report {
	r := &Report{Keys: map[string]*KeyReport{}}
	byKey := map[string][]Op{}
	for _, op := range ops {
		l, ok := limits[op.Key]
		if !ok {
			r.Problems = append(r.Problems, fmt.Sprintf("no limit given for key %q", op.Key))
			continue
		}
		kr := r.Keys[op.Key]
		if kr == nil {
			kr = &KeyReport{Key: op.Key, Limit: l}
			r.Keys[op.Key] = kr
		}
		kr.Attempts++
		switch op.Outcome() {
		case Failed:
			kr.Failed++
			continue
		case Denied:
			kr.Denied++
		case Allowed:
			kr.Allowed++
			kr.AdmittedUnits += op.units()
			byKey[op.Key] = append(byKey[op.Key], op)
		}
		if p := malformed(op, l); p != "" {
			r.Problems = append(r.Problems, p)
		}
		if op.End.Before(op.Start) {
			r.Problems = append(r.Problems, "reply before its request: "+op.String())
		}
	}
	for key, admitted := range byKey {
		kr := r.Keys[key]
		var err error
		kr.MaxExcess, kr.Violation, err = sweep(key, kr.Limit, b, admitted)
		if err != nil {
			r.Problems = append(r.Problems, err.Error())
		}
	}
	return r
}

// malformed checks a reply's shape against the protocol.
func malformed(op Op, l Limit) string {
	rp := op.Reply
	switch {
	case len(rp) != 5:
		return "reply is not 5 integers: " + op.String()
	case rp[0] != 0 && rp[0] != 1:
		return "denied flag is not 0 or 1: " + op.String()
	case rp[1] != l.Burst:
		return fmt.Sprintf("limit %d is not the burst %d: %s", rp[1], l.Burst, op)
	case rp[2] < 0 || rp[2] > l.Burst:
		return "remaining out of [0, burst]: " + op.String()
	case rp[0] == 0 && rp[3] != -1:
		return "an allowed reply with retry_after ≠ -1: " + op.String()
	}
	return ""
}

const neg = math.MinInt64 / 4

// sweep finds the largest excess and the first violating window of one key's admissions.
//
// With times in µs relative to the earliest send (sends rounded down, replies up, which only
// widens windows), admissions sorted by send time s and ranked by reply time e, a window
// starting at s_i and ending at e_k holds c = Σ units of admissions j with s_j ≥ s_i and
// e_j ≤ e_k. It violates iff c > B + E + ⌊(e_k − s_i)·B/P⌋, which for integers is
// c·P − (e_k − s_i)·B > (B + E)·P. Sweeping i from the latest send down, each admission adds
// its units·P to every rank at or after its own (a range add), and leaf k holds
// V_k = c_k·P − e_k·B, so the window condition is max V_k > (B + E)·P − s_i·B.
func sweep(key string, l Limit, b Bound, ops []Op) (int64, *Violation, error) {
	if l.Burst <= 0 || l.Period < time.Microsecond {
		return 0, nil, fmt.Errorf("key %q: invalid limit %+v", key, l)
	}
	n := len(ops)
	slices.SortStableFunc(ops, func(x, y Op) int { return x.Start.Compare(y.Start) })
	t0 := ops[0].Start
	us := func(t time.Time, up bool) int64 {
		d := t.Sub(t0)
		v := int64(d / time.Microsecond)
		if up && d%time.Microsecond != 0 {
			v++
		}
		return v
	}
	P, B, E := l.Period.Microseconds(), l.Burst, b.extra(l)
	s := make([]int64, n)
	e := make([]int64, n)
	var units, last int64
	for i, op := range ops {
		s[i], e[i] = us(op.Start, false), us(op.End, true)
		units += op.units()
		last = max(last, e[i])
	}
	// Keep every product far from overflow; a run this large is not a test.
	if units > (1<<60)/P || last > (1<<60)/B || (B+E) > (1<<60)/P {
		return 0, nil, fmt.Errorf("key %q: history too large to check exactly", key)
	}
	order := make([]int, n) // leaf position → op index, by reply time
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(x, y int) bool { return e[order[x]] < e[order[y]] })
	rank := make([]int, n)
	for pos, i := range order {
		rank[i] = pos
	}

	st := newTree(n)
	maxExcess := int64(math.MinInt64)
	bestI, bestK := -1, -1
	for i := n - 1; i >= 0; i-- {
		r := rank[i]
		acc := st.get(r) - neg // adds received while the leaf was absent
		st.set(r, acc-e[i]*B)
		st.add(r, n-1, ops[i].units()*P)
		top := st.max()
		// ceil((top + s_i·B)/P) − B: the integer excess of the best window starting here.
		num := top + s[i]*B
		ex := num / P
		if num%P > 0 {
			ex++
		}
		maxExcess = max(maxExcess, ex-B)
		if k := st.leftmostAbove((B+E)*P - s[i]*B); k >= 0 {
			// Earliest-ending window wins; among equal ends the latest start (shortest).
			if bestK < 0 || e[order[k]] < e[order[bestK]] {
				bestI, bestK = i, k
			}
		}
	}
	if bestK < 0 {
		return maxExcess, nil, nil
	}
	from, to := s[bestI], e[order[bestK]]
	v := &Violation{
		Key: key, Limit: l,
		From: ops[bestI].Start, To: ops[order[bestK]].End,
		Max: B + E + (to-from)*B/P,
	}
	for j := range ops {
		if s[j] >= from && e[j] <= to {
			v.Admitted += ops[j].units()
			v.Ops = append(v.Ops, ops[j])
		}
	}
	slices.SortStableFunc(v.Ops, func(x, y Op) int { return x.End.Compare(y.End) })
	return maxExcess, v, nil
}

// tree is a max segment tree with range add over n leaves, all starting at neg.
type tree struct {
	n      int
	mx, lz []int64
}

func newTree(n int) *tree {
	t := &tree{n: n, mx: make([]int64, 4*n), lz: make([]int64, 4*n)}
	for i := range t.mx {
		t.mx[i] = neg
	}
	return t
}

func (t *tree) push(x int) {
	if d := t.lz[x]; d != 0 {
		for _, c := range []int{2 * x, 2*x + 1} {
			t.mx[c] += d
			t.lz[c] += d
		}
		t.lz[x] = 0
	}
}

func (t *tree) add(l, r int, d int64) { t.addRec(1, 0, t.n-1, l, r, d) }

func (t *tree) addRec(x, lo, hi, l, r int, d int64) {
	if r < lo || hi < l {
		return
	}
	if l <= lo && hi <= r {
		t.mx[x] += d
		t.lz[x] += d
		return
	}
	t.push(x)
	mid := (lo + hi) / 2
	t.addRec(2*x, lo, mid, l, r, d)
	t.addRec(2*x+1, mid+1, hi, l, r, d)
	t.mx[x] = max(t.mx[2*x], t.mx[2*x+1])
}

func (t *tree) get(p int) int64 {
	x, lo, hi := 1, 0, t.n-1
	for lo < hi {
		t.push(x)
		mid := (lo + hi) / 2
		if p <= mid {
			x, hi = 2*x, mid
		} else {
			x, lo = 2*x+1, mid+1
		}
	}
	return t.mx[x]
}

func (t *tree) set(p int, v int64) { t.setRec(1, 0, t.n-1, p, v) }

func (t *tree) setRec(x, lo, hi, p int, v int64) {
	if lo == hi {
		t.mx[x] = v
		return
	}
	t.push(x)
	mid := (lo + hi) / 2
	if p <= mid {
		t.setRec(2*x, lo, mid, p, v)
	} else {
		t.setRec(2*x+1, mid+1, hi, p, v)
	}
	t.mx[x] = max(t.mx[2*x], t.mx[2*x+1])
}

func (t *tree) max() int64 { return t.mx[1] }

// leftmostAbove is the first leaf whose value exceeds thr, or -1.
func (t *tree) leftmostAbove(thr int64) int {
	if t.mx[1] <= thr {
		return -1
	}
	x, lo, hi := 1, 0, t.n-1
	for lo < hi {
		t.push(x)
		mid := (lo + hi) / 2
		if t.mx[2*x] > thr {
			x, hi = 2*x, mid
		} else {
			x, lo = 2*x+1, mid+1
		}
	}
	return lo
}
