package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// TestACLRestrictedUser runs commands as a user with command, key and selector rules.
func TestACLRestrictedUser(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			s := testutil.StartServer(t)
			admin := s.Client(t, proto)
			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "alice", "on", ">pw", "~app:*", "-@all", "+@string", "+@connection", "+acl|whoami",
				"(%R~shared:* +get +mget)").Err())
			require.NoError(t, admin.Set(ctx, "shared:1", "s", 0).Err())
			c := userClient(t, s, proto, "alice", "pw")
			require.Equal(t, "alice", c.Do(ctx, "ACL", "WHOAMI").Val())
			require.NoError(t, c.Set(ctx, "app:1", "v", 0).Err())
			require.Equal(t, "v", c.Get(ctx, "app:1").Val())
			require.EqualValues(t, 2, c.Incr(ctx, "app:n").Val()+1)
			require.EqualError(t, c.Set(ctx, "other", "v", 0).Err(), "NOPERM this user has no permissions to access one of the keys used as arguments")
			require.EqualError(t, c.HSet(ctx, "app:h", "f", "v").Err(), "NOPERM this user has no permissions to run the 'hset' command")
			require.EqualError(t, c.Do(ctx, "CONFIG", "GET", "x").Err(), "NOPERM this user has no permissions to run the 'config|get' command")
			// The selector lets alice read shared keys, only with GET and MGET.
			require.Equal(t, "s", c.Get(ctx, "shared:1").Val())
			require.Equal(t, []any{"s"}, c.MGet(ctx, "shared:1").Val())
			// Selectors are not additive: one of them must allow the whole command.
			require.Error(t, c.MGet(ctx, "app:1", "shared:1").Err())
			require.EqualError(t, c.Set(ctx, "shared:1", "x", 0).Err(), "NOPERM this user has no permissions to access one of the keys used as arguments")
			require.EqualError(t, c.StrLen(ctx, "shared:1").Err(), "NOPERM this user has no permissions to access one of the keys used as arguments")
			// MSET spans keys: one forbidden key denies the whole command.
			require.Error(t, c.MSet(ctx, "app:2", "a", "other", "b").Err())
			require.EqualValues(t, 0, admin.Exists(ctx, "app:2").Val())

			// The denials are in the log, newest first, and counted.
			entries := aclLog(t, admin, 3)
			require.Equal(t, "key", entries[0]["reason"])
			require.Equal(t, "other", entries[0]["object"])
			require.Equal(t, "alice", entries[0]["username"])
			require.Equal(t, "key", entries[1]["reason"])
			require.Equal(t, "shared:1", entries[1]["object"])
			require.Equal(t, "command", entries[2]["reason"])
			require.Equal(t, "config|get", entries[2]["object"])
			require.Contains(t, entries[2]["client-info"], " user=alice ")
			info := admin.Info(ctx, "stats").Val()
			require.Contains(t, info, "acl_access_denied_cmd:2\r\n")
			require.Contains(t, info, "acl_access_denied_key:5\r\n")

			// Rules change under a live connection at once.
			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "alice", "-incr").Err())
			require.EqualError(t, c.Incr(ctx, "app:n").Err(), "NOPERM this user has no permissions to run the 'incr' command")
			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "alice", "+incr", "-get").Err())
			// The root selector denies the command, the other one the key: the key is what
			// gets reported, Redis's choice of the most specific denial.
			require.EqualError(t, c.Get(ctx, "app:1").Err(), "NOPERM this user has no permissions to access one of the keys used as arguments")
			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "alice", "+get", "allkeys").Err())
			require.Equal(t, "s", c.Get(ctx, "shared:1").Val())
		})
	}
}

