package tests

import (
	"bufio"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// rawIn opens a raw connection speaking the same protocol as c, for checking exact bytes.
func rawIn(t *testing.T, s *testutil.Server, c *redis.Client) *testutil.Raw {
	t.Helper()
	r := s.Dial(t)
	if c.Options().Protocol == 3 {
		require.True(t, strings.HasPrefix(r.Do("HELLO", "3"), "%7\r\n"))
	}
	return r
}

// byProto picks the expectation for c's protocol.
func byProto(c *redis.Client, resp2, resp3 string) string {
	if c.Options().Protocol == 3 {
		return resp3
	}
	return resp2
}

func TestInfo(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		info, err := c.Info(ctx).Result()
		require.NoError(t, err)
		require.Contains(t, info, "# Server\r\nredis_version:")
		require.Contains(t, info, "# Keyspace")
		require.NotContains(t, info, "# Commandstats")

		info, err = c.Info(ctx, "server", "CLIENTS").Result()
		require.NoError(t, err)
		require.Contains(t, info, "# Server")
		require.Contains(t, info, "# Clients")
		require.NotContains(t, info, "# Memory")

		m, err := c.InfoMap(ctx, "stats").Result()
		require.NoError(t, err)
		require.Contains(t, m["Stats"], "total_commands_processed")

		// RESP3 sends a verbatim string, RESP2 a bulk string.
		reply := rawIn(t, s, c).Do("INFO", "cluster")
		require.Equal(t, byProto(c, "$30\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n", "=34\r\ntxt:# Cluster\r\ncluster_enabled:0\r\n\r\n"), reply)
	})
}

func TestConfig(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, map[string]string{"hz": "10"}, c.ConfigGet(ctx, "hz").Val())
		require.Equal(t, map[string]string{}, c.ConfigGet(ctx, "nosuch").Val())
		got, err := c.Do(ctx, "CONFIG", "GET", "hz", "maxcl*", "HZ").Result()
		require.NoError(t, err)
		if c.Options().Protocol == 3 {
			require.Equal(t, map[any]any{"hz": "10", "maxclients": "10000"}, got)
		} else {
			l := got.([]any)
			require.Len(t, l, 4)
			pairs := map[any]any{l[0]: l[1], l[2]: l[3]}
			require.Equal(t, map[any]any{"hz": "10", "maxclients": "10000"}, pairs)
		}
		require.Equal(t, byProto(c, "*2\r\n$2\r\nhz\r\n$2\r\n10\r\n", "%1\r\n$2\r\nhz\r\n$2\r\n10\r\n"), rawIn(t, s, c).Do("CONFIG", "GET", "hz"))

		require.NoError(t, c.ConfigSet(ctx, "hz", "20").Err())
		require.Equal(t, "20", c.ConfigGet(ctx, "hz").Val()["hz"])
		require.NoError(t, c.Do(ctx, "CONFIG", "SET", "hz", "30", "timeout", "5").Err())
		require.Equal(t, map[string]string{"hz": "30", "timeout": "5"}, c.ConfigGet(ctx, "[ht][zi]*").Val())

		// One bad pair fails the whole call and changes nothing.
		require.EqualError(t, c.Do(ctx, "CONFIG", "SET", "hz", "40", "maxclients", "x").Err(),
			"ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument couldn't be parsed into an integer")
		require.Equal(t, "30", c.ConfigGet(ctx, "hz").Val()["hz"])

		require.EqualError(t, c.ConfigSet(ctx, "nosuch", "1").Err(), "ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")
		require.EqualError(t, c.ConfigSet(ctx, "databases", "1").Err(), "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config")
		require.EqualError(t, c.Do(ctx, "CONFIG", "SET", "hz", "10", "HZ", "11").Err(), "ERR CONFIG SET failed (possibly related to argument 'HZ') - duplicate parameter")
		require.EqualError(t, c.Do(ctx, "CONFIG", "SET", "hz", "10", "timeout").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "CONFIG", "SET", "hz").Err(), "ERR wrong number of arguments for 'config|set' command")
		require.EqualError(t, c.Do(ctx, "CONFIG", "GET").Err(), "ERR wrong number of arguments for 'config|get' command")
		require.EqualError(t, c.Do(ctx, "CONFIG").Err(), "ERR wrong number of arguments for 'config' command")
		require.EqualError(t, c.Do(ctx, "CONFIG", "FOO").Err(), "ERR unknown subcommand 'FOO'. Try CONFIG HELP.")
		require.EqualError(t, c.ConfigRewrite(ctx).Err(), "ERR The server is running without a config file")

		require.NoError(t, c.Ping(ctx).Err())
		require.NoError(t, c.ConfigResetStat(ctx).Err())
		require.NotContains(t, c.Info(ctx, "commandstats").Val(), "cmdstat_ping")

		help, err := c.Do(ctx, "CONFIG", "HELP").StringSlice()
		require.NoError(t, err)
		require.Equal(t, "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", help[0])
		require.Equal(t, "    Prints this help.", help[len(help)-1])
	})
}

