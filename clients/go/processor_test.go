package hotkv_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
)

// Every go-redis executor is a Processor, so the typed commands work on all of them; this is
// checked by the compiler. Cluster mode does not exist in the server yet: the cluster tests in
// this package drive a real *redis.ClusterClient over the single test server (see
// singleNodeSlots), and multi-node tests come with cluster mode.
var (
	_ hotkv.Processor = (*redis.Client)(nil)
	_ hotkv.Processor = (*redis.ClusterClient)(nil)
	_ hotkv.Processor = (*redis.Ring)(nil)
	_ hotkv.Processor = (*redis.Tx)(nil)
	_ hotkv.Processor = (*redis.Conn)(nil)
	_ hotkv.Processor = redis.Pipeliner(nil)
	_ hotkv.Processor = redis.UniversalClient(nil)
	_ hotkv.Processor = (*hotkv.Client)(nil)
	_ hotkv.Processor = (*hotkv.ClusterClient)(nil)
)

// TestConnAndRing runs the commands on executors forEachEnv does not cover: a dedicated
// *redis.Conn and a *redis.Ring. (*redis.Tx needs WATCH, which the server does not have yet;
// the compiler checks it above.)
func TestConnAndRing(t *testing.T) {
	reset(t, newAdmin(t))
	c := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer c.Close()

	conn := c.Conn()
	defer conn.Close()
	if got := gcraFive(hotkv.Wrap(conn).GCRALimit(ctx, "w", time.Minute, 10, 1).Val()); got != [5]int64{0, 10, 9, -1, 6000} {
		t.Fatalf("on Conn = %v", got)
	}

	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"only": serverAddr}})
	defer ring.Close()
	if got := gcraFive(hotkv.Wrap(ring).GCRALimit(ctx, "w", time.Minute, 10, 1).Val()); got != [5]int64{0, 10, 8, -1, 12000} {
		t.Fatalf("on Ring = %v", got)
	}
}
