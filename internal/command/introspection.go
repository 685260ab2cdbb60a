package command

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkv/hotkv/internal/pubsub"
	"github.com/hotkv/hotkv/internal/resp"
)

// Introspection: SLOWLOG, LATENCY and MONITOR (Redis 7.0's slowlog.c, latency.c and
// replicationFeedMonitors). Their state lives on the table, one per server.
//
// The dispatcher's cost when nothing is configured to look: one comparison of the command's
// duration with gate (the lower of the slowlog and latency-monitor thresholds, MaxInt64 when
// both are off), one atomic load of the monitor count, and, with latency-tracking on (Redis's
// default), one atomic add into the command's histogram (latency.go).

// slowlogMaxArgc and slowlogMaxString are Redis's SLOWLOG_ENTRY_MAX_ARGC and
// SLOWLOG_ENTRY_MAX_STRING: what an entry keeps of a command line.
const (
	slowlogMaxArgc   = 32
	slowlogMaxString = 128
	// latencyTSLen is Redis's LATENCY_TS_LEN: the samples each event keeps (one per second).
	latencyTSLen = 160
)

// SlowlogEntry is one SLOWLOG GET entry.
type SlowlogEntry struct {
	ID       int64
	Time     int64 // Unix seconds
	Duration int64 // microseconds
	Args     []string
	Addr     string
	Name     string
}

type latencySample struct {
	time    int64 // Unix seconds; 0: unused slot
	latency int64 // ms
}

// latencySeries is one event's samples, a ring as Redis's latencyTimeSeries.
type latencySeries struct {
	idx     int
	max     int64
	samples [latencyTSLen]latencySample
}

// monitorLine is a monitor client's output path.
type monitorClient struct {
	cl  *Client
	sub *pubsub.Sub
}

type introspection struct {
	// gate is min(slowUs, latUs): run compares a command's duration with it and nothing else.
	gate atomic.Int64
	// slowUs is slowlog-log-slower-than (MaxInt64 when negative: disabled); latUs is
	// latency-monitor-threshold in microseconds (MaxInt64 when 0: off).
	slowUs, latUs atomic.Int64
	// untracked is latency-tracking no; the zero value tracks, as Redis's default.
	untracked   atomic.Bool
	percentiles atomic.Pointer[[]float64]
	// monitors counts monitor clients: one atomic load when there are none.
	monitors atomic.Int32

	mu      sync.Mutex
	slowlog []SlowlogEntry // newest first
	slowMax int
	slowID  int64
	events  map[string]*latencySeries
	mons    []monitorClient
}

func (in *introspection) init() {
	in.slowUs.Store(10000)
	in.latUs.Store(math.MaxInt64)
	in.gate.Store(10000)
	in.slowMax = 128
	p := []float64{50, 99, 99.9}
	in.percentiles.Store(&p)
	in.events = map[string]*latencySeries{}
}

func (in *introspection) setGate() {
	in.gate.Store(min(in.slowUs.Load(), in.latUs.Load()))
}

// SetSlowlog applies slowlog-log-slower-than (µs; negative disables the log, 0 logs every
// command) and slowlog-max-len; a shorter max-len drops the oldest entries at once.
func (t *Table) SetSlowlog(slowerThanUs, maxLen int64) {
	in := &t.intro
	if slowerThanUs < 0 {
		in.slowUs.Store(math.MaxInt64)
	} else {
		in.slowUs.Store(slowerThanUs)
	}
	in.setGate()
	in.mu.Lock()
	in.slowMax = int(min(maxLen, math.MaxInt32))
	if len(in.slowlog) > in.slowMax {
		in.slowlog = in.slowlog[:in.slowMax]
	}
	in.mu.Unlock()
}

// SetLatencyMonitor applies latency-monitor-threshold (ms; 0 turns the monitor off).
func (t *Table) SetLatencyMonitor(thresholdMs int64) {
	in := &t.intro
	if thresholdMs <= 0 {
		in.latUs.Store(math.MaxInt64)
	} else {
		in.latUs.Store(min(thresholdMs, math.MaxInt64/1000) * 1000)
	}
	in.setGate()
}

// SetLatencyTracking applies latency-tracking and latency-tracking-info-percentiles.
func (t *Table) SetLatencyTracking(on bool, percentiles []float64) {
	t.intro.untracked.Store(!on)
	p := append([]float64(nil), percentiles...)
	t.intro.percentiles.Store(&p)
}

