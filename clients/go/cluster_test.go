package hotkv_test

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
	"github.com/hotkv/hotkv/clients/go/internal/testserver"
)

// TestShardedCluster runs the client's ClusterClient against a real sharded cluster of three
// shards (scripts/cluster-demo.sh): every rate-limit command reaches the shard of its key (or
// of the limiter's name), bursts hold per key wherever the key lives, and a multi-key
// GCRA.RESET works within a hash tag and is refused across slots.
func TestShardedCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("scripts/cluster-demo.sh needs redis-cli")
	}
	cl, err := testserver.StartCluster(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	ctx := context.Background()
	// ClusterStateReloadInterval: go-redis's default 60 s would keep a dead leader in the
	// client's slot map after a failover (docs/cluster.md, "Client settings").
	c := hotkv.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs, ClusterStateReloadInterval: time.Second})
	defer c.Close()

	shardsHit := map[string]bool{}
	for i := range 30 {
		key := "rl:user:" + strconv.Itoa(i)
		for n := range 4 {
			r, err := c.GCRALimit(ctx, key, time.Hour, 3, 1).Result()
			if err != nil {
				t.Fatal(err)
			}
			if r.Denied != (n == 3) {
				t.Fatalf("%s request %d: denied=%v", key, n+1, r.Denied)
			}
		}
		slot := c.ClusterKeySlot(ctx, key).Val()
		shardsHit[strconv.FormatInt(slot*3/16384, 10)] = true
	}
	if len(shardsHit) != 3 {
		t.Fatalf("30 keys reached %d shards", len(shardsHit))
	}
	for _, name := range []string{"api", "search", "upload"} {
		if err := c.RateLimitCreate(ctx, name, 2, time.Minute, nil).Err(); err != nil {
			t.Fatal(err)
		}
		for n := range 3 {
			r, err := c.RateLimitCheck(ctx, name, "k", 1).Result()
			if err != nil {
				t.Fatal(err)
			}
			if r.Allowed != (n < 2) {
				t.Fatalf("%s check %d: allowed=%v", name, n+1, r.Allowed)
			}
		}
	}
	if n, err := c.GCRAReset(ctx, "rl:{user:1}:a", "rl:{user:1}:b").Result(); err != nil || n != 0 {
		t.Fatalf("GCRA.RESET in one slot: %d, %v", n, err)
	}
	if err := c.GCRAReset(ctx, "rl:user:1", "rl:user:2").Err(); err == nil {
		t.Fatal("GCRA.RESET across slots was not refused")
	}
}
