package tests

// Integration tests of the Prometheus listener (internal/metrics, internal/server/metrics.go):
// traffic with known outcomes is sent, /metrics is scraped and parsed with expfmt, and every
// counter must equal the traffic and agree with INFO and RATELIMIT.STATS. /healthz and /readyz
// are checked while a snapshot load is held, and the listener's CONFIG SET life cycle. The
// Grafana dashboard's queries are checked against what a running server exports.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/server"
	"github.com/hotkv/hotkv/internal/testutil"
	"github.com/hotkv/hotkv/internal/testutil/procs"
)

// httpc never keeps connections, so a closed listener is seen at once.
var httpc = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// startWithMetrics starts a server serving metrics on an ephemeral loopback port and returns
// it with the endpoint's base URL.
func startWithMetrics(t *testing.T, args ...string) (*testutil.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s, err := testutil.Launch(t, testutil.Options{Args: args, Setup: func(srv *server.Server) { srv.AddMetricsListener(ln) }})
	require.NoError(t, err)
	return s, "http://" + ln.Addr().String()
}

// get fetches url and returns the status code and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := httpc.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// unreachable reports whether nothing answers HTTP at base.
func unreachable(base string) bool {
	resp, err := httpc.Get(base + "/healthz")
	if err == nil {
		resp.Body.Close()
	}
	return err != nil
}

// scrape parses /metrics.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code, body)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	return fams
}

// metricValue returns the value of the series of family name whose labels include every pair
// of labels ("k=v" strings), and whether there is exactly one.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	var found []float64
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		ok := true
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			if have[k] != v {
				ok = false
			}
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			found = append(found, m.Counter.GetValue())
		case m.Gauge != nil:
			found = append(found, m.Gauge.GetValue())
		case m.Untyped != nil:
			found = append(found, m.Untyped.GetValue())
		case m.Histogram != nil: // a histogram's value here is its number of observations
			found = append(found, float64(m.Histogram.GetSampleCount()))
		}
	}
	if len(found) != 1 {
		return 0, false
	}
	return found[0], true
}

func requireMetric(t *testing.T, fams map[string]*dto.MetricFamily, want float64, name string, labels ...string) {
	t.Helper()
	v, ok := metricValue(fams, name, labels...)
	require.Truef(t, ok, "no single series %s%v", name, labels)
	require.Equalf(t, want, v, "%s%v", name, labels)
}