// LatencyEvent records a latency-monitor sample for a server event (Redis's
// latencyAddSampleIfNeeded) when it took at least latency-monitor-threshold; "command" and
// "fast-command" are recorded by the dispatcher.
func (t *Table) LatencyEvent(event string, d time.Duration) {
	if us := d.Microseconds(); us >= t.intro.latUs.Load() {
		t.intro.addLatencySample(event, us/1000)
	}
}

func (in *introspection) addLatencySample(event string, ms int64) {
	now := time.Now().Unix()
	in.mu.Lock()
	defer in.mu.Unlock()
	ts := in.events[event]
	if ts == nil {
		ts = &latencySeries{}
		in.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	prev := (ts.idx + latencyTSLen - 1) % latencyTSLen
	if ts.samples[prev].time == now {
		// One sample per second: the worst of that second.
		ts.samples[prev].latency = max(ts.samples[prev].latency, ms)
		return
	}
	ts.samples[ts.idx] = latencySample{time: now, latency: ms}
	ts.idx = (ts.idx + 1) % latencyTSLen
}

// slow is run's path for a command at least as slow as the lower threshold: the latency
// monitor's "command" or "fast-command" event, and the slow log.
func (t *Table) slow(c *Ctx, cmd *Command, us int64) {
	in := &t.intro
	if us >= in.latUs.Load() {
		event := "command"
		if cmd.Flags&FlagFast != 0 {
			event = "fast-command"
		}
		in.addLatencySample(event, us/1000)
	}
	if us >= in.slowUs.Load() && cmd.Flags&FlagSkipSlowlog == 0 && c.Blocked == nil {
		t.slowlogPush(c, cmd, c.Args, us)
	}
}

// AfterBlocked records a blocking command once it is served or times out: Redis keeps it out
// of the slow log and the latency histogram while it waits and logs it, with its original
// arguments and its execution time (not the wait), when it is unblocked.
func (t *Table) AfterBlocked(c *Ctx, args [][]byte, execNs int64) {
	cmd := c.Cmd
	if cmd == nil {
		return
	}
	if !t.intro.untracked.Load() {
		cmd.latency.record(execNs)
	}
	if us := execNs / 1000; us >= t.intro.slowUs.Load() && cmd.Flags&FlagSkipSlowlog == 0 {
		t.slowlogPush(c, cmd, args, us)
	}
}

func (t *Table) slowlogPush(c *Ctx, cmd *Command, args [][]byte, us int64) {
	args = redactArgs(cmd, args)
	n := min(len(args), slowlogMaxArgc)
	e := SlowlogEntry{Time: time.Now().Unix(), Duration: us, Args: make([]string, n),
		Addr: c.Client.Addr, Name: c.Client.Name}
	for i := 0; i < n; i++ {
		switch a := args[i]; {
		case n != len(args) && i == n-1:
			e.Args[i] = "... (" + strconv.Itoa(len(args)-n+1) + " more arguments)"
		case len(a) > slowlogMaxString:
			e.Args[i] = string(a[:slowlogMaxString]) + "... (" + strconv.Itoa(len(a)-slowlogMaxString) + " more bytes)"
		default:
			e.Args[i] = string(a)
		}
	}
	in := &t.intro
	in.mu.Lock()
	e.ID = in.slowID
	in.slowID++
	if in.slowMax > 0 {
		if len(in.slowlog) < in.slowMax {
			in.slowlog = append(in.slowlog, SlowlogEntry{})
		}
		copy(in.slowlog[1:], in.slowlog)
		in.slowlog[0] = e
	}
	in.mu.Unlock()
}

// redacted is Redis's shared.redacted.
var redacted = []byte("(redacted)")

// redactArgs hides secrets from the slow log and MONITOR as Redis's
// redactClientCommandArgument calls do: AUTH's password (and user), HELLO's AUTH pair, every
// argument of ACL SETUSER, and the values of sensitive directives in CONFIG SET. It returns
// args itself when nothing is hidden.
func redactArgs(cmd *Command, args [][]byte) [][]byte {
	var hide []int
	name := cmd.Name
	if cmd.parent != nil {
		name = cmd.parent.Name + "|" + cmd.Name
	}
	switch name {
	case "auth":
		if len(args) <= 3 {
			for i := 1; i < len(args); i++ {
				hide = append(hide, i)
			}
		}
	case "hello":
		i := 2
		if len(args) < 2 {
			break
		}
		for ; i < len(args); i++ {
			more := len(args) - 1 - i
			switch {
			case EqualFold(args[i], "auth") && more >= 2:
				hide = append(hide, i+1, i+2)
				i += 2
			case EqualFold(args[i], "setname") && more >= 1:
				i++
			default:
				i = len(args)
			}
		}
	case "acl|setuser":
		for i := 2; i < len(args); i++ {
			hide = append(hide, i)
		}
	case "config|set":
		for i := 2; i+1 < len(args); i += 2 {
			switch strings.ToLower(string(args[i])) {
			case "requirepass", "masterauth", "masteruser":
				hide = append(hide, i+1)
			}
		}
	}
	if len(hide) == 0 {
		return args
	}
	out := append([][]byte(nil), args...)
	for _, i := range hide {
		out[i] = redacted
	}
	return out
}

// ---- MONITOR ----

// feedMonitors sends the command to every monitor client in Redis's format:
// +<unix>.<µs> [<db> <addr>|lua] "arg" "arg"...
func (t *Table) feedMonitors(c *Ctx, cmd *Command) {
	now := time.Now()
	line := make([]byte, 0, 64)
	line = append(line, '+')
	line = strconv.AppendInt(line, now.Unix(), 10)
	line = append(line, '.')
	us := now.Nanosecond() / 1000
	for d := 100000; d > 0; d /= 10 {
		line = append(line, byte('0'+us/d%10))
	}
	line = append(line, " ["...)
	line = strconv.AppendInt(line, int64(c.DB.ID), 10)
	line = append(line, ' ')
	if c.inScript {
		line = append(line, "lua"...)
	} else {
		line = append(line, c.Client.Addr...)
	}
	line = append(line, "] "...)
	for i, a := range redactArgs(cmd, c.Args) {
		if i > 0 {
			line = append(line, ' ')
		}
		line = resp.AppendRepr(line, a)
	}
	line = append(line, '\r', '\n')
	in := &t.intro
	in.mu.Lock()
	mons := in.mons
	in.mu.Unlock()
	for _, m := range mons {
		if m.cl == c.Client && !c.inScript {
			// The monitor's own command: after its reply, in order, as Redis appends both
			// to the same output buffer.
			c.pushWriter().Raw(line)
			continue
		}
		m.sub.PushRaw(line)
	}
}

// removeMonitor forgets a monitor client whose connection closed.
func (t *Table) removeMonitor(cl *Client) {
	in := &t.intro
	in.mu.Lock()
	defer in.mu.Unlock()
	for i, m := range in.mons {
		if m.cl == cl {
			// A fresh slice: feedMonitors may be walking the old one.
			in.mons = append(append([]monitorClient(nil), in.mons[:i]...), in.mons[i+1:]...)
			in.monitors.Store(int32(len(in.mons)))
			return
		}
	}
}

func monitorCommand(c *Ctx) {
	if c.Client.multi.active || c.tx != nil || c.allLocked {
		// Inside EXEC: a client that expects one reply per command cannot stream.
		c.Error("ERR MONITOR isn't allowed for DENY BLOCKING client")
		return
	}
	if c.Client.monitor.Load() {
		return // Redis ignores a second MONITOR, without a reply
	}
	if c.Client.Sub == nil {
		c.Error("ERR MONITOR is not available for this client")
		return
	}
	t := c.Srv.Table()
	c.Client.monitor.Store(true)
	c.Client.monitorTable = t
	c.W.OK()
	in := &t.intro
	in.mu.Lock()
	// The OK goes to the outbox before the first line can: from now on the connection's
	// replies and the monitor lines share one queue, in order.
	c.moveOut()
	in.mons = append(append([]monitorClient(nil), in.mons...), monitorClient{cl: c.Client, sub: c.Client.Sub})
	in.monitors.Store(int32(len(in.mons)))
	in.mu.Unlock()
}

// ---- SLOWLOG ----

func slowlogCommands() *Command {
	sub := func(name string, arity int, syntax, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: FlagAdmin | FlagLoading | FlagStale, ACL: adminACL,
			Since: "2.2.12", Complexity: complexity, Syntax: syntax, Summary: summary, Handler: h}
	}
	get := sub("get", -2, "[count]", "O(N) where N is the number of entries returned", "Get the slow log's entries", slowlogGetCommand)
	get.Tips = []string{"request_policy:all_nodes", "nondeterministic_output"}
	get.Doc = "History: 4.0.0 added the client's address and name to each entry. Each entry is the ID, the Unix time, the duration in microseconds, the arguments (at most 32, the last then saying how many more there were; each cut at 128 bytes with the number of bytes cut), the client's address and its name. AUTH and HELLO passwords, ACL SETUSER rules and sensitive CONFIG SET values show as `(redacted)`."
	length := sub("len", 2, "", "O(1)", "Get the slow log's length", func(c *Ctx) {
		in := &c.Srv.Table().intro
		in.mu.Lock()
		n := len(in.slowlog)
		in.mu.Unlock()
		c.W.Int(int64(n))
	})
	length.Tips = []string{"request_policy:all_nodes", "response_policy:agg_sum", "nondeterministic_output"}
	reset := sub("reset", 2, "", "O(N) where N is the number of entries in the slowlog", "Clear all entries from the slow log", func(c *Ctx) {
		in := &c.Srv.Table().intro
		in.mu.Lock()
		in.slowlog = nil
		in.mu.Unlock()
		c.W.OK()
	})
	reset.Tips = []string{"request_policy:all_nodes", "response_policy:all_succeeded"}
	help := &Command{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"slow"}, Since: "6.2.0",
		Complexity: "O(1)", Summary: "Show helpful text about the different subcommands",
		Handler: helpHandler(
			"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"GET [<count>]",
			"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
			"    Entries are made of:",
			"    id, timestamp, time in microseconds, arguments array, client IP and port,",
			"    client name",
			"LEN",
			"    Return the length of the slowlog.",
			"RESET",
			"    Reset the slowlog.",
			"HELP",
			"    Prints this help.",
		)}
	return &Command{Name: "slowlog", Arity: -2, ACL: []string{"slow"}, Group: "server", Since: "2.2.12",
		Complexity: "Depends on subcommand.", Summary: "A container for slow log commands",
		Doc:         "Commands slower than `slowlog-log-slower-than` microseconds (default 10000; -1 disables, 0 logs every command) are kept, newest first, up to `slowlog-max-len` entries. A command queued in MULTI is logged alone (EXEC is not), a command run by a script is logged with the script's client, and a blocking command is logged when it is served, with its execution time and not its wait. Costs one comparison per command when the command is faster than the threshold.",
		Subcommands: []*Command{length, help, reset, get}}
}

