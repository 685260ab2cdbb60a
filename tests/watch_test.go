package tests

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// nullArray is EXEC's reply when a watched key changed, per protocol.
func nullArray(proto int) string {
	if proto == 3 {
		return "_\r\n"
	}
	return "*-1\r\n"
}

func TestWatch(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		proto := c.Options().Protocol
		r, other := s.Dial(t), s.Dial(t)
		if proto == 3 {
			r.Do("HELLO", "3")
		}
		exec := func(want string, cmds ...[]string) {
			t.Helper()
			require.Equal(t, "+OK\r\n", r.Do("MULTI"))
			for _, cmd := range cmds {
				require.Equal(t, "+QUEUED\r\n", r.Do(cmd...))
			}
			require.Equal(t, want, r.Do("EXEC"))
		}
		ping := []string{"PING"}

		// Untouched: EXEC runs. Touched by another client: EXEC fails with a null reply.
		r.Do("SET", "x", "30")
		require.Equal(t, "+OK\r\n", r.Do("WATCH", "x"))
		exec("*1\r\n+PONG\r\n", ping)
		require.Equal(t, "+OK\r\n", r.Do("WATCH", "x"))
		other.Do("INCR", "x")
		exec(nullArray(proto), ping)
		// EXEC unwatched everything, so the next transaction runs.
		other.Do("INCR", "x")
		exec("*1\r\n+PONG\r\n", ping)

		// The client's own write counts too; a failed write (no change) does not.
		r.Do("WATCH", "x")
		r.Do("SET", "x", "1")
		exec(nullArray(proto), ping)
		r.Do("WATCH", "x")
		r.Do("SETNX", "x", "2")
		r.Do("GET", "x")
		exec("*1\r\n+PONG\r\n", ping)

		// Keys declared read-only by the command (SINTERSTORE's sources) are not touched.
		r.Do("SADD", "s1", "a")
		r.Do("WATCH", "s1")
		other.Do("SINTERSTORE", "dst", "s1")
		exec("*1\r\n+PONG\r\n", ping)
		r.Do("WATCH", "dst")
		other.Do("SINTERSTORE", "dst", "s1")
		exec(nullArray(proto), ping)

		// UNWATCH and DISCARD forget the keys.
		r.Do("WATCH", "x")
		require.Equal(t, "+OK\r\n", r.Do("UNWATCH"))
		other.Do("INCR", "x")
		exec("*1\r\n+PONG\r\n", ping)
		r.Do("WATCH", "x")
		r.Do("MULTI")
		r.Do("DISCARD")
		other.Do("INCR", "x")
		exec("*1\r\n+PONG\r\n", ping)

		// WATCH inside MULTI is refused (and does not abort the transaction).
		r.Do("MULTI")
		require.Equal(t, "-ERR WATCH inside MULTI is not allowed\r\n", r.Do("WATCH", "x"))
		require.Equal(t, "*0\r\n", r.Do("EXEC"))

		// A watched key that does not exist yet: creating it is a change.
		r.Do("WATCH", "fresh")
		other.Do("LPUSH", "fresh", "a")
		exec(nullArray(proto), ping)

		// Keys are watched in their database: the same name elsewhere is another key.
		r.Do("WATCH", "x")
		other.Do("SELECT", "1")
		other.Do("SET", "x", "elsewhere")
		exec("*1\r\n+PONG\r\n", ping)
		r.Do("SELECT", "1")
		r.Do("WATCH", "x")
		r.Do("SELECT", "0")
		other.Do("SET", "x", "again")
		exec(nullArray(proto), ping)
		other.Do("SELECT", "0")

		// A queue-time error reports EXECABORT even when a watched key changed.
		r.Do("WATCH", "x")
		other.Do("INCR", "x")
		r.Do("MULTI")
		r.Do("NOSUCHCOMMAND")
		require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", r.Do("EXEC"))
		exec("*1\r\n+PONG\r\n", ping)

		// RESET forgets watched keys.
		r.Do("WATCH", "x")
		require.Equal(t, "+RESET\r\n", r.Do("RESET"))
		if proto == 3 {
			r.Do("HELLO", "3")
		}
		other.Do("INCR", "x")
		exec("*1\r\n+PONG\r\n", ping)
	})
}

// TestWatchFlushSwapMove covers the commands that change keys without naming them (FLUSHDB,
// FLUSHALL, SWAPDB) or in another database (MOVE, COPY ... DB).
func TestWatchFlushSwapMove(t *testing.T) {
	s := testutil.StartServer(t)
	r, other := s.Dial(t), s.Dial(t)
	exec := func(want string) {
		t.Helper()
		r.Do("MULTI")
		r.Do("PING")
		require.Equal(t, want, r.Do("EXEC"))
	}
	const ok, fail = "*1\r\n+PONG\r\n", "*-1\r\n"

	r.Do("SET", "x", "1")
	r.Do("WATCH", "x")
	other.Do("FLUSHDB")
	exec(fail)
	// FLUSHDB does not touch keys that did not exist.
	r.Do("WATCH", "x")
	other.Do("SET", "y", "1")
	other.Do("FLUSHDB")
	exec(ok)
	// FLUSHALL does not touch a watched key of another database unless it existed.
	r.Do("SET", "x", "1")
	r.Do("WATCH", "x")
	other.Do("SELECT", "1")
	other.Do("SET", "z", "1")
	other.Do("FLUSHDB")
	exec(ok)
	r.Do("WATCH", "x")
	other.Do("FLUSHALL")
	exec(fail)

	// SWAPDB touches a watched key that exists on either side.
	other.Do("SELECT", "0")
	r.Do("SET", "x", "1")
	r.Do("WATCH", "x")
	other.Do("SWAPDB", "0", "1")
	exec(fail)
	r.Do("WATCH", "x") // x is now absent from db 0, present in db 1
	other.Do("SWAPDB", "0", "1")
	exec(fail)
	r.Do("WATCH", "nokey")
	other.Do("SWAPDB", "0", "1")
	exec(ok)
	other.Do("SWAPDB", "0", "1")

	// MOVE touches both databases; COPY ... DB touches its destination only.
	r.Do("FLUSHALL")
	r.Do("SET", "m", "1")
	r.Do("SELECT", "2")
	r.Do("WATCH", "m")
	r.Do("SELECT", "0")
	other.Do("MOVE", "m", "2")
	exec(fail)
	r.Do("SET", "c", "1")
	r.Do("WATCH", "c")
	other.Do("COPY", "c", "c", "DB", "3")
	exec(ok)
	r.Do("SELECT", "3")
	r.Do("WATCH", "c")
	r.Do("SELECT", "0")
	other.Do("COPY", "c", "c", "DB", "3", "REPLACE")
	exec(fail)
}