// infoFields parses INFO's field:value lines.
func infoFields(t *testing.T, c *redis.Client, section string) map[string]string {
	t.Helper()
	txt, err := c.Info(testutil.Ctx, section).Result()
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(txt, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

// kv parses "a=1,b=2" as INFO's commandstats and keyspace values are written.
func kv(v string) map[string]string {
	out := map[string]string{}
	for _, p := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(p, "=")
		out[k] = val
	}
	return out
}

// do runs one command and renders its reply as in ratelimit_test.go's tables.
func do(t *testing.T, c *redis.Client, args ...any) string {
	t.Helper()
	v, err := c.Do(testutil.Ctx, args...).Result()
	if err != nil && err != redis.Nil {
		return err.Error()
	}
	return render(v)
}

func render(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = render(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case nil:
		return "(nil)"
	}
	return fmt.Sprint(v)
}

func TestMetricsCountTraffic(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			s, base := startWithMetrics(t)
			c := s.Client(t, proto)
			require.NoError(t, c.Do(testutil.Ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
			// Errors the client's own handshake may have caused are not the test's traffic.
			before := scrape(t, base)
			errsBefore := func(code string) float64 {
				v, _ := metricValue(before, "redis_errors_total", "err="+code)
				return v
			}
			steps := []struct {
				args []any
				want string
			}{
				// A sliding_window limiter: 4 units allowed, 3 + 10 denied, 2 keys.
				{[]any{"RATELIMIT.CREATE", "api", 5, 1000}, "OK"},
				{[]any{"RATELIMIT.CHECK", "api", "u1", "COST", 3}, "[1,2,0,5,0]"},
				{[]any{"RATELIMIT.CHECK", "api", "u1", "COST", 3}, "[0,2,1000,5,3]"},
				{[]any{"RATELIMIT.CHECK", "api", "u2"}, "[1,4,0,5,0]"},
				{[]any{"RATELIMIT.CHECK", "api", "u1", "COST", 10}, "[0,2,-1,5,3]"},
				{[]any{"RATELIMIT.PEEK", "api", "u1"}, "[1,2,0,5,3]"},
				// A token_bucket limiter: 2 allowed, 1 denied, 1 key.
				{[]any{"RATELIMIT.CREATE", "tb", 2, 1000, "ALGO", "token_bucket"}, "OK"},
				{[]any{"RATELIMIT.CHECK", "tb", "x"}, "[1,1,0,2,0]"},
				{[]any{"RATELIMIT.CHECK", "tb", "x"}, "[1,0,0,2,1]"},
				{[]any{"RATELIMIT.CHECK", "tb", "x"}, "[0,0,500,2,2]"},
				// Shadow mode: the same denial, let through and counted apart.
				{[]any{"RATELIMIT.UPDATE", "tb", "SHADOW", "on"}, "OK"},
				{[]any{"RATELIMIT.CHECK", "tb", "x", "COST", 2}, "[1,0,1000,2,2]"},
				// GCRA.LIMIT: 2 allowed, 2 denied (one larger than the burst); PEEK decides nothing.
				{[]any{"GCRA.LIMIT", "g", 1000, 2}, "[0,2,1,-1,500]"},
				{[]any{"GCRA.LIMIT", "g", 1000, 2}, "[0,2,0,-1,1000]"},
				{[]any{"GCRA.LIMIT", "g", 1000, 2}, "[1,2,0,500,1000]"},
				{[]any{"GCRA.LIMIT", "g2", 1000, 1, 5}, "[1,1,0,-1,0]"},
				{[]any{"GCRA.PEEK", "g", 1000, 2}, "[1,2,0,500,1000]"},
				// CL.THROTTLE: 3 allowed (quantity 0 included), 1 denied.
				{[]any{"CL.THROTTLE", "c", 1, 1, 1}, "[0,2,1,-1,1]"},
				{[]any{"CL.THROTTLE", "c", 1, 1, 1}, "[0,2,0,-1,2]"},
				{[]any{"CL.THROTTLE", "c", 1, 1, 1}, "[1,2,0,1,2]"},
				{[]any{"CL.THROTTLE", "c", 1, 1, 1, 0}, "[0,2,0,-1,2]"},
				// Plain commands, a failed call, a rejected call and a WRONGTYPE.
				{[]any{"SET", "k", "v"}, "OK"},
				{[]any{"GET", "k"}, "v"},
				{[]any{"GET", "nokey"}, "(nil)"},
				{[]any{"INCR", "k"}, "ERR value is not an integer or out of range"},
				{[]any{"GET"}, "ERR wrong number of arguments for 'get' command"},
				{[]any{"GCRA.LIMIT", "k", 1000, 1}, rlWrongType},
				{[]any{"CONFIG", "SET", "maxmemory", "100mb"}, "OK"},
			}
			for _, st := range steps {
				require.Equal(t, st.want, do(t, c, st.args...), "%v", st.args)
			}
			fams := scrape(t, base)

			requireMetric(t, fams, 1, "redis_up")
			// Named limiters: units, as RATELIMIT.STATS counts them.
			requireMetric(t, fams, 4, "hotkv_ratelimit_allowed_units_total", "limiter=api", "algo=sliding_window")
			requireMetric(t, fams, 13, "hotkv_ratelimit_denied_units_total", "limiter=api")
			requireMetric(t, fams, 2, "hotkv_ratelimit_keys", "limiter=api")
			requireMetric(t, fams, 2, "hotkv_ratelimit_allowed_units_total", "limiter=tb", "algo=token_bucket")
			requireMetric(t, fams, 3, "hotkv_ratelimit_denied_units_total", "limiter=tb")
			requireMetric(t, fams, 2, "hotkv_ratelimit_shadow_denied_units_total", "limiter=tb")
			requireMetric(t, fams, 0, "hotkv_ratelimit_shadow_denied_units_total", "limiter=api")
			requireMetric(t, fams, 1, "hotkv_ratelimit_keys", "limiter=tb")
			requireMetric(t, fams, 2, "hotkv_ratelimit_limiters")
			for _, name := range []string{"api", "tb"} {
				stats, err := c.Do(testutil.Ctx, "RATELIMIT.STATS", name).Result()
				require.NoError(t, err)
				m := statsMap(t, stats)
				requireMetric(t, fams, float64(m["total_allowed"]), "hotkv_ratelimit_allowed_units_total", "limiter="+name)
				requireMetric(t, fams, float64(m["total_denied"]), "hotkv_ratelimit_denied_units_total", "limiter="+name)
				requireMetric(t, fams, float64(m["unique_keys"]), "hotkv_ratelimit_keys", "limiter="+name)
				requireMetric(t, fams, float64(m["total_shadow_denied"]), "hotkv_ratelimit_shadow_denied_units_total", "limiter="+name)
			}
			// GCRA decisions.
			requireMetric(t, fams, 2, "hotkv_gcra_requests_total", "command=gcra.limit", "result=allowed")
			requireMetric(t, fams, 2, "hotkv_gcra_requests_total", "command=gcra.limit", "result=denied")
			requireMetric(t, fams, 3, "hotkv_gcra_requests_total", "command=cl.throttle", "result=allowed")
			requireMetric(t, fams, 1, "hotkv_gcra_requests_total", "command=cl.throttle", "result=denied")

			// Per-command counters, as sent and as INFO commandstats reports them.
			calls := map[string]float64{"set": 1, "get": 2, "incr": 1, "gcra.limit": 5, "gcra.peek": 1,
				"cl.throttle": 4, "ratelimit.check": 8, "ratelimit.create": 2, "ratelimit.peek": 1, "ratelimit.update": 1}
			for cmd, n := range calls {
				requireMetric(t, fams, n, "redis_commands_total", "cmd="+cmd)
				// Every executed call is in the command's latency histogram too.
				requireMetric(t, fams, n, "hotkv_command_duration_seconds", "cmd="+cmd)
			}
			requireMetric(t, fams, 1, "redis_commands_failed_calls_total", "cmd=incr")
			requireMetric(t, fams, 1, "redis_commands_failed_calls_total", "cmd=gcra.limit")
			requireMetric(t, fams, 0, "redis_commands_failed_calls_total", "cmd=set")
			requireMetric(t, fams, 1, "redis_commands_rejected_calls_total", "cmd=get")
			requireMetric(t, fams, 0, "redis_commands_rejected_calls_total", "cmd=incr")
			requireMetric(t, fams, 1, "redis_commands_total", "cmd=config|set")
			requireMetric(t, fams, errsBefore("ERR")+2, "redis_errors_total", "err=ERR")
			requireMetric(t, fams, errsBefore("WRONGTYPE")+1, "redis_errors_total", "err=WRONGTYPE")

			info := infoFields(t, c, "everything")
			for cmd := range calls {
				st, ok := info["cmdstat_"+cmd]
				require.True(t, ok, cmd)
				f := kv(st)
				for field, metric := range map[string]string{"calls": "redis_commands_total",
					"rejected_calls": "redis_commands_rejected_calls_total", "failed_calls": "redis_commands_failed_calls_total"} {
					n, _ := strconv.ParseFloat(f[field], 64)
					requireMetric(t, fams, n, metric, "cmd="+cmd)
				}
				usec, _ := strconv.ParseFloat(f["usec"], 64)
				requireMetric(t, fams, usec/1e6, "redis_commands_duration_seconds_total", "cmd="+cmd)
			}
			for _, code := range []string{"ERR", "WRONGTYPE"} {
				n, _ := strconv.ParseFloat(kv(info["errorstat_"+code])["count"], 64)
				requireMetric(t, fams, n, "redis_errors_total", "err="+code)
			}

			// Keyspace: k, g and c exist (g2 was denied, so never written); g and c expire.
			requireMetric(t, fams, 3, "redis_db_keys", "db=db0")
			requireMetric(t, fams, 2, "redis_db_keys_expiring", "db=db0")
			ks := kv(info["db0"])
			requireMetric(t, fams, mustFloat(t, ks["keys"]), "redis_db_keys", "db=db0")
			requireMetric(t, fams, mustFloat(t, ks["expires"]), "redis_db_keys_expiring", "db=db0")
			for field, metric := range map[string]string{"keyspace_hits": "redis_keyspace_hits_total",
				"keyspace_misses": "redis_keyspace_misses_total", "expired_keys": "redis_expired_keys_total",
				"evicted_keys": "redis_evicted_keys_total", "rejected_connections": "redis_rejected_connections_total",
				"total_connections_received":  "redis_connections_received_total",
				"rdb_changes_since_last_save": "redis_rdb_changes_since_last_save",
				"rdb_last_save_time":          "redis_rdb_last_save_timestamp_seconds", "aof_enabled": "redis_aof_enabled",
				"maxmemory": "redis_memory_max_bytes", "connected_clients": "redis_connected_clients",
				"blocked_clients": "redis_blocked_clients", "loading": "redis_loading_dump_file"} {
				requireMetric(t, fams, mustFloat(t, info[field]), metric)
			}
			requireMetric(t, fams, 100<<20, "redis_memory_max_bytes")
			requireMetric(t, fams, 1, "redis_instance_info", "redis_version="+info["redis_version"],
				"run_id="+info["run_id"], "maxmemory_policy=noeviction", "role=master")
			processed, ok := metricValue(fams, "redis_commands_processed_total")
			require.True(t, ok)
			require.GreaterOrEqual(t, processed, float64(len(steps)))
			mem, ok := metricValue(fams, "redis_memory_used_bytes")
			require.True(t, ok)
			require.Greater(t, mem, 0.0)
			_, ok = metricValue(fams, "go_goroutines")
			require.True(t, ok, "Go runtime collector")
		})
	}
}

