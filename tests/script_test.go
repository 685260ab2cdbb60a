package tests

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/testutil"
)

// Exact replies of scripts are compared with Redis in testdata/compat/scripting.txt; these
// tests cover what the corpus cannot: the protocol-dependent conversions seen through a
// client, atomicity under concurrency, busy scripts and SCRIPT KILL, effects and restarts.

func TestScriptConversions(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		proto := 2
		if strings.Contains(t.Name(), "RESP3") {
			proto = 3
		}
		eval := func(src string, keys []string, args ...any) (any, error) {
			return c.Eval(ctx, src, keys, args...).Result()
		}
		v, err := eval("return {1, 'two', 3.9, -3.9, true, {ok='fine'}, {'nested', {1}}}", nil)
		require.NoError(t, err)
		require.Equal(t, []any{int64(1), "two", int64(3), int64(-3), int64(1), "fine", []any{"nested", []any{int64(1)}}}, v)

		_, err = eval("return false", nil)
		require.ErrorIs(t, err, redis.Nil)
		_, err = eval("return {err='MYCODE custom'}", nil)
		require.EqualError(t, err, "MYCODE custom")
		_, err = eval("return redis.error_reply('no code here')", nil)
		require.EqualError(t, err, "no code here")

		// redis.call's replies as Lua sees them.
		require.NoError(t, c.Set(ctx, "s", "val", 0).Err())
		require.NoError(t, c.RPush(ctx, "l", "a", "b").Err())
		v, err = eval(`
			local a = redis.call('get', KEYS[1])
			local b = redis.call('lrange', KEYS[2], 0, -1)
			local c = redis.call('set', KEYS[1], 'x')
			local d = redis.pcall('incr', KEYS[1])
			local e = redis.call('get', 'missing')
			return {type(a), a, #b, c.ok, d.err, tostring(e)}`, []string{"s", "l"})
		require.NoError(t, err)
		require.Equal(t, []any{"string", "val", int64(2), "OK", "ERR value is not an integer or out of range", "false"}, v)

		// RESP3 replies inside the script after redis.setresp(3), and back to the caller.
		require.NoError(t, c.HSet(ctx, "h", "f", "v").Err())
		v, err = eval("redis.setresp(3); return redis.call('hgetall', KEYS[1])", []string{"h"})
		require.NoError(t, err)
		if proto == 3 {
			require.Equal(t, map[any]any{"f": "v"}, v)
		} else {
			require.Equal(t, []any{"f", "v"}, v)
		}
		v, err = eval("redis.setresp(3); return {double=1.5}", nil)
		require.NoError(t, err)
		if proto == 3 {
			require.Equal(t, 1.5, v)
		} else {
			require.Equal(t, "1.5", v)
		}
		v, err = eval("redis.setresp(3); return redis.call('exists', 'nokey') == 0 and true", nil)
		require.NoError(t, err)
		if proto == 3 {
			require.Equal(t, true, v)
		} else {
			require.Equal(t, int64(1), v)
		}
		// Numbers go to commands with 17 significant digits.
		v, err = eval("redis.call('set', KEYS[1], 0.1) return redis.call('get', KEYS[1])", []string{"n"})
		require.NoError(t, err)
		require.Equal(t, "0.10000000000000001", v)
	})
}

