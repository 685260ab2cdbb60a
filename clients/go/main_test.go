package hotkv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hotkv/hotkv/clients/go/internal/testserver"
	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
)

// serverAddr is the address of the hotkv-server TestMain started. The examples read it too, so
// they run against the real server like the tests.
var serverAddr string

// t0 is the specification's test-vector epoch (ms): the server clock is frozen there, with
// DEBUG CLOCK SET, before each test so every vector is reproduced exactly.
const t0 = int64(1700000000000)

var ctx = context.Background()

func TestMain(m *testing.M) {
	srv, err := testserver.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting hotkv-server:", err)
		os.Exit(1)
	}
	serverAddr = srv.Addr
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

// env is one way of running the typed commands: a protocol (RESP2 or RESP3), a client (plain
// or cluster) and a mode (direct call, Pipelined, TxPipelined). Every behaviour test runs in
// each env, so each method is proven in all of them.
type env struct {
	t     *testing.T
	admin *redis.Client
	// run executes fn's commands in this env's mode; after it returns the commands have their
	// replies.
	run func(fn func(hotkv.Commands))
}

type envSpec struct {
	name    string
	cluster bool
	mode    string // "plain", "pipelined" or "tx"
}

var envSpecs = []envSpec{
	{"plain", false, "plain"},
	{"pipelined", false, "pipelined"},
	{"tx", false, "tx"},
	{"cluster", true, "plain"},
	{"cluster-pipelined", true, "pipelined"},
	{"cluster-tx", true, "tx"},
}

// newAdmin returns a plain go-redis client for setup and raw checks (GET, PTTL, DEBUG CLOCK):
// deliberately not the client under test.
func newAdmin(t testing.TB) *redis.Client {
	admin := redis.NewClient(&redis.Options{Addr: serverAddr, Protocol: 2})
	t.Cleanup(func() { admin.Close() })
	return admin
}

// singleNodeSlots presents the one test server as a cluster owning every slot: go-redis's
// documented way to drive a ClusterClient without CLUSTER commands. HotKV has no cluster mode
// yet; this proves the commands route and parse through the cluster client's code paths.
func singleNodeSlots(addr string) func(context.Context) ([]redis.ClusterSlot, error) {
	return func(context.Context) ([]redis.ClusterSlot, error) {
		return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: addr}}}}, nil
	}
}

// forEachEnv runs fn in every protocol, client and mode, each on a reset server (section
// "reset").
func forEachEnv(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Helper()
	for _, proto := range []int{2, 3} {
		for _, spec := range envSpecs {
			t.Run(fmt.Sprintf("resp%d/%s", proto, spec.name), func(t *testing.T) {
				e := &env{t: t, admin: newAdmin(t)}
				var procs hotkvProcs
				if spec.cluster {
					cc := hotkv.NewClusterClient(&redis.ClusterOptions{
						ClusterSlots: singleNodeSlots(serverAddr),
						Protocol:     proto,
					})
					t.Cleanup(func() { cc.Close() })
					procs = hotkvProcs{cc.Commands, cc.Pipelined, cc.TxPipelined}
				} else {
					c := hotkv.NewClient(&redis.Options{Addr: serverAddr, Protocol: proto})
					t.Cleanup(func() { c.Close() })
					procs = hotkvProcs{c.Commands, c.Pipelined, c.TxPipelined}
				}
				switch spec.mode {
				case "plain":
					e.run = func(fn func(hotkv.Commands)) { fn(procs.direct) }
				case "pipelined":
					e.run = func(fn func(hotkv.Commands)) {
						// Pipelined's error is the first failed command's; each command keeps
						// its own, which is what the tests check.
						_, _ = procs.pipelined(ctx, func(p redis.Pipeliner) error { fn(hotkv.Wrap(p)); return nil })
					}
				case "tx":
					e.run = func(fn func(hotkv.Commands)) {
						_, _ = procs.tx(ctx, func(p redis.Pipeliner) error { fn(hotkv.Wrap(p)); return nil })
					}
				}
				reset(t, e.admin)
				fn(t, e)
			})
		}
	}
}

type pipelinedFunc func(context.Context, func(redis.Pipeliner) error) ([]redis.Cmder, error)

type hotkvProcs struct {
	direct    hotkv.Commands
	pipelined pipelinedFunc
	tx        pipelinedFunc
}