func slowlogGetCommand(c *Ctx) {
	if len(c.Args) > 3 {
		c.Error("ERR unknown subcommand or wrong number of arguments for '" + string(c.Args[1]) + "'. Try SLOWLOG HELP.")
		return
	}
	count := int64(10)
	if len(c.Args) == 3 {
		v, ok := strconvInt(c.Args[2])
		if !ok || v < -1 {
			c.Error("ERR count should be greater than or equal to -1")
			return
		}
		count = v
	}
	in := &c.Srv.Table().intro
	in.mu.Lock()
	n := len(in.slowlog)
	if count >= 0 && int64(n) > count {
		n = int(count)
	}
	entries := append([]SlowlogEntry(nil), in.slowlog[:n]...)
	in.mu.Unlock()
	c.W.Array(len(entries))
	for _, e := range entries {
		c.W.Array(6)
		c.W.Int(e.ID)
		c.W.Int(e.Time)
		c.W.Int(e.Duration)
		c.W.Array(len(e.Args))
		for _, a := range e.Args {
			c.W.BulkString(a)
		}
		c.W.BulkString(e.Addr)
		c.W.BulkString(e.Name)
	}
}

// ---- LATENCY ----

func latencyCommands() *Command {
	sub := func(name string, arity int, syntax, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: adminFlags, ACL: adminACL, Since: "2.8.13",
			Complexity: "O(1)", Syntax: syntax, Summary: summary, Handler: h,
			Tips: []string{"nondeterministic_output", "request_policy:all_nodes", "response_policy:special"}}
	}
	latest := sub("latest", 2, "", "Return the latest latency samples for all events.", latencyLatestCommand)
	graph := sub("graph", 3, "event", "Return a latency graph for the event.", latencyGraphCommand)
	doctor := sub("doctor", 2, "", "Return a human readable latency analysis report.", latencyDoctorCommand)
	histogram := sub("histogram", -2, "[command [command ...]]", "Return the cumulative distribution of latencies of a subset of commands or all.", latencyHistogramCommand)
	histogram.Since = "7.0.0"
	histogram.Complexity = "O(N) where N is the number of commands with latency information being retrieved."
	histogram.Doc = "Buckets are powers of two from 1.024 µs, labelled in whole microseconds as Redis's HDR histogram labels them (1, 2, 4, 8, 16, 33, 66 ...), with cumulative counts; empty buckets are left out. Every call is recorded while `latency-tracking` is yes (the default): one atomic add per command."
	history := sub("history", 3, "event", "Return timestamp-latency samples for the event.", latencyHistoryCommand)
	reset := sub("reset", -2, "[event [event ...]]", "Reset latency data for one or more events.", latencyResetCommand)
	reset.Tips = []string{"request_policy:all_nodes", "response_policy:all_succeeded"}
	help := &Command{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"slow"}, Since: "2.8.13",
		Complexity: "O(1)", Summary: "Show helpful text about the different subcommands.",
		Handler: helpHandler(
			"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DOCTOR",
			"    Return a human readable latency analysis report.",
			"GRAPH <event>",
			"    Return an ASCII latency graph for the <event> class.",
			"HISTORY <event>",
			"    Return time-latency samples for the <event> class.",
			"LATEST",
			"    Return the latest latency samples for all events.",
			"RESET [<event> ...]",
			"    Reset latency data of one or more <event> classes.",
			"    (default: reset all data for all event classes)",
			"HISTOGRAM [COMMAND ...]",
			"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
			"    If no commands are specified then all histograms are replied.",
			"HELP",
			"    Prints this help.",
		)}
	return &Command{Name: "latency", Arity: -2, ACL: []string{"slow"}, Group: "server", Since: "2.8.13",
		Complexity: "Depends on subcommand.", Summary: "A container for latency diagnostics commands",
		Doc: "The latency monitor records events that took at least `latency-monitor-threshold` milliseconds (0, the default, turns it off): `command` and `fast-command` (commands flagged fast) and `expire-cycle` (an active expiry cycle). " +
			"Redis's fork, rdb, AOF and eviction events are not recorded: HotKV takes snapshots without fork, and its append-only log and eviction work run beside the commands rather than stopping them. " +
			"Each event keeps one sample per second, the worst, for its last 160 seconds with samples.",
		Subcommands: []*Command{latest, graph, doctor, histogram, help, history, reset}}
}

