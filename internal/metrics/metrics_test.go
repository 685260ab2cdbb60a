package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// fakeSource serves a fixed Snapshot and readiness.
type fakeSource struct {
	snap   Snapshot
	ready  bool
	reason string
}

func (f *fakeSource) MetricsSnapshot() *Snapshot { s := f.snap; return &s }
func (f *fakeSource) Ready() (bool, string)      { return f.ready, f.reason }

func serve(t *testing.T, src Source, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler(src).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

func families(t *testing.T, src Source) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := serve(t, src, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, body)
	}
	return fams
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestReadyz(t *testing.T) {
	src := &fakeSource{reason: "loading"}
	if code, body := serve(t, src, "/readyz"); code != http.StatusServiceUnavailable || body != "loading\n" {
		t.Fatalf("not ready: %d %q", code, body)
	}
	if code, body := serve(t, src, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("healthz: %d %q", code, body)
	}
	src.ready = true
	if code, body := serve(t, src, "/readyz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("ready: %d %q", code, body)
	}
}

// TestCommandLatencyHistogram: a CommandStats with Latency set is exported as the
// hotkv_command_duration_seconds histogram, the hook the server fills per command.
func TestCommandLatencyHistogram(t *testing.T) {
	src := &fakeSource{ready: true}
	src.snap.Commands = []CommandStats{
		{Name: "get", Calls: 10, Usec: 50, Latency: &Histogram{Count: 10, SumSeconds: 0.00005,
			Buckets: map[float64]uint64{0.000001: 2, 0.00001: 9, 0.0001: 10}}},
		{Name: "set", Calls: 1, Usec: 3},
	}
	fams := families(t, src)
	h := fams["hotkv_command_duration_seconds"]
	if h == nil || h.GetType() != dto.MetricType_HISTOGRAM || len(h.GetMetric()) != 1 {
		t.Fatalf("histogram family: %v", h)
	}
	m := h.GetMetric()[0]
	if labelsOf(m)["cmd"] != "get" || m.GetHistogram().GetSampleCount() != 10 || len(m.GetHistogram().GetBucket()) != 4 { // +Inf added
		t.Fatalf("histogram: %v", m)
	}
	if got := m.GetHistogram().GetBucket()[1].GetCumulativeCount(); got != 9 {
		t.Fatalf("bucket 10us: %d", got)
	}
	if n := len(fams["redis_commands_total"].GetMetric()); n != 2 {
		t.Fatalf("redis_commands_total series: %d", n)
	}
}

// TestBinaryLabels: limiter names and error codes are client bytes; invalid UTF-8 must not
// break the scrape (or the process), and distinct names stay distinct series.
func TestBinaryLabels(t *testing.T) {
	src := &fakeSource{ready: true}
	src.snap.Limiters = []LimiterStats{
		{Name: "api", Algo: "sliding_window", Allowed: 3, Denied: 1, Keys: 2},
		{Name: "\xff\xfe", Algo: "token_bucket", Allowed: 1},
		{Name: "\xff\xfd", Algo: "token_bucket", Allowed: 2},
	}
	src.snap.Errors = []ErrorStats{{Code: "ERR", Count: 2}, {Code: "\xc3", Count: 1}}
	fams := families(t, src)
	got := map[string]float64{}
	for _, m := range fams["hotkv_ratelimit_allowed_units_total"].GetMetric() {
		got[labelsOf(m)["limiter"]] = m.GetCounter().GetValue()
	}
	want := map[string]float64{"api": 3, `"\xff\xfe"`: 1, `"\xff\xfd"`: 2}
	if len(got) != len(want) {
		t.Fatalf("limiters: %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("limiter %s: %v (all: %v)", k, got[k], got)
		}
	}
	if n := len(fams["redis_errors_total"].GetMetric()); n != 2 {
		t.Fatalf("errors: %d series", n)
	}
	if v := fams["hotkv_ratelimit_limiters"].GetMetric()[0].GetGauge().GetValue(); v != 3 {
		t.Fatalf("limiters gauge: %v", v)
	}
}