// TestACLTransactions: a denied command inside MULTI aborts the transaction; a command allowed
// when queued but not at EXEC gets Redis's "rules changed" error while the others run.
func TestACLTransactions(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			s := testutil.StartServer(t)
			admin := s.Client(t, proto)
			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "bob", "on", "nopass", "~*", "+@all", "-flushall").Err())
			r := rawProto(t, s, proto, "bob", "x")
			require.Equal(t, "+OK\r\n", r.Do("MULTI"))
			require.Equal(t, "-NOPERM this user has no permissions to run the 'flushall' command\r\n", r.Do("FLUSHALL"))
			require.Equal(t, "+QUEUED\r\n", r.Do("SET", "a", "1"))
			require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", r.Do("EXEC"))
			require.EqualValues(t, 0, admin.Exists(ctx, "a").Val())

			require.Equal(t, "+OK\r\n", r.Do("MULTI"))
			require.Equal(t, "+QUEUED\r\n", r.Do("SET", "a", "1"))
			require.Equal(t, "+QUEUED\r\n", r.Do("INCR", "n"))
			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "bob", "-set").Err())
			require.Equal(t, "*2\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n:1\r\n",
				r.Do("EXEC"))
			entries := aclLog(t, admin, 1)
			require.Equal(t, "multi", entries[0]["context"])
			require.Equal(t, "set", entries[0]["object"])

			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "bob", "+set", "resetkeys", "~n").Err())
			require.Equal(t, "+OK\r\n", r.Do("MULTI"))
			require.Equal(t, "+QUEUED\r\n", r.Do("INCR", "n"))
			require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "bob", "resetkeys", "~other").Err())
			require.Equal(t, "*1\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to touch the specified keys\r\n",
				r.Do("EXEC"))
			require.Equal(t, "1", admin.Get(ctx, "n").Val())
		})
	}
}

// TestACLDeleteUserDisconnects: deleting a user closes its connections; the client that
// deletes its own user gets the reply first.
func TestACLDeleteUserDisconnects(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			s := testutil.StartServer(t)
			admin := s.Dial(t)
			require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "carol", "on", ">pw", "+@all", "~*"))
			other := rawProto(t, s, proto, "carol", "pw")
			self := rawProto(t, s, proto, "carol", "pw")
			require.Contains(t, admin.Do("CLIENT", "LIST"), " user=carol ")
			require.Equal(t, ":1\r\n", self.Do("ACL", "DELUSER", "carol", "nobody"))
			require.True(t, self.ReadEOF())
			require.True(t, other.ReadEOF())
			require.Equal(t, "$-1\r\n", admin.Do("ACL", "GETUSER", "carol"))
			require.NotContains(t, admin.Do("CLIENT", "LIST"), "user=carol")

			// Turning a user off keeps its connections, as in Redis; new logins fail.
			require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "dave", "on", ">pw", "+@all", "~*"))
			d := rawProto(t, s, proto, "dave", "pw")
			require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "dave", "off"))
			require.Equal(t, "+PONG\r\n", d.Do("PING"))
			require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", s.Dial(t).Do("AUTH", "dave", "pw"))

			// CLIENT KILL USER knows the users.
			require.Equal(t, ":1\r\n", admin.Do("CLIENT", "KILL", "USER", "dave"))
			require.True(t, d.ReadEOF())
			require.Equal(t, "-ERR No such user 'ghost'\r\n", admin.Do("CLIENT", "KILL", "USER", "ghost"))
		})
	}
}

// TestACLDefaultUserOff: with the default user off, new connections must authenticate as
// another user; HELLO AUTH does it even when the default user may run nothing.
func TestACLDefaultUserOff(t *testing.T) {
	s := testutil.StartServer(t)
	admin := s.Dial(t)
	require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "admin", "on", ">apw", "+@all", "~*", "&*"))
	require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "default", "off", "-@all"))
	n := s.Dial(t)
	require.Equal(t, "-NOAUTH Authentication required.\r\n", n.Do("PING"))
	require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", n.Do("AUTH", "default", "x"))
	reply := n.Do("HELLO", "3", "AUTH", "admin", "apw")
	require.True(t, strings.HasPrefix(reply, "%7\r\n"), reply)
	require.Equal(t, "$5\r\nadmin\r\n", n.Do("ACL", "WHOAMI"))
	// RESET goes back to the default user, unauthenticated now.
	require.Equal(t, "+RESET\r\n", n.Do("RESET"))
	require.Equal(t, "-NOAUTH Authentication required.\r\n", n.Do("ACL", "WHOAMI"))
	require.Equal(t, "+OK\r\n", n.Do("AUTH", "admin", "apw"))
	require.Equal(t, "+OK\r\n", n.Do("ACL", "SETUSER", "default", "on", "nopass", "+@all"))
	require.Equal(t, "+PONG\r\n", s.Dial(t).Do("PING"))
}

