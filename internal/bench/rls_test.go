package bench

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/server"
	"github.com/hotkv/hotkv/internal/testutil"
)

// TestRLSBenchSmoke runs hotkv-bench rls's measurement briefly against an in-process service.
func TestRLSBenchSmoke(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "ratelimit.yaml")
	if err := os.WriteFile(conf, []byte(rlsBenchConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := testutil.Launch(t, testutil.Options{Args: []string{"--rls-config", conf}, Setup: func(srv *server.Server) { srv.AddRLSListener(ln) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, algo := range []string{"gcra", "sliding", "fixed"} {
		r, err := RunRLS(context.Background(), RLSConfig{Addr: s.RLSAddr().String(), Algorithm: algo, Conns: 2, Callers: 4, Keys: 100,
			Duration: 200 * time.Millisecond})
		if err != nil || r.Calls == 0 || r.Errors != 0 || r.RPS <= 0 || r.P50 <= 0 {
			t.Fatalf("%s: %+v %v", algo, r, err)
		}
	}
}

// The report's section lists every run; an empty result adds nothing.
func TestRLSMarkdown(t *testing.T) {
	if (*RLSResults)(nil).Markdown() != "" {
		t.Fatal("a nil result wrote a section")
	}
	r := &RLSResults{Keys: 10, Runs: []RLSResult{{Algorithm: "gcra", Conns: 4, Callers: 64, RPS: 13600, P50: time.Millisecond}, {Algorithm: "fixed", Conns: 1, Callers: 1, RPS: 6100}}}
	md := r.Markdown()
	for _, want := range []string{"## Envoy rate limit service", "| gcra | 4 | 64 | **14k** | 1.000 ms", "| fixed | 1 | 1 |"} {
		if !strings.Contains(md, want) {
			t.Fatalf("section lacks %q:\n%s", want, md)
		}
	}
}
