package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/testutil"
)

// restartThroughEachWay runs fill on a fresh server with the clock at T0, takes state, restarts
// the server from what it persisted, and requires the same state back, three ways: a SAVE, a
// BGSAVE (values copied shard by shard under their locks), and the append-only log alone
// (every write replayed from its journaled effect). check, when set, inspects the state first.
func restartThroughEachWay(t *testing.T, fill func(t *testing.T, c *redis.Client),
	state func(t *testing.T, c *redis.Client) []string, check func(t *testing.T, c *redis.Client, before []string)) {
	for _, mode := range []string{"SAVE", "BGSAVE", "AOF"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--save", ""}
			if mode == "AOF" {
				args = []string{"--appendonly", "yes", "--appendfsync", "always"}
			}
			s, err := testutil.Launch(t, testutil.Options{Dir: dir, ClockMs: testutil.T0, Args: args})
			require.NoError(t, err)
			c := s.Client(t, 2)
			fill(t, c)
			before := state(t, c)
			if check != nil {
				check(t, c, before)
			}
			switch mode {
			case "SAVE":
				require.NoError(t, c.Save(ctx).Err())
			case "BGSAVE":
				require.NoError(t, c.BgSave(ctx).Err())
				require.Eventually(t, func() bool {
					return strings.Contains(c.Info(ctx, "persistence").Val(), "rdb_bgsave_in_progress:0")
				}, 10*time.Second, 10*time.Millisecond)
			}
			s.Stop(t, command.ShutdownNoSave)
			s2, err := testutil.Launch(t, testutil.Options{Dir: dir, ClockMs: testutil.T0, Args: args})
			require.NoError(t, err)
			require.Equal(t, before, state(t, s2.Client(t, 2)))
		})
	}
}
