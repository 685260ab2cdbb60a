package bench

import (
	"context"
	"net"
	"os"
	"path/filepath"
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
