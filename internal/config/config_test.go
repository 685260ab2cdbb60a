package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSaveDirective(t *testing.T) {
	c := New(Directives())
	if got := c.Get("save"); got != "3600 1 300 100 60 10000" {
		t.Fatalf("default save %q, want Redis 7's", got)
	}
	if got := SavePoints(c.Get("save")); len(got) != 3 || got[2] != (SavePoint{Seconds: 60, Changes: 10000}) {
		t.Fatalf("SavePoints: %+v", got)
	}
	for _, ok := range []struct{ in, want string }{{"", ""}, {"900 1", "900 1"}, {"+5 0", "5 0"}, {"1 0 2 3", "1 0 2 3"}} {
		if err := c.Set([][2]string{{"save", ok.in}}, true); err != nil || c.Get("save") != ok.want {
			t.Fatalf("CONFIG SET save %q: %v, now %q", ok.in, err, c.Get("save"))
		}
	}
	for _, bad := range []string{"abc", "1 2 3", "0 1", "5 -1", "  ", "1  2", "1 x"} {
		err := c.Set([][2]string{{"save", bad}}, true)
		if err == nil || !strings.HasSuffix(err.Error(), "Invalid save parameters") {
			t.Fatalf("CONFIG SET save %q: %v", bad, err)
		}
	}
}

func TestProtectedDirectives(t *testing.T) {
	c := New(Directives())
	for _, name := range []string{"dir", "dbfilename"} {
		err := c.Set([][2]string{{name, "x"}}, true)
		if err == nil || err.Error() != "CONFIG SET failed (possibly related to argument '"+name+"') - can't set protected config" {
			t.Fatalf("CONFIG SET %s: %v", name, err)
		}
		if err := c.Set([][2]string{{name, "x"}}, false); err != nil {
			t.Fatalf("startup %s: %v", name, err)
		}
	}
	if err := c.Set([][2]string{{"dbfilename", "a/b"}}, false); err == nil || !strings.Contains(err.Error(), "can't be a path") {
		t.Fatalf("dbfilename a/b: %v", err)
	}
}

// TestSaveLinesAccumulate: as in redis.conf, several save lines add up, the first replacing the
// default, and save "" clears what came before.
func TestSaveLinesAccumulate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hotkv.conf")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("save 900 1\nsave 300 10\n")
	c, err := Load(Directives(), []string{file, "--save", "60 10000"})
	if err != nil || c.Get("save") != "900 1 300 10 60 10000" {
		t.Fatalf("accumulated save: %v %q", err, c.Get("save"))
	}
	write("save 900 1\nsave \"\"\nsave 10 1\n")
	if c, err = Load(Directives(), []string{file}); err != nil || c.Get("save") != "10 1" {
		t.Fatalf("save after save \"\": %v %q", err, c.Get("save"))
	}
	if c, err = Load(Directives(), []string{"--save", ""}); err != nil || c.Get("save") != "" {
		t.Fatalf("--save \"\": %v %q", err, c.Get("save"))
	}
	if c, err = Load(Directives(), []string{"--port", "1"}); err != nil || c.Get("save") != "3600 1 300 100 60 10000" {
		t.Fatalf("no save line keeps the default: %v %q", err, c.Get("save"))
	}
}

// TestParseArgsLikeRedis checks redis-server 7.0's reading of the command line (its main()):
// values run until the next --option, "--name value" in one argument, values starting with
// "--" while a name waits for its value, a bare word after a complete option, and --save
// with nothing after it.
func TestParseArgsLikeRedis(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want [][2]string
	}{
		{[]string{"--port", "6380", "--save", "900", "1", "300", "10"}, [][2]string{{"port", "6380"}, {"save", "900 1 300 10"}}},
		{[]string{"--maxmemory 700mb", "--maxmemory-policy volatile-lru"}, [][2]string{{"maxmemory", "700mb"}, {"maxmemory-policy", "volatile-lru"}}},
		{[]string{"hotkv.conf", "loglevel", "verbose", "--maxmemory '700mb'"}, [][2]string{{"loglevel", "verbose"}, {"maxmemory", "700mb"}}},
		{[]string{"hotkv.conf", "--logfile", "--my--log--file", "--loglevel", "debug"}, [][2]string{{"logfile", "--my--log--file"}, {"loglevel", "debug"}}},
		{[]string{"--save", "--loglevel", "verbose"}, [][2]string{{"save", ""}, {"loglevel", "verbose"}}},
		{[]string{"--loglevel", "verbose", "--save"}, [][2]string{{"loglevel", "verbose"}, {"save", ""}}},
		{[]string{"--save", "", "--loglevel", "verbose"}, [][2]string{{"save", ""}, {"loglevel", "verbose"}}},
		{[]string{"--requirepass", "a b\"c"}, [][2]string{{"requirepass", "a b\"c"}}},
	} {
		_, got, err := ParseArgs(tc.argv)
		if err != nil {
			t.Fatalf("%q: %v", tc.argv, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q: got %q, want %q", tc.argv, got, tc.want)
		}
	}
	if _, _, err := ParseArgs([]string{"--port"}); err == nil || !strings.Contains(err.Error(), "'port'\nwrong number of arguments") {
		t.Errorf("--port alone: %v", err)
	}
}

// TestRaftPeerAddr: raft-peer-addr lines accumulate into id/address pairs; odd counts, bad
// addresses and a node named twice are refused.
func TestRaftPeerAddr(t *testing.T) {
	c, err := Load(Directives(), []string{"--raft-peer-addr", "n2 127.0.0.1:7102", "--raft-peer-addr", "n3", "127.0.0.1:7103"})
	if err != nil {
		t.Fatal(err)
	}
	got := PeerAddrs(c.Get("raft-peer-addr"))
	if len(got) != 2 || got["n2"] != "127.0.0.1:7102" || got["n3"] != "127.0.0.1:7103" {
		t.Fatalf("PeerAddrs = %v (value %q)", got, c.Get("raft-peer-addr"))
	}
	if PeerAddrs("") != nil {
		t.Fatal("an empty raft-peer-addr has overrides")
	}
	for _, bad := range [][]string{{"--raft-peer-addr", "n2"}, {"--raft-peer-addr", "n2 nohost"},
		{"--raft-peer-addr", "n2 127.0.0.1:0"}, {"--raft-peer-addr", "n2 h:1 n2 h:2"}} {
		if _, err := Load(Directives(), bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