func TestCommandWithGoRedis(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		cmds, err := c.Command(ctx).Result()
		require.NoError(t, err)
		count, err := c.Do(ctx, "COMMAND", "COUNT").Int()
		require.NoError(t, err)
		require.Len(t, cmds, count)

		get := cmds["get"]
		require.NotNil(t, get)
		require.EqualValues(t, 2, get.Arity)
		require.EqualValues(t, 1, get.FirstKeyPos)
		require.EqualValues(t, 1, get.LastKeyPos)
		require.EqualValues(t, 1, get.StepCount)
		require.True(t, get.ReadOnly)
		require.Contains(t, get.ACLFlags, "@read")

		cfg := cmds["config"]
		require.NotNil(t, cfg)
		require.EqualValues(t, -2, cfg.Arity)
		require.EqualValues(t, 0, cfg.FirstKeyPos)
		require.False(t, cfg.ReadOnly)
		require.Equal(t, []string{"@slow"}, cfg.ACLFlags)

		lastsave := cmds["lastsave"]
		require.Equal(t, []string{"loading", "stale", "fast"}, lastsave.Flags)
		require.Equal(t, []string{"@admin", "@fast", "@dangerous"}, lastsave.ACLFlags)
	})
}

func TestCommandInfoAndDocsExactBytes(t *testing.T) {
	// Byte for byte what Redis 7.0.15 sends.
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		r := rawIn(t, s, c)
		require.Equal(t, byProto(c,
			"*2\r\n*10\r\n$12\r\nmemory|usage\r\n:-3\r\n*1\r\n+readonly\r\n:2\r\n:2\r\n:1\r\n*2\r\n+@read\r\n+@slow\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*1\r\n+RO\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:2\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*0\r\n$-1\r\n",
			"*2\r\n*10\r\n$12\r\nmemory|usage\r\n:-3\r\n~1\r\n+readonly\r\n:2\r\n:2\r\n:1\r\n~2\r\n+@read\r\n+@slow\r\n~0\r\n~1\r\n%3\r\n$5\r\nflags\r\n~1\r\n+RO\r\n$12\r\nbegin_search\r\n%2\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:2\r\n$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n~0\r\n_\r\n"),
			r.Do("COMMAND", "INFO", "memory|usage", "nosuch"))
		require.Equal(t, byProto(c,
			"*4\r\n$8\r\nlastsave\r\n*8\r\n$7\r\nsummary\r\n$59\r\nGet the UNIX time stamp of the last successful save to disk\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nserver\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$12\r\nmemory|usage\r\n*10\r\n$7\r\nsummary\r\n$34\r\nEstimate the memory usage of a key\r\n$5\r\nsince\r\n$5\r\n4.0.0\r\n$5\r\ngroup\r\n$6\r\nserver\r\n$10\r\ncomplexity\r\n$38\r\nO(N) where N is the number of samples.\r\n$9\r\narguments\r\n*2\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n*8\r\n$4\r\nname\r\n$5\r\ncount\r\n$4\r\ntype\r\n$7\r\ninteger\r\n$5\r\ntoken\r\n$7\r\nSAMPLES\r\n$5\r\nflags\r\n*1\r\n+optional\r\n",
			"%2\r\n$8\r\nlastsave\r\n%4\r\n$7\r\nsummary\r\n$59\r\nGet the UNIX time stamp of the last successful save to disk\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nserver\r\n$10\r\ncomplexity\r\n$4\r\nO(1)\r\n$12\r\nmemory|usage\r\n%5\r\n$7\r\nsummary\r\n$34\r\nEstimate the memory usage of a key\r\n$5\r\nsince\r\n$5\r\n4.0.0\r\n$5\r\ngroup\r\n$6\r\nserver\r\n$10\r\ncomplexity\r\n$38\r\nO(N) where N is the number of samples.\r\n$9\r\narguments\r\n*2\r\n%3\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n%4\r\n$4\r\nname\r\n$5\r\ncount\r\n$4\r\ntype\r\n$7\r\ninteger\r\n$5\r\ntoken\r\n$7\r\nSAMPLES\r\n$5\r\nflags\r\n~1\r\n+optional\r\n"),
			r.Do("COMMAND", "DOCS", "lastsave", "memory|usage", "nosuch"))
		// A command without subcommands ends with an empty set, a container with an array.
		info := r.Do("COMMAND", "INFO", "memory")
		require.True(t, strings.HasPrefix(info, "*1\r\n*10\r\n$6\r\nmemory\r\n:-2\r\n"), info)
		require.Contains(t, info, byProto(c, "*0\r\n*0\r\n*6\r\n*10\r\n", "~0\r\n~0\r\n*6\r\n*10\r\n"))
	})
}

