package tests

import (
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

func TestMultiExecBasics(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		r := s.Dial(t)
		if c.Options().Protocol == 3 {
			r.Do("HELLO", "3")
		}
		require.Equal(t, "-ERR EXEC without MULTI\r\n", r.Do("EXEC"))
		require.Equal(t, "-ERR DISCARD without MULTI\r\n", r.Do("DISCARD"))
		require.Equal(t, "+OK\r\n", r.Do("MULTI"))
		require.Equal(t, "-ERR MULTI calls can not be nested\r\n", r.Do("MULTI"))
		require.Equal(t, "+QUEUED\r\n", r.Do("SET", "a", "1"))
		require.Equal(t, "+QUEUED\r\n", r.Do("INCR", "a"))
		require.Equal(t, "+QUEUED\r\n", r.Do("GET", "a"))
		require.Equal(t, "+QUEUED\r\n", r.Do("SELECT", "1"))
		require.Equal(t, "+QUEUED\r\n", r.Do("SET", "b", "2"))
		require.Equal(t, "+QUEUED\r\n", r.Do("GETRANGE", "b", "x", "1")) // fails at run time only
		require.Equal(t, "*6\r\n+OK\r\n:2\r\n$1\r\n2\r\n+OK\r\n+OK\r\n-ERR value is not an integer or out of range\r\n", r.Do("EXEC"))
		require.Equal(t, "$1\r\n2\r\n", r.Do("GET", "b"), "SELECT inside EXEC stays in effect")

		// A queue-time error aborts the whole transaction.
		require.Equal(t, "+OK\r\n", r.Do("MULTI"))
		require.Equal(t, "+QUEUED\r\n", r.Do("SET", "x", "1"))
		require.Equal(t, "-ERR wrong number of arguments for 'get' command\r\n", r.Do("GET"))
		require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", r.Do("EXEC"))
		require.Equal(t, ":0\r\n", r.Do("EXISTS", "x"))

		require.Equal(t, "+OK\r\n", r.Do("MULTI"))
		require.Equal(t, "+QUEUED\r\n", r.Do("SET", "x", "1"))
		require.Equal(t, "+OK\r\n", r.Do("DISCARD"))
		require.Equal(t, ":0\r\n", r.Do("EXISTS", "x"))

		// Commands that walk the keyspace or read shard statistics run inside EXEC too
		// (every lock is held then: they must not take them again).
		require.Equal(t, "+OK\r\n", r.Do("MULTI"))
		for _, cmd := range [][]string{{"KEYS", "*"}, {"DBSIZE"}, {"INFO", "keyspace"}, {"CONFIG", "RESETSTAT"}, {"SCAN", "0"}, {"FLUSHDB"}, {"RANDOMKEY"}} {
			require.Equal(t, "+QUEUED\r\n", r.Do(cmd...))
		}
		reply := r.Do("EXEC")
		require.Contains(t, reply, "*7\r\n")
	})
}

// TestMultiExecFreezesTime is the spec's V28: all commands of one EXEC share one time sample,
// even with the wall clock running.
func TestMultiExecFreezesTime(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "RESET").Err())
		for i := 0; i < 20; i++ {
			key := "k" + time.Now().Format("150405.000000")
			cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Do(ctx, "GCRA.LIMIT", key, 1000, 1)
				p.Do(ctx, "DEBUG", "SLEEP", "0.002") // the wall clock moves inside EXEC
				p.Do(ctx, "GCRA.LIMIT", key, 1000, 1)
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, []any{int64(0), int64(1), int64(0), int64(-1), int64(1000)}, cmds[0].(*redis.Cmd).Val())
			require.Equal(t, []any{int64(1), int64(1), int64(0), int64(1000), int64(1000)}, cmds[2].(*redis.Cmd).Val())
		}
	})
}

// TestMultiExecIsAtomic moves units between two keys from many clients at once; a reader
// using MULTI must never see the sum change.
func TestMultiExecIsAtomic(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.MSet(ctx, "from", 1000000, "to", 0).Err())
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cw := s.Client(t, 2)
			for i := 0; i < 200; i++ {
				_, err := cw.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.DecrBy(ctx, "from", 3)
					p.IncrBy(ctx, "to", 3)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Get(ctx, "from")
			p.Get(ctx, "to")
			return nil
		})
		require.NoError(t, err)
		from, _ := cmds[0].(*redis.StringCmd).Int()
		to, _ := cmds[1].(*redis.StringCmd).Int()
		require.Equal(t, 1000000, from+to, "a transaction was seen half done")
		select {
		case <-done:
			require.Equal(t, "2400", c.Get(ctx, "to").Val())
			return
		default:
		}
	}
}