// reset gives a test a clean server: no keys, no limiters, default settings and the clock
// frozen at t0.
func reset(t testing.TB, admin *redis.Client) {
	t.Helper()
	for _, args := range [][]any{
		{"flushall"},
		{"config", "set", "throttle-compat", "redis-cell"},
		{"config", "set", "ratelimit.max-limiters", "10000"},
		{"config", "set", "ratelimit.sliding-window-max-entries", "1024"},
		{"debug", "clock", "set", t0},
	} {
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
}

// at freezes the server clock at t0+ms.
func (e *env) at(ms int64) {
	e.t.Helper()
	if err := e.admin.Do(ctx, "debug", "clock", "set", t0+ms).Err(); err != nil {
		e.t.Fatal(err)
	}
}

// raw runs a command on the admin connection and fails the test on error.
func (e *env) raw(args ...any) any {
	e.t.Helper()
	v, err := e.admin.Do(ctx, args...).Result()
	if err != nil {
		e.t.Fatalf("%v: %v", args, err)
	}
	return v
}

// rawErr runs a command on the admin connection and returns its error.
func (e *env) rawErr(args ...any) error { return e.admin.Do(ctx, args...).Err() }

// do runs one typed command in the env's mode and returns it executed.
func do[T any](e *env, fn func(hotkv.Commands) T) T {
	var out T
	e.run(func(c hotkv.Commands) { out = fn(c) })
	return out
}

func (e *env) limit(key string, period time.Duration, burst, count int64) *hotkv.GCRACmd {
	return do(e, func(c hotkv.Commands) *hotkv.GCRACmd { return c.GCRALimit(ctx, key, period, burst, count) })
}

func (e *env) peek(key string, period time.Duration, burst, count int64) *hotkv.GCRACmd {
	return do(e, func(c hotkv.Commands) *hotkv.GCRACmd { return c.GCRAPeek(ctx, key, period, burst, count) })
}

func (e *env) throttle(key string, maxBurst, count int64, period time.Duration, q int64) *hotkv.ThrottleCmd {
	return do(e, func(c hotkv.Commands) *hotkv.ThrottleCmd { return c.CLThrottle(ctx, key, maxBurst, count, period, q) })
}

func (e *env) check(name, key string, cost int64) *hotkv.RateLimitCmd {
	return do(e, func(c hotkv.Commands) *hotkv.RateLimitCmd { return c.RateLimitCheck(ctx, name, key, cost) })
}

func (e *env) rlPeek(name, key string) *hotkv.RateLimitCmd {
	return do(e, func(c hotkv.Commands) *hotkv.RateLimitCmd { return c.RateLimitPeek(ctx, name, key) })
}

func (e *env) create(name string, limit int64, window time.Duration, opts *hotkv.RateLimitOptions) error {
	return do(e, func(c hotkv.Commands) *redis.StatusCmd { return c.RateLimitCreate(ctx, name, limit, window, opts) }).Err()
}

func (e *env) mustCreate(name string, limit int64, window time.Duration, opts *hotkv.RateLimitOptions) {
	e.t.Helper()
	if err := e.create(name, limit, window, opts); err != nil {
		e.t.Fatalf("RateLimitCreate %s: %v", name, err)
	}
}

func (e *env) stats(name string) *hotkv.RateLimitStatsCmd {
	return do(e, func(c hotkv.Commands) *hotkv.RateLimitStatsCmd { return c.RateLimitStats(ctx, name) })
}

// five flattens a result to the wire's five integers so replies compare against the
// specification's vectors as written.
func gcraFive(r hotkv.GCRAResult) [5]int64 {
	return [5]int64{b2i(r.Denied), r.Limit, r.Remaining, r.RetryAfterMs, r.ResetAfterMs}
}

func throttleFive(r hotkv.ThrottleResult) [5]int64 {
	return [5]int64{b2i(r.Limited), r.Limit, r.Remaining, r.RetryAfterSec, r.ResetAfterSec}
}

func rlFive(r hotkv.RateLimitResult) [5]int64 {
	return [5]int64{b2i(r.Allowed), r.Remaining, r.RetryAfterMs, r.Limit, r.Current}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (e *env) wantGCRA(cmd *hotkv.GCRACmd, want [5]int64) {
	e.t.Helper()
	r, err := cmd.Result()
	if err != nil {
		e.t.Fatalf("%v: %v", cmd.Args(), err)
	}
	if got := gcraFive(r); got != want {
		e.t.Fatalf("%v = %v, want %v", cmd.Args(), got, want)
	}
}

func (e *env) wantThrottle(cmd *hotkv.ThrottleCmd, want [5]int64) {
	e.t.Helper()
	r, err := cmd.Result()
	if err != nil {
		e.t.Fatalf("%v: %v", cmd.Args(), err)
	}
	if got := throttleFive(r); got != want {
		e.t.Fatalf("%v = %v, want %v", cmd.Args(), got, want)
	}
}

func (e *env) wantRL(cmd *hotkv.RateLimitCmd, want [5]int64) {
	e.t.Helper()
	r, err := cmd.Result()
	if err != nil {
		e.t.Fatalf("%v: %v", cmd.Args(), err)
	}
	if got := rlFive(r); got != want {
		e.t.Fatalf("%v = %v, want %v", cmd.Args(), got, want)
	}
}

// wantErr checks that err is the server's error with exactly this text.
func wantErr(t testing.TB, what string, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %q", what, msg)
	}
	if err.Error() != msg {
		t.Fatalf("%s: error %q, want %q", what, err.Error(), msg)
	}
	// Server errors must reach the caller as go-redis errors, unchanged.
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		t.Fatalf("%s: error %T is not a redis.Error", what, err)
	}
}

const (
	errPeriod    = "ERR invalid period: must be a positive integer (milliseconds)"
	errBurst     = "ERR invalid burst: must be a positive integer"
	errCount     = "ERR invalid count: must be a positive integer"
	errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errRange     = "ERR value is not an integer or out of range"
	errZeroRate  = "ERR zero rates are not supported"
	errName      = "ERR invalid name: must be 1 to 512 bytes"
	errLimit     = "ERR invalid limit: must be a positive integer"
	errWindow    = "ERR invalid window: must be a positive integer (milliseconds)"
	errRate      = "ERR invalid rate: must be a positive number"
	errSyntax    = "ERR syntax error"
	errExists    = "ERR limiter already exists or limit reached"
	errCost      = "ERR invalid cost: must be a positive integer"
	errNotFound  = "ERR limiter not found"
)