func TestCommandDocs(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		all, err := c.Do(ctx, "COMMAND", "DOCS").Result()
		require.NoError(t, err)
		count, _ := c.Do(ctx, "COMMAND", "COUNT").Int()
		if c.Options().Protocol == 3 {
			require.Len(t, all.(map[any]any), count)
		} else {
			require.Len(t, all.([]any), 2*count)
		}
		// Containers list their subcommands' docs by full name.
		r := rawIn(t, s, c)
		docs := r.Do("COMMAND", "DOCS", "config")
		require.Contains(t, docs, "$11\r\nsubcommands\r\n")
		require.Contains(t, docs, "$10\r\nconfig|set\r\n")
		require.Contains(t, docs, "$15\r\nparameter_value\r\n$4\r\ntype\r\n$5\r\nblock\r\n")
		require.Equal(t, byProto(c, "*0\r\n", "%0\r\n"), r.Do("COMMAND", "DOCS", "nosuch"))
	})
}

func TestCommandListCountHelp(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		all, err := c.CommandList(ctx, nil).Result()
		require.NoError(t, err)
		require.Contains(t, all, "config")
		require.Contains(t, all, "config|get")
		require.Contains(t, all, "client|list")

		cfg, err := c.CommandList(ctx, &redis.FilterBy{Pattern: "CONF*"}).Result()
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"config", "config|get", "config|set", "config|resetstat", "config|rewrite", "config|help"}, cfg)

		conn, err := c.CommandList(ctx, &redis.FilterBy{ACLCat: "Connection"}).Result()
		require.NoError(t, err)
		require.Contains(t, conn, "ping")
		require.Contains(t, conn, "command|info")
		require.Contains(t, conn, "client|list")
		require.NotContains(t, conn, "client", "the container is @slow only")
		require.NotContains(t, conn, "config|get")

		require.Empty(t, c.CommandList(ctx, &redis.FilterBy{Module: "x"}).Val())
		require.Empty(t, c.CommandList(ctx, &redis.FilterBy{ACLCat: "nosuch"}).Val())
		for _, args := range [][]any{{"foo"}, {"filterby"}, {"filterby", "foo", "x"}, {"filterby", "pattern", "x", "y"}} {
			require.EqualError(t, c.Do(ctx, append([]any{"COMMAND", "LIST"}, args...)...).Err(), "ERR syntax error", "%v", args)
		}

		n, err := c.Do(ctx, "COMMAND", "COUNT").Int()
		require.NoError(t, err)
		top := 0
		for _, name := range all {
			if !strings.Contains(name, "|") {
				top++
			}
		}
		require.Equal(t, top, n)
		require.EqualError(t, c.Do(ctx, "COMMAND", "COUNT", "x").Err(), "ERR wrong number of arguments for 'command|count' command")
		require.EqualError(t, c.Do(ctx, "COMMAND", "FOO").Err(), "ERR unknown subcommand 'FOO'. Try COMMAND HELP.")

		help, err := c.Do(ctx, "COMMAND", "HELP").StringSlice()
		require.NoError(t, err)
		require.Equal(t, "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", help[0])
		require.Len(t, help, 21)
	})
}

func TestCommandGetKeys(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, []string{"k"}, c.CommandGetKeys(ctx, "memory", "usage", "k").Val())
		require.Equal(t, []string{"a"}, c.CommandGetKeys(ctx, "GET", "a").Val())
		kf, err := c.CommandGetKeysAndFlags(ctx, "memory", "usage", "k", "SAMPLES", "5").Result()
		require.NoError(t, err)
		require.Equal(t, []redis.KeyFlags{{Key: "k", Flags: []string{"RO"}}}, kf)
		require.Equal(t, byProto(c, "*1\r\n*2\r\n$1\r\nk\r\n*1\r\n+RO\r\n", "*1\r\n*2\r\n$1\r\nk\r\n~1\r\n+RO\r\n"),
			rawIn(t, s, c).Do("COMMAND", "GETKEYSANDFLAGS", "memory", "usage", "k"))

		require.EqualError(t, c.CommandGetKeys(ctx, "nosuch", "a").Err(), "ERR Invalid command specified")
		require.EqualError(t, c.CommandGetKeys(ctx, "config", "nosub").Err(), "ERR Invalid command specified")
		require.EqualError(t, c.CommandGetKeys(ctx, "config", "get", "x").Err(), "ERR The command has no key arguments")
		require.EqualError(t, c.CommandGetKeys(ctx, "get", "a", "b").Err(), "ERR Invalid number of arguments specified for command")
		require.EqualError(t, c.CommandGetKeys(ctx, "memory", "usage").Err(), "ERR Invalid number of arguments specified for command")
		require.EqualError(t, c.Do(ctx, "COMMAND", "GETKEYS", "get").Err(), "ERR wrong number of arguments for 'command|getkeys' command")
	})
}