func (in *introspection) eventNames() []string {
	names := make([]string, 0, len(in.events))
	for n := range in.events {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func latencyLatestCommand(c *Ctx) {
	in := &c.Srv.Table().intro
	in.mu.Lock()
	defer in.mu.Unlock()
	names := in.eventNames()
	c.W.Array(len(names))
	for _, n := range names {
		ts := in.events[n]
		last := ts.samples[(ts.idx+latencyTSLen-1)%latencyTSLen]
		c.W.Array(4)
		c.W.BulkString(n)
		c.W.Int(last.time)
		c.W.Int(last.latency)
		c.W.Int(ts.max)
	}
}

// samples returns the event's samples, oldest first.
func (ts *latencySeries) ordered() []latencySample {
	var out []latencySample
	for j := 0; j < latencyTSLen; j++ {
		s := ts.samples[(ts.idx+j)%latencyTSLen]
		if s.time != 0 {
			out = append(out, s)
		}
	}
	return out
}

func latencyHistoryCommand(c *Ctx) {
	in := &c.Srv.Table().intro
	in.mu.Lock()
	var samples []latencySample
	if ts := in.events[string(c.Args[2])]; ts != nil {
		samples = ts.ordered()
	}
	in.mu.Unlock()
	c.W.Array(len(samples))
	for _, s := range samples {
		c.W.Array(2)
		c.W.Int(s.time)
		c.W.Int(s.latency)
	}
}

func latencyResetCommand(c *Ctx) {
	in := &c.Srv.Table().intro
	in.mu.Lock()
	n := 0
	if len(c.Args) == 2 {
		n = len(in.events)
		clear(in.events)
	} else {
		for _, a := range c.Args[2:] {
			for name := range in.events {
				if strings.EqualFold(name, string(a)) {
					delete(in.events, name)
					n++
				}
			}
		}
	}
	in.mu.Unlock()
	c.W.Int(int64(n))
}

// latencyGraphCommand draws the event's samples as Redis's LATENCY GRAPH does: a header line,
// a rule, and columns of '#' and '|' scaled between the lowest and highest sample, each
// labelled below with how long ago it was (s, m, h, d), written vertically.
func latencyGraphCommand(c *Ctx) {
	in := &c.Srv.Table().intro
	in.mu.Lock()
	ts := in.events[string(c.Args[2])]
	var samples []latencySample
	var allMax int64
	if ts != nil {
		samples, allMax = ts.ordered(), ts.max
	}
	in.mu.Unlock()
	if ts == nil {
		c.Error("ERR No samples available for event '" + string(c.Args[2]) + "'")
		return
	}
	var lo, hi int64
	for i, s := range samples {
		if i == 0 || s.latency < lo {
			lo = s.latency
		}
		if s.latency > hi {
			hi = s.latency
		}
	}
	var b strings.Builder
	b.WriteString(string(c.Args[2]) + " - high " + itoa(hi) + " ms, low " + itoa(lo) + " ms (all time high " + itoa(allMax) + " ms)\n")
	b.WriteString(strings.Repeat("-", 80) + "\n")
	const rows = 4
	now := time.Now().Unix()
	labels := make([]string, len(samples))
	height := make([]int, len(samples))
	for i, s := range samples {
		ago := now - s.time
		switch {
		case ago < 60:
			labels[i] = itoa(ago) + "s"
		case ago < 3600:
			labels[i] = itoa(ago/60) + "m"
		case ago < 86400:
			labels[i] = itoa(ago/3600) + "h"
		default:
			labels[i] = itoa(ago/86400) + "d"
		}
		if hi > lo {
			height[i] = int(float64(s.latency-lo) / float64(hi-lo) * rows * 2)
		} else {
			height[i] = rows
		}
	}
	for row := rows - 1; row >= 0; row-- {
		line := make([]byte, len(samples))
		for i := range samples {
			switch h := height[i] - row*2; {
			case h >= 2:
				line[i] = '#'
			case h == 1:
				line[i] = '|'
			case row == 0:
				line[i] = '_'
			default:
				line[i] = ' '
			}
		}
		b.WriteString(strings.TrimRight(string(line), " ") + "\n")
	}
	for r := 0; ; r++ {
		line := make([]byte, len(labels))
		any := false
		for i, l := range labels {
			line[i] = ' '
			if r < len(l) {
				line[i] = l[r]
				any = true
			}
		}
		if !any {
			break
		}
		b.WriteString(strings.TrimRight(string(line), " ") + "\n")
	}
	c.W.Verbatim("txt", b.String())
}

// latencyDoctorCommand writes a short report in the spirit of Redis's LATENCY DOCTOR: per
// event, its samples' count, average, worst and latest, and advice for the events HotKV has.
func latencyDoctorCommand(c *Ctx) {
	in := &c.Srv.Table().intro
	in.mu.Lock()
	type stat struct {
		name                 string
		n                    int
		avg, max, allMax     int64
		first, last, lastLat int64
	}
	var stats []stat
	for _, name := range in.eventNames() {
		ts := in.events[name]
		s := stat{name: name, allMax: ts.max}
		var sum int64
		for _, smp := range ts.ordered() {
			if s.n == 0 {
				s.first = smp.time
			}
			s.n++
			sum += smp.latency
			s.max = max(s.max, smp.latency)
			s.last, s.lastLat = smp.time, smp.latency
		}
		if s.n > 0 {
			s.avg = sum / int64(s.n)
		}
		stats = append(stats, s)
	}
	in.mu.Unlock()
	var b strings.Builder
	if len(stats) == 0 {
		if in.latUs.Load() == math.MaxInt64 {
			b.WriteString("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this HotKV instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it.\n")
		} else {
			b.WriteString("Dave, no latency spike was observed during the lifetime of this HotKV instance, not in the slightest bit.\n")
		}
		c.W.Verbatim("txt", b.String())
		return
	}
	b.WriteString("Dave, I have observed latency spikes in this HotKV instance. You don't mind talking about it, do you Dave?\n\n")
	advice := map[string]bool{}
	for i, s := range stats {
		b.WriteString(strconv.Itoa(i+1) + ". " + s.name + ": " + strconv.Itoa(s.n) + " latency spikes (average " + itoa(s.avg) + "ms, worst " + itoa(s.max) + "ms). All time high " + itoa(s.allMax) + "ms.\n")
		b.WriteString("   Worst of the latest: " + itoa(s.lastLat) + "ms at " + time.Unix(s.last, 0).UTC().Format(time.RFC3339) + ".\n")
		advice[s.name] = true
	}
	b.WriteString("\nI have a few advices for you:\n\n")
	if advice["command"] || advice["fast-command"] {
		b.WriteString("- Check your slow log (SLOWLOG GET) for the commands that took longest: operations on large keys (KEYS, SMEMBERS, LRANGE with big ranges, SORT, Lua scripts) are the usual cause. Prefer SCAN and its family, and split big values.\n")
	}
	if advice["fast-command"] {
		b.WriteString("- Commands flagged fast were slow: the machine may be overloaded, swapping or short of CPU (GOMAXPROCS, CPU quota of a container).\n")
	}
	if advice["expire-cycle"] {
		b.WriteString("- Deleting expired keys took long: many keys expiring at the same moment, or big keys expiring. Spread expiry times, or lower active-expire-effort.\n")
	}
	c.W.Verbatim("txt", b.String())
}

// latencyHistogramCommand is LATENCY HISTOGRAM: all commands with calls, or the named ones
// (a container brings its subcommands; unknown names are skipped).
func latencyHistogramCommand(c *Ctx) {
	t := c.Srv.Table()
	type entry struct {
		name string
		snap LatencySnapshot
	}
	var out []entry
	add := func(cmd *Command) {
		if s := cmd.Latency(); s.Count > 0 {
			out = append(out, entry{cmd.FullName(), s})
		}
	}
	withSubs := func(cmd *Command) {
		add(cmd)
		for _, s := range cmd.Subcommands {
			add(s)
		}
	}
	if len(c.Args) == 2 {
		for _, cmd := range t.all {
			withSubs(cmd)
		}
	} else {
		for _, a := range c.Args[2:] {
			name := strings.ToLower(string(a))
			parent, sub, isSub := strings.Cut(name, "|")
			cmd := t.byName[parent]
			if cmd != nil && isSub {
				cmd = cmd.subByName[sub]
				if cmd != nil {
					add(cmd)
				}
				continue
			}
			if cmd != nil {
				withSubs(cmd)
			}
		}
	}
	c.W.Map(len(out))
	for _, e := range out {
		c.W.BulkString(e.name)
		c.W.Map(2)
		c.W.BulkString("calls")
		c.W.Int(int64(e.snap.Count))
		c.W.BulkString("histogram_usec")
		var prev uint64
		var labels []int64
		var counts []uint64
		for k, bk := range e.snap.Buckets() {
			if bk.Count > prev {
				labels = append(labels, redisOctaveUsec(k))
				counts = append(counts, bk.Count)
			}
			prev = bk.Count
		}
		c.W.Map(len(labels))
		for i := range labels {
			c.W.Int(labels[i])
			c.W.Int(int64(counts[i]))
		}
	}
}

// LatencyStats writes INFO's latencystats section: one line per command with calls, with the
// configured percentiles, as Redis's fillPercentileDistributionLatencies. Nothing while
// latency-tracking is off.
func (t *Table) LatencyStats(b *strings.Builder) {
	if t.intro.untracked.Load() {
		return
	}
	ps := *t.intro.percentiles.Load()
	line := func(cmd *Command) {
		s := cmd.Latency()
		if s.Count == 0 {
			return
		}
		b.WriteString("latency_percentiles_usec_" + cmd.FullName() + ":")
		for i, p := range ps {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("p" + strconv.FormatFloat(p, 'f', -1, 64) + "=" + strconv.FormatFloat(s.Percentile(p), 'f', 3, 64))
		}
		b.WriteString("\r\n")
	}
	for _, cmd := range t.all {
		line(cmd)
		for _, s := range cmd.Subcommands {
			line(s)
		}
	}
}