func TestScriptCacheAndErrors(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		sha, err := c.ScriptLoad(ctx, "return ARGV[1] .. KEYS[1]").Result()
		require.NoError(t, err)
		require.Equal(t, "facee73595c1e83e3ea47cba8d250fc2710fd050", sha)
		v, err := c.EvalSha(ctx, strings.ToUpper(sha), []string{"k"}, "x").Result()
		require.NoError(t, err)
		require.Equal(t, "xk", v)
		ex, err := c.ScriptExists(ctx, sha, strings.Repeat("0", 40)).Result()
		require.NoError(t, err)
		require.Equal(t, []bool{true, false}, ex)
		require.Contains(t, c.Info(ctx, "memory").Val(), "number_of_cached_scripts:1\r\n")
		require.NoError(t, c.ScriptFlush(ctx).Err())
		require.Contains(t, c.Info(ctx, "memory").Val(), "number_of_cached_scripts:0\r\n")
		_, err = c.EvalSha(ctx, sha, nil).Result()
		require.EqualError(t, err, "NOSCRIPT No matching script. Please use EVAL.")
		_, err = c.Do(ctx, "EVAL", "return 1", -1).Result()
		require.EqualError(t, err, "ERR Number of keys can't be negative")
		_, err = c.Do(ctx, "EVAL", "return 1", 2, "a").Result()
		require.EqualError(t, err, "ERR Number of keys can't be greater than number of args")
		_, err = c.Eval(ctx, "return x", nil).Result()
		require.ErrorContains(t, err, "Script attempted to access nonexistent global variable 'x'")
		_, err = c.Eval(ctx, "x = 1", nil).Result()
		require.ErrorContains(t, err, "Attempt to modify a readonly table")
		_, err = c.Eval(ctx, "return redis.call('nosuch')", nil).Result()
		require.ErrorContains(t, err, "ERR Unknown Redis command called from script")
		_, err = c.Eval(ctx, "return redis.call('multi')", nil).Result()
		require.ErrorContains(t, err, "This Redis command is not allowed from script")
		_, err = c.Do(ctx, "EVAL_RO", "return redis.call('set', 'k', 'v')", 0).Result()
		require.ErrorContains(t, err, "ERR Write commands are not allowed from read-only scripts.")
		_, err = c.Do(ctx, "EVAL_RO", "#!lua\nreturn 1", 0).Result()
		require.EqualError(t, err, "ERR Can not execute a script with write flag using *_ro command.")
		v, err = c.Do(ctx, "EVAL_RO", "#!lua flags=no-writes\nreturn redis.call('exists', 'k')", 0).Result()
		require.NoError(t, err)
		require.Equal(t, int64(0), v)
		_, err = c.Eval(ctx, "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')", nil).Result()
		require.ErrorContains(t, err, "Write commands are not allowed from read-only scripts.")
		_, err = c.Eval(ctx, "#!lua flags=bogus\nreturn 1", nil).Result()
		require.EqualError(t, err, "ERR Unexpected flag in script shebang: bogus")
		_, err = c.Eval(ctx, "return 'x' ..", nil).Result()
		require.ErrorContains(t, err, "ERR Error compiling script (new function): user_script:1:")
	})
}

// TestScriptSelectIsolation: SELECT inside a script changes the script's database only.
func TestScriptSelectIsolation(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	v, err := c.Eval(ctx, "redis.call('select', 3) redis.call('set', 'k', 'in3') return redis.call('get', 'k')", nil).Result()
	require.NoError(t, err)
	require.Equal(t, "in3", v)
	require.Equal(t, int64(0), c.Exists(ctx, "k").Val())
	require.NoError(t, c.Do(ctx, "SELECT", 3).Err())
	require.Equal(t, "in3", c.Get(ctx, "k").Val())
	// A computed SELECT in a script whose source does not name it is refused: its locks
	// cover one database.
	_, err = c.Eval(ctx, "return redis.call(ARGV[1], 1)", nil, "sel"+"ect").Result()
	require.ErrorContains(t, err, "must be named literally")
}

// TestScriptAtomic: scripts that read, compute and write never interleave with each other
// or with plain commands on their keys.
func TestScriptAtomic(t *testing.T) {
	s := testutil.StartServer(t)
	const workers, rounds = 8, 200
	src := "local v = tonumber(redis.call('get', KEYS[1]) or '0') redis.call('set', KEYS[1], v + 1) redis.call('set', KEYS[2], v + 1) return v + 1"
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := s.Client(t, 2)
			for i := 0; i < rounds; i++ {
				if _, err := c.Eval(ctx, src, []string{"counter", "mirror"}).Result(); err != nil {
					t.Error(err)
					return
				}
				c.Incr(ctx, "plain")
			}
		}()
	}
	wg.Wait()
	c := s.Client(t, 2)
	require.Equal(t, fmt.Sprint(workers*rounds), c.Get(ctx, "counter").Val())
	require.Equal(t, fmt.Sprint(workers*rounds), c.Get(ctx, "mirror").Val())
	require.Equal(t, fmt.Sprint(workers*rounds), c.Get(ctx, "plain").Val())
}