func TestTimeAndDebugClock(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		before := time.Now()
		now, err := c.Time(ctx).Result()
		require.NoError(t, err)
		require.WithinDuration(t, before, now, 5*time.Second)

		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+123).Err())
		require.Equal(t, time.UnixMilli(testutil.T0+123), c.Time(ctx).Val())
		require.Equal(t, byProto(c, "*2\r\n$10\r\n1700000000\r\n$6\r\n123000\r\n", "*2\r\n$10\r\n1700000000\r\n$6\r\n123000\r\n"),
			rawIn(t, s, c).Do("TIME"))
		require.EqualValues(t, testutil.T0+123, c.Do(ctx, "DEBUG", "CLOCK", "GET").Val())
		require.Equal(t, "OK", c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 1000).Val())
		require.EqualValues(t, testutil.T0+1123, c.Do(ctx, "DEBUG", "CLOCK", "GET").Val())
		time.Sleep(5 * time.Millisecond)
		require.EqualValues(t, testutil.T0+1123, c.Do(ctx, "DEBUG", "CLOCK", "GET").Val(), "a frozen clock stays put")

		require.EqualError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", -1).Err(), "ERR DEBUG CLOCK ADVANCE cannot move the clock backwards")
		require.EqualError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", "x").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", -5).Err(), "ERR DEBUG CLOCK SET needs a Unix time in milliseconds that is not negative")
		require.EqualError(t, c.Do(ctx, "DEBUG", "CLOCK", "FOO").Err(), "ERR unknown subcommand or wrong number of arguments for 'CLOCK FOO'. Try DEBUG HELP.")
		require.EqualError(t, c.Do(ctx, "DEBUG", "CLOCK").Err(), "ERR unknown subcommand or wrong number of arguments for 'CLOCK'. Try DEBUG HELP.")
		require.EqualValues(t, testutil.T0+1123, c.Do(ctx, "DEBUG", "CLOCK", "GET").Val())

		require.Equal(t, "OK", c.Do(ctx, "DEBUG", "CLOCK", "RESET").Val())
		require.WithinDuration(t, time.Now(), c.Time(ctx).Val(), 5*time.Second)
		require.EqualError(t, c.Do(ctx, "TIME", "x").Err(), "ERR wrong number of arguments for 'time' command")
	})
}

func TestDebugClockStepsExpiryInsideAPipeline(t *testing.T) {
	// The clock change must reach the commands queued behind it in the same read batch.
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0)
			p.Set(ctx, "k", "v", 1500*time.Millisecond)
			p.Get(ctx, "k")
			p.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 1499)
			p.Get(ctx, "k")
			p.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 1)
			p.Get(ctx, "k")
			p.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 1)
			p.Get(ctx, "k")
			return nil
		})
		require.ErrorIs(t, err, redis.Nil)
		require.Equal(t, "v", cmds[2].(*redis.StringCmd).Val())
		require.Equal(t, "v", cmds[4].(*redis.StringCmd).Val())
		require.Equal(t, "v", cmds[6].(*redis.StringCmd).Val(), "a key lives through its expire time's millisecond")
		require.ErrorIs(t, cmds[8].Err(), redis.Nil)

		require.NoError(t, c.Set(ctx, "a", "1", time.Second).Err())
		require.NoError(t, c.Set(ctx, "b", "1", 0).Err())
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 5000).Err())
		n, err := c.Do(ctx, "DEBUG", "EXPIRE-NOW").Int()
		require.NoError(t, err)
		require.LessOrEqual(t, n, 1, "the active cycle may have reclaimed it first")
		require.Equal(t, "1", c.Get(ctx, "b").Val())
		require.EqualValues(t, 0, c.Do(ctx, "DEBUG", "EXPIRE-NOW").Val())
	})
}

func TestDebug(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, "OK", c.Do(ctx, "DEBUG", "SLEEP", "0.01").Val())
		require.Equal(t, "OK", c.Do(ctx, "debug", "sleep", "junk").Val(), "junk sleeps for 0 s, as strtod reads it")
		require.EqualError(t, c.Do(ctx, "DEBUG", "SLEEP").Err(), "ERR unknown subcommand or wrong number of arguments for 'SLEEP'. Try DEBUG HELP.")
		require.EqualError(t, c.Do(ctx, "DEBUG", "foo").Err(), "ERR unknown subcommand or wrong number of arguments for 'foo'. Try DEBUG HELP.")
		require.EqualError(t, c.Do(ctx, "DEBUG").Err(), "ERR wrong number of arguments for 'debug' command")

		r := rawIn(t, s, c)
		require.Equal(t, "-hello world\r\n", r.Do("DEBUG", "ERROR", "hello world"))
		require.Equal(t, "-WRONGTYPE x y\r\n", r.Do("DEBUG", "ERROR", "WRONGTYPE x\ny"))

		help, err := c.Do(ctx, "DEBUG", "HELP").StringSlice()
		require.NoError(t, err)
		require.Equal(t, "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", help[0])
		require.Contains(t, help, "CLOCK ADVANCE <ms>")
	})
}

const debugNotAllowed = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."

func TestDebugNeedsEnableDebugCommand(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		for _, args := range [][]any{{"DEBUG", "CLOCK", "GET"}, {"DEBUG", "HELP"}, {"DEBUG", "nosuch"}} {
			require.EqualError(t, c.Do(ctx, args...).Err(), debugNotAllowed, "%v", args)
		}
		require.EqualError(t, c.Do(ctx, "DEBUG").Err(), "ERR wrong number of arguments for 'debug' command")
	}, "--enable-debug-command", "no")

	// "local" admits loopback clients, which is what the test client is, and Unix-socket
	// clients, as Redis's islocalClient.
	path := filepath.Join(t.TempDir(), "hotkv.sock")
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "GET").Err())
		u := redis.NewClient(&redis.Options{Network: "unix", Addr: path, Protocol: 2})
		defer u.Close()
		require.NoError(t, u.Do(ctx, "DEBUG", "CLOCK", "GET").Err())
	}, "--enable-debug-command", "local", "--unixsocket", path)
}

