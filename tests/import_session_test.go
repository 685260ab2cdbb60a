package tests

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestImportStreamSession: on the target of a slot move, only the latest import (CLUSTERX
// IMPORTING, which clears the range) may write the range. A source leader deposed mid-copy
// can keep streaming on its connection while its successor's copy, which cleared the target
// again, streams too: the old stream would overwrite the new copy's keys, or, once the move
// is done, keys that clients changed since. The source's own copy is held off (its
// masterauth is wrong, so the target refuses it) while the test streams on connections of
// its own, then let in to finish the move.
func TestImportStreamSession(t *testing.T) {
	ctx := context.Background()
	sc := newShardedCluster(t, 2, 1, true) // s1: 0-8191, s2: 8192-16383
	src, dst := sc.shards[0][0], sc.shards[1][0]
	const key = "{user:2}:name" // slot 6777, in the moved range 4000-8191
	require.NoError(t, src.c.Set(ctx, key, "ada", 0).Err())
	payload, err := src.c.Dump(ctx, key).Result()
	require.NoError(t, err)

	const pw = "s3cret"
	require.NoError(t, dst.c.ConfigSet(ctx, "requirepass", pw).Err())
	require.NoError(t, src.c.ConfigSet(ctx, "requirepass", pw).Err())
	require.NoError(t, src.c.ConfigSet(ctx, "masterauth", "wrong").Err())
	authed := func(n *raftNode) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n.srv.Addr, Password: pw, Protocol: 2, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	srcC, dstC := authed(src), authed(dst)
	// One connection each: the import is a property of the connection.
	stream := func() *redis.Conn {
		c := dstC.Conn()
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	x, y, z := stream(), stream(), stream()

	require.NoError(t, srcC.Do(ctx, "CLUSTERX", "MIGRATE", 4000, 8191, "s2").Err())
	var mig uint64
	waitUntil(t, "the move in the target's map", 10*time.Second, func() bool {
		b, err := dstC.Do(ctx, "CLUSTERX", "MAP").Text()
		var m struct {
			Migrations []struct {
				ID uint64 `json:"id"`
			} `json:"migrations"`
		}
		if err != nil || json.Unmarshal([]byte(b), &m) != nil || len(m.Migrations) != 1 {
			return false
		}
		mig = m.Migrations[0].ID
		return true
	})
	restore := func(c *redis.Conn) error { return c.Do(ctx, "RESTORE", key, 0, payload, "REPLACE").Err() }

	sx, err := x.Do(ctx, "CLUSTERX", "IMPORTING", mig).Int64()
	require.NoError(t, err)
	require.Positive(t, sx)
	require.NoError(t, restore(x), "the latest import writes the range")
	sy, err := y.Do(ctx, "CLUSTERX", "IMPORTING", mig).Int64()
	require.NoError(t, err)
	require.NotEqual(t, sx, sy)
	require.ErrorContains(t, restore(x), "TRYAGAIN this import stream is no longer the slot move's latest")
	require.ErrorContains(t, x.Do(ctx, "CLUSTERX", "IMPORTING", mig, "KEEP", sx).Err(), "replaced by a newer copy")
	// KEEP continues the latest import on another connection (the tail of a pre-copied move).
	require.Equal(t, int64(0), z.Do(ctx, "CLUSTERX", "IMPORTING", mig, "KEEP", sy).Val())
	require.NoError(t, restore(z))
	require.NoError(t, restore(y))
	require.ErrorContains(t, z.Do(ctx, "CLUSTERX", "IMPORTING", mig, "KEEP").Err(), "ERR syntax error")

	// The source's copy gets in: its import replaces the test's, and it finishes the move.
	require.NoError(t, srcC.ConfigSet(ctx, "masterauth", pw).Err())
	waitUntil(t, "the move to finish", 30*time.Second, func() bool {
		v, err := dstC.Get(ctx, key).Result()
		return err == nil && v == "ada"
	})
	require.NoError(t, dstC.Set(ctx, key, "bob", 0).Err())
	require.ErrorContains(t, restore(y), "TRYAGAIN this import stream is no longer the slot move's latest")
	require.ErrorContains(t, restore(z), "TRYAGAIN this import stream is no longer the slot move's latest")
	require.Equal(t, "bob", dstC.Get(ctx, key).Val(), "a stale stream changed a key of the moved range")
}