// TestScriptBusyAndKill: past busy-reply-threshold other clients get -BUSY; SCRIPT KILL
// stops a script that has not written, not one that has; FUNCTION KILL does not stop EVAL.
func TestScriptBusyAndKill(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "lua-time-limit", "50").Err())
	require.Equal(t, "50", c.ConfigGet(ctx, "busy-reply-threshold").Val()["busy-reply-threshold"])
	_, err := c.Do(ctx, "SCRIPT", "KILL").Result()
	require.EqualError(t, err, "NOTBUSY No scripts in execution right now.")

	runner := s.Client(t, 2)
	done := make(chan error, 1)
	go func() {
		_, err := runner.Eval(ctx, "local i = 0 while true do i = i + 1 end", nil).Result()
		done <- err
	}()
	require.Eventually(t, func() bool {
		err := c.Ping(ctx).Err()
		return err != nil && strings.HasPrefix(err.Error(), "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
	}, 5*time.Second, 10*time.Millisecond)
	_, err = c.Get(ctx, "k").Result()
	require.ErrorContains(t, err, "BUSY")
	_, err = c.Do(ctx, "FUNCTION", "KILL").Result()
	require.ErrorContains(t, err, "BUSY Redis is busy running a script. You can only call SCRIPT KILL")
	require.Equal(t, "OK", c.Do(ctx, "SCRIPT", "KILL").Val())
	select {
	case err := <-done:
		require.ErrorContains(t, err, "Script killed by user with SCRIPT KILL...")
	case <-time.After(5 * time.Second):
		t.Fatal("the killed script did not stop")
	}
	require.NoError(t, c.Ping(ctx).Err())
	require.NoError(t, runner.Ping(ctx).Err())

	// A script that wrote cannot be killed; it runs to its end (a bounded loop, long enough to
	// be seen running, short enough for the race detector).
	slow := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = slow.Close() })
	go func() {
		_, err := slow.Eval(ctx, "redis.call('set', 'w', '1') local i = 0 while i < 5000000 do i = i + 1 end return i", nil).Result()
		done <- err
	}()
	require.Eventually(t, func() bool {
		_, err := c.Do(ctx, "SCRIPT", "KILL").Result()
		return err != nil && strings.HasPrefix(err.Error(), "UNKILLABLE")
	}, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, <-done)
	require.Equal(t, "1", c.Get(ctx, "w").Val())
}