func TestShutdown(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.EqualError(t, c.Do(ctx, "SHUTDOWN", "ABORT").Err(), "ERR No shutdown in progress.")
		for _, args := range [][]any{{"foo"}, {"nosave", "save"}, {"abort", "now"}, {"save", "abort"}} {
			require.EqualError(t, c.Do(ctx, append([]any{"SHUTDOWN"}, args...)...).Err(), "ERR syntax error", "%v", args)
		}
		require.Equal(t, "PONG", c.Ping(ctx).Val(), "failed SHUTDOWNs leave the server up")

		r := rawIn(t, s, c)
		r.Send("*3\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n$3\r\nNOW\r\n")
		require.True(t, r.ReadEOF(), "SHUTDOWN replies nothing and closes")
		select {
		case <-s.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the server did not stop")
		}
	})
}

func TestMemory(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Set(ctx, "key", strings.Repeat("x", 1000), 0).Err())
		require.NoError(t, c.Set(ctx, "n", "12345", 0).Err())
		big, err := c.MemoryUsage(ctx, "key").Result()
		require.NoError(t, err)
		require.Greater(t, big, int64(1003))
		require.Less(t, big, int64(1300))
		small, err := c.MemoryUsage(ctx, "n", 0).Result()
		require.NoError(t, err)
		require.Less(t, small, big-900)
		require.ErrorIs(t, c.MemoryUsage(ctx, "missing").Err(), redis.Nil)
		require.Equal(t, byProto(c, "$-1\r\n", "_\r\n"), rawIn(t, s, c).Do("MEMORY", "USAGE", "missing"))

		require.EqualError(t, c.Do(ctx, "MEMORY", "USAGE", "key", "SAMPLES", "x").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "MEMORY", "USAGE", "key", "SAMPLES", "-1").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "MEMORY", "USAGE", "key", "SAMPLES").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "MEMORY", "USAGE", "missing", "foo").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "MEMORY", "USAGE").Err(), "ERR wrong number of arguments for 'memory|usage' command")

		stats, err := c.Do(ctx, "MEMORY", "STATS").Result()
		require.NoError(t, err)
		fields := map[string]any{}
		if m, ok := stats.(map[any]any); ok {
			for k, v := range m {
				fields[k.(string)] = v
			}
		} else {
			l := stats.([]any)
			for i := 0; i+1 < len(l); i += 2 {
				fields[l[i].(string)] = l[i+1]
			}
		}
		require.EqualValues(t, 2, fields["keys.count"])
		require.Contains(t, fields, "db.0")
		require.Contains(t, fields, "peak.allocated")
		require.Contains(t, fields, "dataset.percentage")

		require.Equal(t, "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n",
			c.Do(ctx, "MEMORY", "DOCTOR").Val())
		require.Contains(t, c.Do(ctx, "MEMORY", "MALLOC-STATS").Val(), "heap_alloc")
		require.Equal(t, "OK", c.Do(ctx, "MEMORY", "PURGE").Val())
		help, err := c.Do(ctx, "MEMORY", "HELP").StringSlice()
		require.NoError(t, err)
		require.Len(t, help, 14)
		require.EqualError(t, c.Do(ctx, "MEMORY", "FOO").Err(), "ERR unknown subcommand 'FOO'. Try MEMORY HELP.")
	})
}

func TestLastSave(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		ts, err := c.LastSave(ctx).Result()
		require.NoError(t, err)
		require.InDelta(t, time.Now().Unix(), ts, 60)
		require.Equal(t, fmt.Sprintf(":%d\r\n", ts), rawIn(t, s, c).Do("LASTSAVE"))
	})
}

// TestDebugObject checks DEBUG OBJECT's line against Redis's format, with the fields HotKV
// computes as Redis does (shared integer refcount, serialized length, idle time).
func TestDebugObject(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Set(ctx, "n", 123, 0).Err())
		require.NoError(t, c.Set(ctx, "s", "hello world", 0).Err())
		line := c.Do(ctx, "DEBUG", "OBJECT", "n").Val().(string)
		require.Regexp(t, `^Value at:0x[0-9a-f]+ refcount:2147483647 encoding:int serializedlength:2 lru:\d+ lru_seconds_idle:\d+$`, line)
		line = c.Do(ctx, "DEBUG", "OBJECT", "s").Val().(string)
		require.Regexp(t, `^Value at:0x[0-9a-f]+ refcount:1 encoding:embstr serializedlength:12 lru:\d+ lru_seconds_idle:0$`, line)
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 5000).Err())
		line = c.Do(ctx, "DEBUG", "OBJECT", "s").Val().(string)
		require.Regexp(t, `lru_seconds_idle:5$`, line)
		require.EqualError(t, c.Do(ctx, "DEBUG", "OBJECT", "nosuchkey").Err(), "ERR no such key")
	})
}