// statsMap reads RATELIMIT.STATS's integer fields (a map in RESP3, pairs in RESP2).
func statsMap(t *testing.T, v any) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	set := func(k, val any) {
		if n, ok := val.(int64); ok {
			out[fmt.Sprint(k)] = n
		}
	}
	switch x := v.(type) {
	case map[any]any:
		for k, val := range x {
			set(k, val)
		}
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			set(x[i], x[i+1])
		}
	default:
		t.Fatalf("RATELIMIT.STATS reply %T", v)
	}
	return out
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err, "%q", s)
	return f
}

// TestMetricsReadinessWhileLoading holds a start in the loading state (the loading hook) with
// a real snapshot to load: /healthz says 200, /readyz 503 and /metrics redis_loading_dump_file
// 1; once the load finishes /readyz says 200 and the keys are counted; after shutdown nothing
// listens.
func TestMetricsReadinessWhileLoading(t *testing.T) {
	dir := t.TempDir()
	s1, err := testutil.Launch(t, testutil.Options{Dir: dir})
	require.NoError(t, err)
	c1 := s1.Client(t, 2)
	for i := 0; i < 100; i++ {
		require.NoError(t, c1.Set(testutil.Ctx, "key:"+strconv.Itoa(i), i, 0).Err())
	}
	require.NoError(t, c1.Save(testutil.Ctx).Err())
	s1.Stop(t, command.ShutdownNoSave)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	entered, release := make(chan struct{}), make(chan struct{})
	type started struct {
		s   *testutil.Server
		err error
	}
	done := make(chan started, 1)
	go func() {
		s, err := testutil.Launch(t, testutil.Options{Dir: dir, Setup: func(srv *server.Server) {
			srv.AddMetricsListener(ln)
			srv.SetLoadingHook(func() {
				close(entered)
				<-release
			})
		}})
		done <- started{s, err}
	}()
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never started loading")
	}
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	code, body := get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	code, body = get(t, base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "loading\n", body)
	fams := scrape(t, base)
	requireMetric(t, fams, 1, "redis_loading_dump_file")
	requireMetric(t, fams, 1, "redis_up")

	close(release)
	released = true
	var st started
	select {
	case st = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not finish starting")
	}
	require.NoError(t, st.err)
	code, body = get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
	fams = scrape(t, base)
	requireMetric(t, fams, 0, "redis_loading_dump_file")
	requireMetric(t, fams, 100, "redis_db_keys", "db=db0")

	st.s.Stop(t, command.ShutdownNoSave)
	require.True(t, unreachable(base), "the metrics listener outlived the server")
}