// TestScriptEffects: a script's writes are journaled as one MULTI/EXEC block of effects
// (EXPIRE as PEXPIREAT, SPOP as SREM); reads and EVAL itself journal nothing;
// redis.set_repl(REPL_NONE) silences what follows.
func TestScriptEffects(t *testing.T) {
	s := testutil.StartServer(t)
	log := &effectLog{}
	s.StoreForTest().Journal = log
	c := s.Client(t, 2)
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
	require.NoError(t, c.SAdd(ctx, "set", "only").Err())
	n := log.len()
	_, err := c.Eval(ctx, "redis.call('set', KEYS[1], 'v') redis.call('expire', KEYS[1], 10) redis.call('spop', KEYS[2]) return redis.call('get', KEYS[1])",
		[]string{"k", "set"}).Result()
	require.NoError(t, err)
	var got []string
	for _, e := range log.since(n) {
		got = append(got, effectString(e))
	}
	require.Equal(t, []string{"MULTI", "SET k v", fmt.Sprintf("PEXPIREAT k %d", testutil.T0+10000), "SREM set only", "EXEC"}, got)

	n = log.len()
	_, err = c.Eval(ctx, "return redis.call('get', KEYS[1])", []string{"k"}).Result()
	require.NoError(t, err)
	require.Equal(t, 0, log.len()-n)

	n = log.len()
	_, err = c.Eval(ctx, "redis.call('set', 'a', '1') redis.set_repl(redis.REPL_NONE) redis.call('set', 'b', '2') redis.set_repl(redis.REPL_ALL) redis.call('set', 'c', '3')", nil).Result()
	require.ErrorIs(t, err, redis.Nil)
	got = got[:0]
	for _, e := range log.since(n) {
		got = append(got, effectString(e))
	}
	require.Equal(t, []string{"MULTI", "SET a 1", "SET c 3", "EXEC"}, got)
	_, err = c.Eval(ctx, "redis.set_repl(7)", nil).Result()
	require.ErrorContains(t, err, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
}

// TestScriptRestart: what scripts wrote survives a restart, through snapshots and through the
// append-only log's effects.
func TestScriptRestart(t *testing.T) {
	restartThroughEachWay(t, func(t *testing.T, c *redis.Client) {
		for i := 0; i < 20; i++ {
			_, err := c.Eval(ctx, "redis.call('hincrby', KEYS[1], 'n', ARGV[1]) redis.call('rpush', KEYS[2], ARGV[1]) redis.call('pexpire', KEYS[2], 60000) return redis.call('spop', KEYS[3])",
				[]string{"h", "l", "s"}, i).Result()
			if err != nil && err != redis.Nil {
				require.NoError(t, err)
			}
			require.NoError(t, c.SAdd(ctx, "s", fmt.Sprint("m", i), fmt.Sprint("x", i)).Err())
		}
	}, func(t *testing.T, c *redis.Client) []string {
		return []string{
			fmt.Sprint(c.HGetAll(ctx, "h").Val()), fmt.Sprint(c.LRange(ctx, "l", 0, -1).Val()),
			fmt.Sprint(c.PExpireTime(ctx, "l").Val()), fmt.Sprint(setSorted(c.SMembers(ctx, "s").Val())),
		}
	}, nil)
}

// TestScriptLockMix runs scripts that lock one database, scripts that lock every database
// (their source names SELECT), functions, scripts inside MULTI/EXEC and plain multi-key
// commands at once, on two databases: nothing deadlocks, and every increment lands.
func TestScriptLockMix(t *testing.T) {
	s := testutil.StartServer(t)
	setup := s.Client(t, 2)
	require.NoError(t, setup.FunctionLoad(ctx, "#!lua name=mix\nredis.register_function('bump', function(k) return redis.call('incr', k[1]) end)").Err())
	const workers, rounds = 6, 150
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true, PoolSize: 1, DB: w % 2})
			defer c.Close()
			for i := 0; i < rounds; i++ {
				var err error
				switch (w + i) % 5 {
				case 0:
					err = c.Eval(ctx, "return redis.call('incr', KEYS[1])", []string{"n"}).Err()
				case 1:
					err = c.Eval(ctx, "redis.call('select', 0) redis.call('incr', 'n') redis.call('select', 1) return redis.call('incr', 'n')", nil).Err()
				case 2:
					err = c.FCall(ctx, "bump", []string{"n"}).Err()
				case 3:
					_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Eval(ctx, "return redis.call('incr', KEYS[1])", []string{"n"})
						p.Incr(ctx, "n")
						return nil
					})
				case 4:
					err = c.MSet(ctx, "a", i, "b", i, "c", i).Err()
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("scripts deadlocked")
	}
	// Each worker's rounds: case 0, 2: +1 in its database; case 1: +1 in each; case 3: +2.
	want := map[int]int{}
	for w := 0; w < workers; w++ {
		for i := 0; i < rounds; i++ {
			switch (w + i) % 5 {
			case 0, 2:
				want[w%2]++
			case 1:
				want[0]++
				want[1]++
			case 3:
				want[w%2] += 2
			}
		}
	}
	for db := 0; db < 2; db++ {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true, DB: db})
		require.Equal(t, fmt.Sprint(want[db]), c.Get(ctx, "n").Val(), "db %d", db)
		_ = c.Close()
	}
}

// TestScriptStopsOnShutdown: stopping the server ends a script that would run for ever.
func TestScriptStopsOnShutdown(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	errc := make(chan error, 1)
	go func() { errc <- c.Eval(ctx, "redis.call('set', 'x', 1) while true do end", nil).Err() }()
	probe := s.Client(t, 2)
	require.NoError(t, probe.ConfigSet(ctx, "busy-reply-threshold", "10").Err())
	require.Eventually(t, func() bool {
		err := probe.Ping(ctx).Err()
		return err != nil && strings.HasPrefix(err.Error(), "BUSY")
	}, 5*time.Second, 5*time.Millisecond)
	_, err := probe.Do(ctx, "SCRIPT", "KILL").Result()
	require.ErrorContains(t, err, "UNKILLABLE")
	s.Stop(t, command.ShutdownNoSave) // fails the test if the server does not stop within 30 s
	require.Error(t, <-errc)
}

// A command a script's redis.call or redis.pcall cannot run because of the server's state
// counts in INFO errorstats under its own code (OOM), as Redis's scriptCall counts it, once.
func TestScriptRefusalErrorStats(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
	err := c.Eval(ctx, "return redis.call('set','x','y')", []string{"x"}).Err()
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "OOM command not allowed"), "%v", err)
	require.NoError(t, c.Eval(ctx, "local t = redis.pcall('set','x','y') return t['err']", []string{"x"}).Err())
	stats := c.Info(ctx, "errorstats").Val()
	require.Contains(t, stats, "errorstat_OOM:count=2")
	require.NotContains(t, stats, "errorstat_ERR")
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
}
