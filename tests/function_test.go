package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

const counterLib = `#!lua name=counters
local function bump(keys, args)
  return redis.call('incrby', keys[1], args[1] or 1)
end
redis.register_function('bump', bump)
redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end,
  flags={'no-writes'}, description='reads a counter'}
`

func TestFunctionLoadCallList(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, "counters", c.FunctionLoad(ctx, counterLib).Val())
		_, err := c.FunctionLoad(ctx, counterLib).Result()
		require.EqualError(t, err, "ERR Library 'counters' already exists")
		require.Equal(t, "counters", c.FunctionLoadReplace(ctx, counterLib).Val())
		require.Contains(t, c.Info(ctx, "memory").Val(), "number_of_functions:2\r\n")

		require.Equal(t, int64(5), c.FCall(ctx, "bump", []string{"n"}, 5).Val())
		require.Equal(t, int64(6), c.FCall(ctx, "BUMP", []string{"n"}).Val())
		require.Equal(t, "6", c.FCallRO(ctx, "peek", []string{"n"}).Val())
		_, err = c.FCallRO(ctx, "bump", []string{"n"}).Result()
		require.EqualError(t, err, "ERR Can not execute a script with write flag using *_ro command.")
		_, err = c.FCall(ctx, "nosuch", nil).Result()
		require.EqualError(t, err, "ERR Function not found")
		_, err = c.Do(ctx, "FCALL", "bump", "x").Result()
		require.EqualError(t, err, "ERR Bad number of keys provided")

		libs, err := c.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Result()
		require.NoError(t, err)
		require.Len(t, libs, 1)
		require.Equal(t, "counters", libs[0].Name)
		require.Equal(t, "LUA", libs[0].Engine)
		require.Equal(t, counterLib, libs[0].Code)
		require.Len(t, libs[0].Functions, 2)
		require.Equal(t, "bump", libs[0].Functions[0].Name)
		require.Equal(t, "peek", libs[0].Functions[1].Name)
		require.Equal(t, "reads a counter", libs[0].Functions[1].Description)
		require.Equal(t, []string{"no-writes"}, libs[0].Functions[1].Flags)

		// Errors of the library code, worded as Redis's.
		_, err = c.FunctionLoad(ctx, "#!lua name=bad\nredis.register_function('f', 1)").Result()
		require.EqualError(t, err, "ERR Error registering functions: ERR second argument to redis.register_function must be a function")
		_, err = c.FunctionLoad(ctx, "#!lua name=empty\nlocal x = 1").Result()
		require.EqualError(t, err, "ERR No functions registered")
		_, err = c.FunctionLoad(ctx, "#!lua name=clash\nredis.register_function('bump', function() end)").Result()
		require.EqualError(t, err, "ERR Function bump already exists")
		_, err = c.FunctionLoad(ctx, "#!lua name=glob\nredis.call('ping')").Result()
		require.ErrorContains(t, err, "Script attempted to access nonexistent global variable 'call'")
		_, err = c.FunctionLoad(ctx, "#!js name=x\n").Result()
		require.EqualError(t, err, "ERR Engine 'js' not found")

		// DUMP and RESTORE round trip, with its policies.
		payload, err := c.FunctionDump(ctx).Result()
		require.NoError(t, err)
		_, err = c.FunctionRestore(ctx, payload).Result()
		require.EqualError(t, err, "ERR Library counters already exists")
		require.Equal(t, "OK", c.Do(ctx, "FUNCTION", "RESTORE", payload, "REPLACE").Val())
		// Library names are case-sensitive, function names are not (as in Redis).
		_, err = c.FunctionDelete(ctx, "COUNTERS").Result()
		require.EqualError(t, err, "ERR Library not found")
		require.Equal(t, "OK", c.FunctionDelete(ctx, "counters").Val())
		_, err = c.FCall(ctx, "bump", []string{"n"}).Result()
		require.EqualError(t, err, "ERR Function not found")
		require.Equal(t, "OK", c.FunctionRestore(ctx, payload).Val())
		require.Equal(t, int64(7), c.FCall(ctx, "bump", []string{"n"}).Val())
		_, err = c.FunctionRestore(ctx, "garbage").Result()
		require.EqualError(t, err, "ERR DUMP payload version or checksum are wrong")
		require.Equal(t, "OK", c.FunctionFlush(ctx).Val())
		require.Empty(t, c.FunctionList(ctx, redis.FunctionListQuery{}).Val())
		// FLUSHALL leaves functions alone.
		c.FunctionLoad(ctx, counterLib)
		require.NoError(t, c.FlushAll(ctx).Err())
		require.Len(t, c.FunctionList(ctx, redis.FunctionListQuery{}).Val(), 1)
	})
}