// TestACLFile loads users from aclfile at startup, saves them with ACL SAVE and reloads them
// with ACL LOAD, which replaces every user at once or, on any error, none.
func TestACLFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "users.acl")
	require.NoError(t, os.WriteFile(file, []byte("user alice on >alicepw ~* &* +@all\n\nuser bob on nopass ~bob:* -@all +get +set\n"), 0o644))
	s := testutil.StartServer(t, "--aclfile", file)
	admin := s.Dial(t)
	require.Equal(t, "*3\r\n$5\r\nalice\r\n$3\r\nbob\r\n$7\r\ndefault\r\n", admin.Do("ACL", "USERS"))
	require.Equal(t, "+OK\r\n", s.Dial(t).Do("AUTH", "alice", "alicepw"))
	bob := s.Dial(t)
	require.Equal(t, "+OK\r\n", bob.Do("AUTH", "bob", "x"))

	require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "carol", "on", ">c", "~c*", "+@read", "(~x +set)"))
	require.Equal(t, "+OK\r\n", admin.Do("ACL", "SAVE"))
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	want := "user alice on #" + sha256Hex("alicepw") + " ~* &* +@all\n" +
		"user bob on nopass ~bob:* resetchannels -@all +get +set\n" +
		"user carol on #" + sha256Hex("c") + " ~c* resetchannels -@all +@read (~x resetchannels -@all +set)\n" +
		"user default on nopass ~* &* +@all\n"
	require.Equal(t, want, string(data))
	require.Equal(t, "+OK\r\n", admin.Do("ACL", "LOAD"))
	require.Equal(t, "*4\r\n$5\r\nalice\r\n$3\r\nbob\r\n$5\r\ncarol\r\n$7\r\ndefault\r\n", admin.Do("ACL", "USERS"))
	// ACL LOAD makes new users: connections authenticated as the old ones are closed.
	require.True(t, bob.ReadEOF())

	// A broken file changes nothing and says why, line by line.
	require.NoError(t, os.WriteFile(file, []byte("user alice on nopass +@all\nuser alice off\nnotauser x\nuser bob +nosuch %Q~x\n"), 0o644))
	require.Equal(t, "-ERR WARNING: Duplicate user 'alice' found on line 2. "+file+":3 should start with user keyword followed by the username. "+
		file+":4: Error in applying operation '+nosuch': Unknown command or category name in ACL. "+file+":4: Syntax error. "+
		"WARNING: ACL errors detected, no change to the previously active ACL rules was performed\r\n", admin.Do("ACL", "LOAD"))
	require.Equal(t, "*4\r\n$5\r\nalice\r\n$3\r\nbob\r\n$5\r\ncarol\r\n$7\r\ndefault\r\n", admin.Do("ACL", "USERS"))

	// A file that does not define the default user gives it its initial rules back.
	require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "default", "-flushall"))
	require.NoError(t, os.WriteFile(file, []byte("user zed on nopass +@all ~*\n"), 0o644))
	require.Equal(t, "+OK\r\n", admin.Do("ACL", "LOAD"))
	require.Equal(t, "*2\r\n$34\r\nuser default on nopass ~* &* +@all\r\n$41\r\nuser zed on nopass ~* resetchannels +@all\r\n", admin.Do("ACL", "LIST"))
	require.NoError(t, os.Remove(file))
	require.Equal(t, "-ERR Error loading ACLs, opening file '"+file+"': No such file or directory\r\n", admin.Do("ACL", "LOAD"))
}

func TestACLStartupErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.acl")
	require.NoError(t, os.WriteFile(bad, []byte("user a on +nosuch\n"), 0o644))
	_, err := testutil.Launch(t, testutil.Options{Args: []string{"--aclfile", bad}})
	require.EqualError(t, err, "Aborting Redis startup because of ACL errors: "+bad+":1: Error in applying operation '+nosuch': Unknown command or category name in ACL. WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
	_, err = testutil.Launch(t, testutil.Options{Args: []string{"--aclfile", filepath.Join(dir, "missing.acl")}})
	require.ErrorContains(t, err, "Aborting Redis startup because of ACL errors: Error loading ACLs, opening file")
	_, err = testutil.Launch(t, testutil.Options{Args: []string{"--aclfile", bad, "--user", "x on"}})
	require.ErrorContains(t, err, "please define either an ACL file or declare users directly in your redis.conf, but not both")
	_, err = testutil.Launch(t, testutil.Options{Args: []string{"--user", "foo", "--user", "foo"}})
	require.ErrorContains(t, err, "Error in user declaration 'foo': Duplicate user found. A user can only be defined once in config files")
	_, err = testutil.Launch(t, testutil.Options{Args: []string{"--user", "foo on %Q~x"}})
	require.ErrorContains(t, err, "Error in user declaration")
}

// TestACLConfigUsers: `user` lines in the config file declare users; one for the default user
// resets it first (so it shows sanitize-payload, as in Redis).
func TestACLConfigUsers(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "hotkv.conf")
	require.NoError(t, os.WriteFile(conf, []byte("user default on nopass ~* +@all -flushdb\nuser worker on >wpw ~jobs:* +@list +ping\n"), 0o644))
	pairs, err := configFilePairs(conf)
	require.NoError(t, err)
	s := testutil.StartServer(t, pairs...)
	c := s.Client(t, 2)
	require.EqualError(t, c.FlushDB(ctx).Err(), "NOPERM this user has no permissions to run the 'flushdb' command")
	require.Equal(t, []any{"user default on nopass sanitize-payload ~* resetchannels +@all -flushdb", "user worker on #" + sha256Hex("wpw") + " ~jobs:* resetchannels -@all +@list +ping"},
		c.Do(ctx, "ACL", "LIST").Val())
	w := userClient(t, s, 3, "worker", "wpw")
	require.EqualValues(t, 1, w.LPush(ctx, "jobs:1", "x").Val())
	require.Error(t, w.Get(ctx, "jobs:1").Err())
}

// configFilePairs turns a config file's `user` lines into --user flags, for the in-process
// server (which takes flags only).
func configFilePairs(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		name, rest, _ := strings.Cut(l, " ")
		out = append(out, "--"+name, rest)
	}
	return out, nil
}

// TestACLLogBehaviour: repeats within a minute are counted in one entry, the log keeps
// acllog-max-len entries, LOG takes a count, RESET empties it.
func TestACLLogBehaviour(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Do(ctx, "ACL", "SETUSER", "eve", "on", "nopass", "-@all", "+set", "~e*").Err())
		e := userClient(t, s, 2, "eve", "x")
		for i := 0; i < 3; i++ {
			require.Error(t, e.Get(ctx, "e1").Err())
		}
		entries := aclLog(t, c, -1)
		require.Len(t, entries, 1)
		require.EqualValues(t, 3, entries[0]["count"])
		require.Equal(t, "toplevel", entries[0]["context"])
		switch age := entries[0]["age-seconds"].(type) { // a double: a bulk string in RESP2
		case float64:
			require.GreaterOrEqual(t, age, 0.0)
		case string:
			require.Regexp(t, `^\d+(\.\d+)?$`, age)
		default:
			t.Fatalf("age-seconds is %T", age)
		}
		require.NoError(t, c.ConfigSet(ctx, "acllog-max-len", "2").Err())
		for _, k := range []string{"x1", "x2", "x3"} {
			require.Error(t, e.Set(ctx, k, "v", 0).Err())
		}
		entries = aclLog(t, c, -1)
		require.Len(t, entries, 2)
		require.Equal(t, "x3", entries[0]["object"])
		require.Equal(t, "x2", entries[1]["object"])
		require.Len(t, aclLog(t, c, 1), 1)
		require.Len(t, aclLog(t, c, 0), 0)
		require.Equal(t, "OK", c.Do(ctx, "ACL", "LOG", "RESET").Val())
		require.Len(t, aclLog(t, c, -1), 0)
	})
}