// TestWatchExpiry follows Redis 7.0: a key live when watched that expires (lazily, actively,
// or merely by the EXEC's time) fails the EXEC; a key already expired when watched counts as
// absent, so its deletion is no change, but writing it is.
func TestWatchExpiry(t *testing.T) {
	s := testutil.StartServer(t)
	r, other := s.Dial(t), s.Dial(t)
	clock := func(ms int64) { r.Do("DEBUG", "CLOCK", "SET", strconv.FormatInt(ms, 10)) }
	exec := func(want string) {
		t.Helper()
		r.Do("MULTI")
		r.Do("PING")
		require.Equal(t, want, r.Do("EXEC"))
	}
	const ok, fail = "*1\r\n+PONG\r\n", "*-1\r\n"
	t0 := testutil.T0
	clock(t0)

	// Live when watched, expired by EXEC time (nobody deleted it yet).
	r.Do("SET", "k", "v", "PX", "100")
	r.Do("WATCH", "k")
	clock(t0 + 200)
	exec(fail)

	// Live when watched, lazily expired by another client's read.
	clock(t0 + 1000)
	r.Do("SET", "k", "v", "PX", "100")
	r.Do("WATCH", "k")
	clock(t0 + 1200)
	require.Equal(t, "$-1\r\n", other.Do("GET", "k"))
	exec(fail)

	// Stale when watched: its lazy deletion, DEL, FLUSHDB are no change.
	clock(t0 + 2000)
	r.Do("SET", "k", "v", "PX", "100")
	clock(t0 + 2200)
	r.Do("WATCH", "k")
	require.Equal(t, "$-1\r\n", other.Do("GET", "k"))
	exec(ok)
	clock(t0 + 3000)
	r.Do("SET", "k", "v", "PX", "100")
	clock(t0 + 3200)
	r.Do("WATCH", "k")
	other.Do("DEL", "k")
	exec(ok)
	clock(t0 + 4000)
	r.Do("SET", "k", "v", "PX", "100")
	clock(t0 + 4200)
	r.Do("WATCH", "k")
	other.Do("FLUSHDB")
	exec(ok)
	// ... but a new value is.
	clock(t0 + 5000)
	r.Do("SET", "k", "v", "PX", "100")
	clock(t0 + 5200)
	r.Do("WATCH", "k")
	other.Do("SET", "k", "new")
	exec(fail)

	// EXPIRE on a watched key is a write.
	r.Do("SET", "e", "v")
	r.Do("WATCH", "e")
	other.Do("EXPIRE", "e", "100")
	exec(fail)
	r.Do("DEBUG", "CLOCK", "RESET")
}

// TestWatchManyClients checks the registry under concurrency: clients watching, writing and
// disconnecting at once, each INCR-by-CAS loop ending with exactly the increments it made.
func TestWatchManyClients(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	const clients, rounds = 8, 50
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := s.Client(t, 2)
			defer cl.Close()
			for range rounds {
				for {
					err := cl.Watch(ctx, func(tx *redis.Tx) error {
						n, err := tx.Get(ctx, "counter").Int()
						if err != nil && err != redis.Nil {
							return err
						}
						_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
							p.Set(ctx, "counter", n+1, 0)
							p.Set(ctx, fmt.Sprint("last", i), n+1, 0)
							return nil
						})
						return err
					}, "counter")
					if err == redis.TxFailedErr {
						continue
					}
					require.NoError(t, err)
					break
				}
			}
		}()
	}
	wg.Wait()
	n, err := c.Get(ctx, "counter").Int()
	require.NoError(t, err)
	require.Equal(t, clients*rounds, n, "optimistic increments are never lost")
}

// TestWatchSMoveDestination: SMOVE of a member the destination already has changes only the
// source, so a WATCH on the destination holds (Redis's "SMOVE only notify dstset when the
// addition is successful").
func TestWatchSMoveDestination(t *testing.T) {
	s := testutil.StartServer(t)
	r, other := s.Dial(t), s.Dial(t)
	r.Do("SADD", "src", "a", "b")
	r.Do("SADD", "dst", "a")
	r.Do("WATCH", "dst")
	require.Equal(t, ":1\r\n", other.Do("SMOVE", "src", "dst", "a"))
	r.Do("MULTI")
	r.Do("SADD", "dst", "c")
	require.Equal(t, "*1\r\n:1\r\n", r.Do("EXEC"))
	r.Do("WATCH", "dst")
	require.Equal(t, ":1\r\n", other.Do("SMOVE", "src", "dst", "b"))
	r.Do("MULTI")
	r.Do("PING")
	require.Equal(t, "*-1\r\n", r.Do("EXEC"))
}