// TestDebugSleepHoldsKeys checks that DEBUG SLEEP stalls every command on keys for its
// duration (as Redis's sleeping server does), while commands without keys still answer.
func TestDebugSleepHoldsKeys(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	other := s.Client(t, 2)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	done := make(chan struct{})
	before := time.Now()
	go func() {
		defer close(done)
		_ = c.Do(ctx, "DEBUG", "SLEEP", "1").Err()
	}()
	time.Sleep(100 * time.Millisecond) // let the sleep take the locks
	require.Equal(t, "PONG", other.Ping(ctx).Val())
	select {
	case <-done:
		t.Fatal("PING waited for the sleep")
	default:
	}
	require.Equal(t, "v", other.Get(ctx, "k").Val())
	require.GreaterOrEqual(t, time.Since(before), time.Second, "GET ran only after the sleep")
	<-done
}

// TestDebugDigest: DEBUG DIGEST is all zeros for an empty dataset and equal on two servers
// that hold the same keys and named limiters whatever order they were written in (big sets
// and hashes included); any change to a value, an expire time or a limiter's state changes
// it, while total_denied (per node in replicated mode) does not.
func TestDebugDigest(t *testing.T) {
	a := testutil.StartServer(t, "--enable-debug-command", "yes")
	b := testutil.StartServer(t, "--enable-debug-command", "yes")
	ca, cb := a.Client(t, 2), b.Client(t, 2)
	digest := func(c *redis.Client) string {
		t.Helper()
		d, err := c.Do(ctx, "DEBUG", "DIGEST").Text()
		require.NoError(t, err)
		require.Len(t, d, 40)
		return d
	}
	require.Equal(t, strings.Repeat("0", 40), digest(ca))
	var cmds [][]any
	for i := range 300 {
		cmds = append(cmds, []any{"SADD", "s", fmt.Sprint("m", i)}, []any{"HSET", "h", fmt.Sprint("f", i), i})
	}
	cmds = append(cmds, []any{"SET", "str", "v", "PXAT", 4102444800000}, []any{"SET", "n", 42},
		[]any{"RPUSH", "l", "a", "b"}, []any{"ZADD", "z", 1, "a", 2, "b"},
		[]any{"RATELIMIT.CREATE", "api", 2, 3600000}, []any{"RATELIMIT.CHECK", "api", "k"},
		[]any{"GCRA.LIMIT", "g", 3600000, 10})
	for _, cmd := range cmds {
		require.NoError(t, ca.Do(ctx, cmd...).Err())
	}
	for i := len(cmds) - 1; i >= 0; i-- {
		cmd := cmds[i]
		if cmd[0] == "RATELIMIT.CREATE" || cmd[0] == "RATELIMIT.CHECK" || cmd[0] == "GCRA.LIMIT" {
			continue // order matters for these: replayed below in the same order
		}
		require.NoError(t, cb.Do(ctx, cmd...).Err())
	}
	require.NoError(t, cb.Do(ctx, "RATELIMIT.CREATE", "api", 2, 3600000).Err())
	require.NoError(t, cb.Do(ctx, "RATELIMIT.CHECK", "api", "k").Err())
	for _, c := range []*redis.Client{ca, cb} {
		// Same times on both servers from here on, so the limiters' states are equal.
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", 1000).Err())
		require.NoError(t, c.Do(ctx, "RATELIMIT.RESET", "api", "k").Err())
		require.NoError(t, c.Do(ctx, "GCRA.RESET", "g").Err())
		for range 2 { // the limit: the key's budget is spent
			require.NoError(t, c.Do(ctx, "RATELIMIT.CHECK", "api", "k").Err())
		}
		require.NoError(t, c.Do(ctx, "GCRA.LIMIT", "g", 3600000, 10).Err())
	}
	da := digest(ca)
	require.NotEqual(t, strings.Repeat("0", 40), da)
	require.Equal(t, da, digest(cb), "same dataset written in another order")

	// total_denied is left out: denials on one server only.
	for range 3 {
		v, err := ca.Do(ctx, "RATELIMIT.CHECK", "api", "k").Slice()
		require.NoError(t, err)
		require.EqualValues(t, 0, v[0], "denied")
	}
	require.Equal(t, da, digest(ca))
	for _, change := range [][]any{{"PEXPIREAT", "str", 4102444800001}, {"SADD", "s", "new"}, {"HSET", "h", "f1", "x"},
		{"RATELIMIT.CHECK", "api", "k2"}, {"GCRA.LIMIT", "g", 3600000, 10}} {
		require.NoError(t, cb.Do(ctx, change...).Err())
		require.NotEqual(t, da, digest(cb), "after %v", change)
		da = digest(cb)
	}
}