// TestMetricsOffByDefault: without metrics-port nothing listens.
func TestMetricsOffByDefault(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	got, err := c.ConfigGet(testutil.Ctx, "metrics-*").Result()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"metrics-port": "0", "metrics-bind": "127.0.0.1"}, got)
	require.Nil(t, s.MetricsAddr())
}

// freePort returns a loopback port nothing listens on, never one it returned before in this
// test process (procs.FreePort): a cluster's Raft and meta ports, picked at different times,
// must differ.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := procs.FreePort()
	require.NoError(t, err)
	return port
}

// TestMetricsPortConfig: metrics-port at startup, then CONFIG SET moving, refusing and
// closing the listener, as tls-port behaves.
func TestMetricsPortConfig(t *testing.T) {
	p1 := freePort(t)
	s := testutil.StartServer(t, "--metrics-port", strconv.Itoa(p1))
	c := s.Client(t, 2)
	url := func(p int) string { return "http://127.0.0.1:" + strconv.Itoa(p) }
	code, _ := get(t, url(p1)+"/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "127.0.0.1:"+strconv.Itoa(p1), s.MetricsAddr().String())

	p2 := freePort(t)
	require.NoError(t, c.ConfigSet(testutil.Ctx, "metrics-port", strconv.Itoa(p2)).Err())
	code, _ = get(t, url(p2)+"/healthz")
	require.Equal(t, http.StatusOK, code)
	require.True(t, unreachable(url(p1)), "old port still open")

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	require.EqualError(t, c.ConfigSet(testutil.Ctx, "metrics-port", busyPort).Err(),
		"ERR CONFIG SET failed (possibly related to argument 'metrics-port') - Unable to listen on this port. Check server logs.")
	require.Equal(t, strconv.Itoa(p2), c.ConfigGet(testutil.Ctx, "metrics-port").Val()["metrics-port"])
	code, _ = get(t, url(p2)+"/healthz")
	require.Equal(t, http.StatusOK, code)

	require.EqualError(t, c.ConfigSet(testutil.Ctx, "metrics-port", "65536").Err(),
		"ERR CONFIG SET failed (possibly related to argument 'metrics-port') - argument must be between 0 and 65535 inclusive")
	require.EqualError(t, c.ConfigSet(testutil.Ctx, "metrics-bind", "localhost").Err(),
		"ERR CONFIG SET failed (possibly related to argument 'metrics-bind') - Invalid metrics-bind address 'localhost': an IP address, * or ::*")

	// Widening the address on the same port must free the port first.
	require.NoError(t, c.ConfigSet(testutil.Ctx, "metrics-bind", "*").Err())
	code, _ = get(t, url(p2)+"/healthz")
	require.Equal(t, http.StatusOK, code)
	wide := s.MetricsAddr().(*net.TCPAddr)
	require.True(t, wide.IP.IsUnspecified(), wide.String())
	require.Equal(t, p2, wide.Port)

	require.NoError(t, c.ConfigSet(testutil.Ctx, "metrics-port", "0").Err())
	require.True(t, unreachable(url(p2)), "metrics-port 0 left the listener open")
	require.Nil(t, s.MetricsAddr())

	// A port that cannot be bound stops the start, as a busy `port` does.
	_, err = testutil.Launch(t, testutil.Options{Args: []string{"--metrics-port", busyPort}})
	require.ErrorContains(t, err, "metrics")
}

// dashboardPath is the Grafana dashboard shipped in deploy/.
const dashboardPath = "../deploy/grafana/hotkv-dashboard.json"

// promQLWords are the PromQL functions, aggregations and keywords the dashboard may use; every
// other identifier in an expression must be a metric the server exports.
var promQLWords = map[string]bool{
	"sum": true, "avg": true, "min": true, "max": true, "count": true, "topk": true, "bottomk": true,
	"rate": true, "irate": true, "increase": true, "delta": true, "deriv": true, "histogram_quantile": true,
	"clamp_min": true, "clamp_max": true, "time": true, "vector": true, "abs": true, "label_replace": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "avg_over_time": true,
	"max_over_time": true, "min_over_time": true, "sum_over_time": true, "changes": true, "resets": true,
}

var (
	reLabelSet = regexp.MustCompile(`\{[^}]*\}`)
	reRange    = regexp.MustCompile(`\[[^\]]*\]`)
	reGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	reString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	reVar      = regexp.MustCompile(`\$\{?\w+\}?`)
	reIdent    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	reNumber   = regexp.MustCompile(`\b\d+(\.\d+)?([eE][+-]?\d+)?\b`)
)

// promQLMetrics returns the metric names an expression reads.
func promQLMetrics(expr string) []string {
	e := reString.ReplaceAllString(expr, " ")
	e = reLabelSet.ReplaceAllString(e, " ")
	e = reRange.ReplaceAllString(e, " ")
	e = reGrouping.ReplaceAllString(e, " ")
	e = reVar.ReplaceAllString(e, " ")
	e = reNumber.ReplaceAllString(e, " ")
	var out []string
	for _, id := range reIdent.FindAllString(e, -1) {
		if !promQLWords[id] {
			out = append(out, id)
		}
	}
	return out
}

// collectExprs walks the dashboard JSON and returns every target's "expr" and the metric
// selector of every label_values() variable query, with where it was found.
func collectExprs(v any, path string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && k == "expr" {
				out[path+"."+k] = s
			}
			// A query variable's label_values(metric{...}, label) reads metric.
			if s, ok := val.(string); ok && (k == "query" || k == "definition") && strings.HasPrefix(s, "label_values(") {
				arg := strings.TrimSuffix(strings.TrimPrefix(s, "label_values("), ")")
				if i := strings.LastIndex(arg, ","); i >= 0 {
					arg = arg[:i]
				}
				out[path+"."+k] = arg
			}
			collectExprs(val, path+"."+k, out)
		}
	case []any:
		for i, val := range x {
			collectExprs(val, path+"["+strconv.Itoa(i)+"]", out)
		}
	}
}