// TestACLGetUser checks ACL GETUSER's reply shape in both protocols (flags is a set in RESP3).
func TestACLGetUser(t *testing.T) {
	s := testutil.StartServer(t)
	r := s.Dial(t)
	require.Equal(t, "+OK\r\n", r.Do("ACL", "SETUSER", "g", "on", ">p", "~a", "%R~b", "&c", "+get", "(~x +set)"))
	h := sha256Hex("p")
	require.Equal(t, "*12\r\n$5\r\nflags\r\n*1\r\n$2\r\non\r\n$9\r\npasswords\r\n*1\r\n$64\r\n"+h+"\r\n"+
		"$8\r\ncommands\r\n$10\r\n-@all +get\r\n$4\r\nkeys\r\n$7\r\n~a %R~b\r\n$8\r\nchannels\r\n$2\r\n&c\r\n"+
		"$9\r\nselectors\r\n*1\r\n*6\r\n$8\r\ncommands\r\n$10\r\n-@all +set\r\n$4\r\nkeys\r\n$2\r\n~x\r\n$8\r\nchannels\r\n$0\r\n\r\n",
		r.Do("ACL", "GETUSER", "g"))
	r.Do("HELLO", "3")
	require.Equal(t, "%6\r\n$5\r\nflags\r\n~1\r\n$2\r\non\r\n$9\r\npasswords\r\n*1\r\n$64\r\n"+h+"\r\n"+
		"$8\r\ncommands\r\n$10\r\n-@all +get\r\n$4\r\nkeys\r\n$7\r\n~a %R~b\r\n$8\r\nchannels\r\n$2\r\n&c\r\n"+
		"$9\r\nselectors\r\n*1\r\n%3\r\n$8\r\ncommands\r\n$10\r\n-@all +set\r\n$4\r\nkeys\r\n$2\r\n~x\r\n$8\r\nchannels\r\n$0\r\n\r\n",
		r.Do("ACL", "GETUSER", "g"))
	require.Equal(t, "_\r\n", r.Do("ACL", "GETUSER", "nobody"))
}

// TestACLCatRateLimit: HotKV's own @ratelimit category is listed and holds the rate-limit
// commands, and rules can name it.
func TestACLCatRateLimit(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	cats, err := c.Do(ctx, "ACL", "CAT").StringSlice()
	require.NoError(t, err)
	require.Equal(t, "scripting", cats[20])
	require.Contains(t, cats[21:], "ratelimit")
	cmds, err := c.Do(ctx, "ACL", "CAT", "ratelimit").StringSlice()
	require.NoError(t, err)
	for _, want := range []string{"gcra.limit", "cl.throttle", "ratelimit.check", "ratelimit.create"} {
		require.Contains(t, cmds, want)
	}
	require.NotContains(t, cmds, "get")
	require.NoError(t, c.Do(ctx, "ACL", "SETUSER", "limiter", "on", "nopass", "-@all", "+@ratelimit", "~rl:*").Err())
	require.Equal(t, "OK", c.Do(ctx, "ACL", "DRYRUN", "limiter", "GCRA.LIMIT", "rl:1", "1000", "10").Val())
	require.Equal(t, "This user has no permissions to run the 'get' command", c.Do(ctx, "ACL", "DRYRUN", "limiter", "GET", "rl:1").Val())
	require.Equal(t, "This user has no permissions to access the 'x' key", c.Do(ctx, "ACL", "DRYRUN", "limiter", "GCRA.LIMIT", "x", "1000", "10").Val())
	list, err := c.Do(ctx, "ACL", "LIST").StringSlice()
	require.NoError(t, err)
	require.Equal(t, "user limiter on nopass ~rl:* resetchannels -@all +@ratelimit", list[1])
}