// rename-command, as in redis.conf: a command renamed is reachable only by its new name, one
// renamed to "" not at all (its old name is an unknown command), whatever a connection called
// last; a line naming no command or a taken name stops the start, at its line.
func TestRenameCommand(t *testing.T) {
	s := testutil.StartServer(t, "--rename-command", "flushall", "", "--rename-command", "SET", "myset",
		"--rename-command", "config", "cfg-7f3a")
	raw := s.Dial(t)
	require.Equal(t, "+OK\r\n", raw.Do("MYSET", "k", "v"))
	require.Equal(t, "-ERR unknown command 'SET', with args beginning with: 'k' 'w' \r\n", raw.Do("SET", "k", "w"))
	require.Equal(t, "+OK\r\n", raw.Do("myset", "k", "w"))
	require.Equal(t, "-ERR unknown command 'set', with args beginning with: 'k' 'x' \r\n", raw.Do("set", "k", "x"))
	require.Equal(t, "$1\r\nw\r\n", raw.Do("GET", "k"))
	require.Equal(t, "-ERR unknown command 'FLUSHALL', with args beginning with: \r\n", raw.Do("FLUSHALL"))
	require.Equal(t, "-ERR unknown command 'CONFIG', with args beginning with: 'GET' 'port' \r\n", raw.Do("CONFIG", "GET", "port"))
	require.Contains(t, raw.Do("CFG-7F3A", "GET", "maxmemory"), "maxmemory")
	// A script reaches the commands by the same names.
	require.Equal(t, "+OK\r\n", raw.Do("EVAL", "return redis.call('myset', 'k2', 'v')", "0"))
	require.Contains(t, raw.Do("EVAL", "return redis.call('set', 'k2', 'v')", "0"), "Unknown Redis command called from script")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rename-command", "nosuch", "x"}, "No such command in rename-command"},
		{[]string{"--rename-command", "set", "get"}, "Target command name already exists"},
	} {
		_, err := testutil.Launch(t, testutil.Options{Args: tc.args})
		require.Error(t, err, "%v", tc.args)
		require.Contains(t, err.Error(), tc.want)
		require.Contains(t, err.Error(), ">>> 'rename-command ")
	}
}

// DEBUG POPULATE, as in Redis: count string keys prefix:N with values value:N (padded with
// zero bytes or cut to size), existing keys kept; the keys are written like MSET's, so a
// restart from the snapshot or from the append-only log alone brings them back.
func TestDebugPopulate(t *testing.T) {
	raw := testutil.StartServer(t).Dial(t)
	require.Equal(t, "+OK\r\n", raw.Do("SET", "key:1", "mine"))
	require.Equal(t, "+OK\r\n", raw.Do("DEBUG", "POPULATE", "3"))
	require.Equal(t, ":3\r\n", raw.Do("DBSIZE"))
	require.Equal(t, "$7\r\nvalue:0\r\n", raw.Do("GET", "key:0"))
	require.Equal(t, "$4\r\nmine\r\n", raw.Do("GET", "key:1"), "an existing key is kept")
	require.Equal(t, "+OK\r\n", raw.Do("DEBUG", "POPULATE", "2", "p", "10"))
	require.Equal(t, "$10\r\nvalue:1\x00\x00\x00\r\n", raw.Do("GET", "p:1"))
	require.Equal(t, "+OK\r\n", raw.Do("DEBUG", "POPULATE", "1", "q", "3"))
	require.Equal(t, "$3\r\nval\r\n", raw.Do("GET", "q:0"))
	require.Equal(t, "-ERR value is out of range, must be positive\r\n", raw.Do("DEBUG", "POPULATE", "-1"))
	require.Equal(t, "-ERR value is out of range, must be positive\r\n", raw.Do("DEBUG", "POPULATE", "1", "x", "-5"))

	restartThroughEachWay(t, func(t *testing.T, c *redis.Client) {
		require.NoError(t, c.Do(ctx, "DEBUG", "POPULATE", 2500, "k", 12).Err())
	}, func(t *testing.T, c *redis.Client) []string {
		return []string{fmt.Sprint(c.DBSize(ctx).Val()), c.Get(ctx, "k:0").Val(), c.Get(ctx, "k:2499").Val()}
	}, nil)
}