// TestGrafanaDashboardUsesExportedMetrics parses the dashboard and checks that every PromQL
// expression reads only metrics a running server exports (scraped after traffic that makes
// every family appear), and that the dashboard covers the panels it promises.
func TestGrafanaDashboardUsesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(dashboardPath)
	require.NoError(t, err)
	var dash map[string]any
	require.NoError(t, json.Unmarshal(raw, &dash))

	exported := exportedMetrics(t)

	exprs := map[string]string{}
	collectExprs(dash, "", exprs)
	require.NotEmpty(t, exprs)
	var where []string
	for w := range exprs {
		where = append(where, w)
	}
	sort.Strings(where)
	used := map[string]bool{}
	for _, w := range where {
		names := promQLMetrics(exprs[w])
		require.NotEmptyf(t, names, "%s: %q reads no metric", w, exprs[w])
		for _, n := range names {
			require.Truef(t, exported[n], "%s: %q reads %s, which the server does not export", w, exprs[w], n)
			used[n] = true
		}
	}
	for _, n := range []string{"redis_commands_total", "redis_commands_duration_seconds_total", "redis_memory_used_bytes",
		"redis_memory_max_bytes", "redis_connected_clients", "redis_keyspace_hits_total", "redis_keyspace_misses_total",
		"redis_evicted_keys_total", "redis_expired_keys_total", "hotkv_ratelimit_allowed_units_total",
		"hotkv_ratelimit_denied_units_total", "hotkv_gcra_requests_total", "hotkv_command_duration_seconds_bucket"} {
		require.Truef(t, used[n], "the dashboard has no panel reading %s", n)
	}

	// A Prometheus datasource variable, used by every panel.
	tmpl, _ := dash["templating"].(map[string]any)
	list, _ := tmpl["list"].([]any)
	var dsVar string
	for _, v := range list {
		m, _ := v.(map[string]any)
		if m["type"] == "datasource" && m["query"] == "prometheus" {
			dsVar = fmt.Sprint(m["name"])
		}
	}
	require.NotEmpty(t, dsVar, "no Prometheus datasource variable")
	panels, _ := dash["panels"].([]any)
	require.NotEmpty(t, panels)
	for _, p := range panels {
		m, _ := p.(map[string]any)
		if m["type"] == "row" {
			continue
		}
		ds, _ := m["datasource"].(map[string]any)
		require.Equalf(t, "${"+dsVar+"}", ds["uid"], "panel %q does not use the datasource variable", m["title"])
	}
}

