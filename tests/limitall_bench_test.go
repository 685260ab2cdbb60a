package tests

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/testutil"
)

// BenchmarkTwoLimits compares the two ways to hold a request to a per-minute and a per-second
// limit over one connection: one GCRA.LIMITALL (all-or-nothing), and two GCRA.LIMIT round
// trips (the pattern GCRA.LIMITALL replaces; not all-or-nothing). The issue asks the first to
// cost less than the second; run with `go test ./tests/ -run '^$' -bench TwoLimits`.
// docs/ratelimit.md reports the figures.
func BenchmarkTwoLimits(b *testing.B) {
	s := testutil.StartServer(b)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
	b.Cleanup(func() { _ = c.Close() })
	keys := func(i int) (string, string) {
		tag := "{rl:" + strconv.Itoa(i%100000) + "}"
		return tag + ":m", tag + ":s"
	}
	b.Run("limitall", func(b *testing.B) {
		for i := range b.N {
			m, sec := keys(i)
			if err := c.Do(ctx, "GCRA.LIMITALL", 2, m, 60000, 1000000, sec, 1000, 1000000).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("two-round-trips", func(b *testing.B) {
		for i := range b.N {
			m, sec := keys(i)
			if err := c.Do(ctx, "GCRA.LIMIT", m, 60000, 1000000).Err(); err != nil {
				b.Fatal(err)
			}
			if err := c.Do(ctx, "GCRA.LIMIT", sec, 1000, 1000000).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