// CONFIG SET port and bind change the listeners at run time, as in Redis 7: the new port is
// served, the old one closed, connected clients stay; a port that cannot be bound, or
// addresses that cannot, are refused and the server keeps listening where it did.
func TestConfigSetPortAndBind(t *testing.T) {
	s := testutil.StartServer(t) // its own listener, on an ephemeral port, is not `port`'s
	c := s.Client(t, 2)
	reach := func(port int) error {
		nc, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err != nil {
			return err
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(nc).ReadString('\n')
		if err == nil && line != "+PONG\r\n" {
			return fmt.Errorf("PING: %q", line)
		}
		return err
	}
	p1, p2 := freePort(t), freePort(t)
	require.NoError(t, c.ConfigSet(ctx, "port", strconv.Itoa(p1)).Err())
	require.NoError(t, reach(p1))
	kept := testutil.DialAddr(t, "127.0.0.1:"+strconv.Itoa(p1))
	require.Equal(t, "+PONG\r\n", kept.Do("PING"))

	require.NoError(t, c.ConfigSet(ctx, "port", strconv.Itoa(p2)).Err())
	require.NoError(t, reach(p2))
	require.Error(t, reach(p1), "the old port is closed")
	require.Equal(t, "+PONG\r\n", kept.Do("PING"), "a client of the old port stays connected")
	require.Equal(t, strconv.Itoa(p2), c.ConfigGet(ctx, "port").Val()["port"])

	// A port in use: refused, nothing changes.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	require.EqualError(t, c.ConfigSet(ctx, "port", strconv.Itoa(busyPort)).Err(),
		"ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.")
	require.Equal(t, strconv.Itoa(p2), c.ConfigGet(ctx, "port").Val()["port"])
	require.NoError(t, reach(p2))

	// New bind addresses, overlapping the old ones; then ones that cannot be bound.
	require.NoError(t, c.ConfigSet(ctx, "bind", "127.0.0.1").Err())
	require.NoError(t, reach(p2))
	require.EqualError(t, c.ConfigSet(ctx, "bind", "127.0.0.1 192.0.2.1").Err(),
		"ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses.")
	require.Equal(t, "127.0.0.1", c.ConfigGet(ctx, "bind").Val()["bind"])
	require.NoError(t, reach(p2), "the old addresses are listened on again")

	require.NoError(t, c.ConfigSet(ctx, "port", "0").Err())
	require.Error(t, reach(p2))
	require.Equal(t, "+PONG\r\n", kept.Do("PING"))
}

// Renamed commands are still what the append-only log holds and replays, and what the server's
// own clients send: a restart with the same renames brings every write back, as Redis's AOF
// loading looks commands up by their original names too (lookupCommandOrOriginal).
func TestRenameCommandAndTheLog(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--appendonly", "yes", "--appendfsync", "always", "--rename-command", "set", "myset",
		"--rename-command", "del", "", "--rename-command", "multi", "tx-begin", "--rename-command", "exec", "tx-end",
		"--rename-command", "incr", "bump"}
	s, err := testutil.Launch(t, testutil.Options{Dir: dir, Args: args})
	require.NoError(t, err)
	raw := s.Dial(t)
	require.Equal(t, "+OK\r\n", raw.Do("MYSET", "k", "v"))
	require.Equal(t, "+OK\r\n", raw.Do("MYSET", "gone", "x", "PX", "1"))
	require.Equal(t, "+OK\r\n", raw.Do("TX-BEGIN"))
	require.Equal(t, "+QUEUED\r\n", raw.Do("MYSET", "t1", "a"))
	require.Equal(t, "+QUEUED\r\n", raw.Do("BUMP", "n"))
	require.Equal(t, "*2\r\n+OK\r\n:1\r\n", raw.Do("TX-END"))
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, "$-1\r\n", raw.Do("GET", "gone")) // expired: journaled as DEL, which clients cannot call
	require.NoError(t, s.Close())

	s2, err := testutil.Launch(t, testutil.Options{Dir: dir, Args: args})
	require.NoError(t, err)
	raw2 := s2.Dial(t)
	for k, want := range map[string]string{"k": "$1\r\nv\r\n", "t1": "$1\r\na\r\n", "n": "$1\r\n1\r\n", "gone": "$-1\r\n"} {
		require.Equal(t, want, raw2.Do("GET", k), "key %s after the restart", k)
	}
	require.Equal(t, ":3\r\n", raw2.Do("DBSIZE"))
	require.NoError(t, s2.Close())

	// The log names the commands by their own names: a restart without the renames (or a
	// replica without them) replays the same writes.
	s3, err := testutil.Launch(t, testutil.Options{Dir: dir, Args: []string{"--appendonly", "yes"}})
	require.NoError(t, err)
	raw3 := s3.Dial(t)
	require.Equal(t, "$1\r\n1\r\n", raw3.Do("GET", "n"))
	require.Equal(t, ":3\r\n", raw3.Do("DBSIZE"))
}

// TestModule: HotKV loads no Redis modules, and MODULE answers as a Redis with none: an empty
// LIST, and LOAD, LOADEX and UNLOAD refused by enable-module-command (default no) or, where
// allowed, failing with Redis's errors.
func TestModule(t *testing.T) {
	const notAllowed = "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, []any{}, c.Do(ctx, "MODULE", "LIST").Val())
		for _, args := range [][]any{{"MODULE", "LOAD", "/tmp/x.so"}, {"MODULE", "LOADEX", "/tmp/x.so"}, {"MODULE", "UNLOAD", "x"}} {
			require.EqualError(t, c.Do(ctx, args...).Err(), notAllowed, "%v", args)
		}
		require.Contains(t, c.Do(ctx, "MODULE", "HELP").String(), "Return a list of loaded modules.")
	})
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.EqualError(t, c.Do(ctx, "MODULE", "LOAD", "/tmp/x.so", "arg").Err(), "ERR Error loading the extension. Please check the server logs.")
		require.EqualError(t, c.Do(ctx, "MODULE", "UNLOAD", "x").Err(), "ERR Error unloading module: no such module with that name")
		require.Equal(t, []any{}, c.Do(ctx, "MODULE", "LIST").Val())
	}, "--enable-module-command", "local")
}