// TestMetricsCountTransactionsAndScripts: decisions made inside MULTI/EXEC and scripts are
// counted like any other, and a limiter whose name is not UTF-8 is exported (Go-quoted)
// without breaking the scrape.
func TestMetricsCountTransactionsAndScripts(t *testing.T) {
	s, base := startWithMetrics(t)
	c := s.Client(t, 3)
	require.NoError(t, c.Do(testutil.Ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
	cmds, err := c.TxPipelined(testutil.Ctx, func(p redis.Pipeliner) error {
		p.Do(testutil.Ctx, "GCRA.LIMIT", "t", 1000, 1)
		p.Do(testutil.Ctx, "GCRA.LIMIT", "t", 1000, 1)
		p.Do(testutil.Ctx, "CL.THROTTLE", "u", 0, 1, 1)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "[0,1,0,-1,1000]", render(cmds[0].(*redis.Cmd).Val()))
	require.Equal(t, "[1,1,0,1000,1000]", render(cmds[1].(*redis.Cmd).Val()))
	require.Equal(t, "[0,1,0,-1,1]", render(cmds[2].(*redis.Cmd).Val()))
	require.Equal(t, "[1,1,0,1,1]", do(t, c, "EVAL", "return redis.call('CL.THROTTLE', KEYS[1], 0, 1, 1)", 1, "u"))
	require.Equal(t, "OK", do(t, c, "RATELIMIT.CREATE", "\xff\xfe", 1, 1000))
	require.Equal(t, "[1,0,0,1,0]", do(t, c, "EVAL", "return redis.call('RATELIMIT.CHECK', KEYS[1], 'k')", 1, "\xff\xfe"))
	require.Equal(t, "[0,0,1000,1,1]", do(t, c, "RATELIMIT.CHECK", "\xff\xfe", "k"))

	fams := scrape(t, base)
	requireMetric(t, fams, 1, "hotkv_gcra_requests_total", "command=gcra.limit", "result=allowed")
	requireMetric(t, fams, 1, "hotkv_gcra_requests_total", "command=gcra.limit", "result=denied")
	requireMetric(t, fams, 1, "hotkv_gcra_requests_total", "command=cl.throttle", "result=allowed")
	requireMetric(t, fams, 1, "hotkv_gcra_requests_total", "command=cl.throttle", "result=denied")
	requireMetric(t, fams, 1, "hotkv_ratelimit_allowed_units_total", `limiter="\xff\xfe"`)
	requireMetric(t, fams, 1, "hotkv_ratelimit_denied_units_total", `limiter="\xff\xfe"`)
	requireMetric(t, fams, 1, "hotkv_ratelimit_keys", `limiter="\xff\xfe"`)

	// FLUSHALL drops limiters: their series go with them.
	require.Equal(t, "OK", do(t, c, "FLUSHALL"))
	fams = scrape(t, base)
	requireMetric(t, fams, 0, "hotkv_ratelimit_limiters")
	_, ok := metricValue(fams, "hotkv_ratelimit_allowed_units_total")
	require.False(t, ok)
}

// exportedMetrics starts a server, sends traffic that makes every family of the collector
// appear (a limiter, GCRA decisions, keys, an error) and returns the metric names a scrape
// holds, histogram and summary series names included.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	s, base := startWithMetrics(t)
	c := s.Client(t, 2)
	for _, args := range [][]any{
		{"RATELIMIT.CREATE", "api", 1, 1000}, {"RATELIMIT.CHECK", "api", "u"}, {"RATELIMIT.CHECK", "api", "u"},
		{"GCRA.LIMIT", "g", 1000, 1}, {"CL.THROTTLE", "c", 0, 1, 1}, {"SET", "k", "v", "EX", 100}, {"GET", "k"},
		{"INCR", "k"},
	} {
		_ = c.Do(testutil.Ctx, args...).Err()
	}
	exported := map[string]bool{}
	for name, f := range scrape(t, base) {
		exported[name] = true
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM:
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[name+suffix] = true
			}
		case dto.MetricType_SUMMARY:
			exported[name+"_sum"], exported[name+"_count"] = true, true
		}
	}
	return exported
}

// TestMonitoringDocsListEveryMetric: docs/operations.md's Monitoring section names every
// redis_ and hotkv_ metric the server exports.
func TestMonitoringDocsListEveryMetric(t *testing.T) {
	raw, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	doc := string(raw)
	i := strings.Index(doc, "## Monitoring")
	require.GreaterOrEqual(t, i, 0, "no Monitoring section")
	doc = doc[i:]
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`((?:redis|hotkv)_[a-z_]+)").FindAllStringSubmatch(doc, -1) {
		documented[m[1]] = true
	}
	for name := range exportedMetrics(t) {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") || strings.HasPrefix(name, "promhttp_") {
			continue
		}
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && documented[b] {
				base = b // a histogram's series are documented with the histogram
			}
		}
		require.Truef(t, documented[base], "docs/operations.md does not document %s", name)
	}
}