// TestACLRevokedChannelsDisconnect: when a user loses channel permissions, its subscribers
// holding a subscription no longer allowed are disconnected, the others kept (Redis's
// ACLKillPubsubClientsIfNeeded). The subscriptions come from the Pub/Sub code through
// Client.PubSubState; here the test provides them.
func TestACLRevokedChannelsDisconnect(t *testing.T) {
	s := testutil.StartServer(t)
	admin := s.Dial(t)
	require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "sub", "on", "nopass", "+@all", "resetchannels", "&news.*", "&sport"))
	subs := map[string]*testutil.Raw{}
	for _, name := range []string{"chan", "pat", "idle"} {
		r := rawProto(t, s, 2, "sub", "x")
		require.Equal(t, "+OK\r\n", r.Do("CLIENT", "SETNAME", name))
		subs[name] = r
	}
	for _, cl := range s.Clients() {
		switch cl.Name {
		case "chan":
			cl.PubSubState = func() ([]string, []string, []string) { return []string{"news.tech"}, nil, nil }
		case "pat":
			cl.PubSubState = func() ([]string, []string, []string) { return nil, nil, []string{"sport"} }
		case "idle":
			cl.PubSubState = func() ([]string, []string, []string) { return nil, nil, nil }
		}
	}
	// Still a superset: nobody is touched.
	require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "sub", "&more"))
	require.Equal(t, "+PONG\r\n", subs["chan"].Do("PING"))
	// news.* goes: the channel subscriber goes with it; the pattern "sport" is kept literally.
	require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "sub", "resetchannels", "&sport", "&more"))
	require.True(t, subs["chan"].ReadEOF())
	require.Equal(t, "+PONG\r\n", subs["pat"].Do("PING"))
	require.Equal(t, "+PONG\r\n", subs["idle"].Do("PING"))
	// A pattern subscription needs the very same pattern among the rules.
	require.Equal(t, "+OK\r\n", admin.Do("ACL", "SETUSER", "sub", "resetchannels", "&s*"))
	require.True(t, subs["pat"].ReadEOF())
	require.Equal(t, "+PONG\r\n", subs["idle"].Do("PING"))
}

// TestACLInsideScripts: a script runs with its caller's permissions; a denied redis.call fails
// with Redis's message and is logged with the lua context.
func TestACLInsideScripts(t *testing.T) {
	s := testutil.StartServer(t)
	admin := s.Client(t, 2)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "scripter", "on", ">pw", "~allowed*", "+eval", "+get", "+set").Err())
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "scripter", Password: "pw"})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Eval(ctx, "return redis.call('set', KEYS[1], 'v')", []string{"allowed:1"}).Err())
	// A declared key the user may not touch fails EVAL itself; an undeclared one, the call.
	require.ErrorContains(t, c.Eval(ctx, "return 1", []string{"other"}).Err(), "NOPERM")
	err := c.Eval(ctx, "return redis.call('set', 'other', 'v')", nil).Err()
	require.ErrorContains(t, err, "The user executing the script can't access at least one of the keys mentioned in the command arguments")
	err = c.Eval(ctx, "return redis.call('del', KEYS[1])", []string{"allowed:1"}).Err()
	require.ErrorContains(t, err, "The user executing the script can't run this command or subcommand")
	entries, err := admin.Do(ctx, "ACL", "LOG", "1").Slice()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Contains(t, fmt.Sprint(entries[0]), "lua")
}