// TestFunctionPayloadFromRedis restores a payload that Redis 7.0 produced with FUNCTION DUMP
// (its code string LZF-compressed, as Redis writes long strings).
func TestFunctionPayloadInterop(t *testing.T) {
	addr := startCompatRedis(t)
	r := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	t.Cleanup(func() { _ = r.Close() })
	require.NoError(t, r.FunctionFlush(ctx).Err())
	long := counterLib + "-- " + strings.Repeat("padding ", 50) + "\n"
	require.NoError(t, r.FunctionLoad(ctx, long).Err())
	payload, err := r.FunctionDump(ctx).Result()
	require.NoError(t, err)

	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.Equal(t, "OK", c.FunctionRestore(ctx, payload).Val())
	libs := c.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Val()
	require.Len(t, libs, 1)
	require.Equal(t, long, libs[0].Code)

	// And back: Redis restores HotKV's payload.
	mine, err := c.FunctionDump(ctx).Result()
	require.NoError(t, err)
	require.Equal(t, "OK", r.Do(ctx, "FUNCTION", "RESTORE", mine, "REPLACE").Val())
	require.Equal(t, int64(3), r.FCall(ctx, "bump", []string{"x"}, 3).Val())
}

func TestFunctionKillAndStats(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "busy-reply-threshold", "50").Err())
	require.NoError(t, c.FunctionLoad(ctx, "#!lua name=spin\nredis.register_function{function_name='spin', callback=function() while true do end end, flags={'no-writes'}}").Err())
	stats, err := c.Do(ctx, "FUNCTION", "STATS").Result()
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint([]any{"running_script", nil, "engines", []any{"LUA", []any{"libraries_count", int64(1), "functions_count", int64(1)}}}), fmt.Sprint(stats))

	runner := s.Client(t, 2)
	done := make(chan error, 1)
	go func() {
		_, err := runner.FCallRO(ctx, "spin", nil).Result()
		done <- err
	}()
	require.Eventually(t, func() bool {
		err := c.Ping(ctx).Err()
		return err != nil && strings.HasPrefix(err.Error(), "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
	}, 5*time.Second, 10*time.Millisecond)
	stats, err = c.Do(ctx, "FUNCTION", "STATS").Result()
	require.NoError(t, err)
	require.Contains(t, fmt.Sprint(stats), "name spin command [fcall_ro spin 0] duration_ms")
	_, err = c.Do(ctx, "SCRIPT", "KILL").Result()
	require.ErrorContains(t, err, "BUSY Redis is busy running a script. You can only call FUNCTION KILL")
	require.Equal(t, "OK", c.Do(ctx, "FUNCTION", "KILL").Val())
	select {
	case err := <-done:
		require.ErrorContains(t, err, "Script killed by user with FUNCTION KILL...")
	case <-time.After(5 * time.Second):
		t.Fatal("the killed function did not stop")
	}
	// FUNCTION LOAD stops library code that runs too long.
	_, err = c.FunctionLoad(ctx, "#!lua name=slow\nwhile true do end").Result()
	require.EqualError(t, err, "ERR Error registering functions: ERR FUNCTION LOAD timeout")
}

// TestFunctionRestart: libraries survive a restart through SAVE, BGSAVE and the append-only
// log, and so do the writes of functions.
func TestFunctionRestart(t *testing.T) {
	restartThroughEachWay(t, func(t *testing.T, c *redis.Client) {
		require.NoError(t, c.FunctionLoad(ctx, counterLib).Err())
		require.NoError(t, c.FunctionLoad(ctx, "#!lua name=gone\nredis.register_function('g', function() return 1 end)").Err())
		require.NoError(t, c.FunctionDelete(ctx, "gone").Err())
		for i := 1; i <= 10; i++ {
			require.NoError(t, c.FCall(ctx, "bump", []string{"n"}, i).Err())
		}
	}, func(t *testing.T, c *redis.Client) []string {
		libs := c.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Val()
		var out []string
		for _, l := range libs {
			out = append(out, l.Name, l.Code)
		}
		return append(out, c.Get(ctx, "n").Val(), fmt.Sprint(c.FCall(ctx, "peek", []string{"n"}).Val()))
	}, nil)
}
