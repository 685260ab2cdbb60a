package command

import (
	"testing"

	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// How each write command is journaled (effects.go): as its own arguments by the dispatcher, or
// as an effect its handler emits. A write command missing here fails the test: decide which
// it is, and document the decision in effects.go.
var (
	argvEffect = []string{
		"append", "setrange", "setbit", "bitop", "bitfield", "incr", "decr", "incrby", "decrby",
		"mset", "getset", "del", "unlink", "rename", "renamenx", "copy", "move", "persist",
		"flushdb", "flushall", "swapdb",
		"hset", "hmset", "hdel", "hincrby", "hpersist",
		"sadd", "srem", "smove", "sinterstore", "sunionstore", "sdiffstore",
		"zadd", "zrem", "zremrangebyrank", "zremrangebyscore", "zremrangebylex", "zrangestore",
		"zunionstore", "zinterstore", "zdiffstore",
		"lpush", "rpush", "lpushx", "rpushx", "lpop", "rpop", "lset", "linsert", "lrem", "ltrim",
		"lmove", "rpoplpush",
		"xdel", "xack", "xsetid", "xgroup|destroy", "xgroup|createconsumer", "xgroup|delconsumer",
	}
	// pfadd and pfmerge journal their arguments when the HLL is dense and SET key value
	// KEEPTTL when it is sparse (hll.go): listed as emitted, since they may emit.
	emittedEffect = []string{
		"set", "setnx", "msetnx", "setex", "psetex", "getex", "getdel",
		"expire", "pexpire", "expireat", "pexpireat", "incrbyfloat", "hsetnx", "hincrbyfloat", "spop", "lmpop",
		"hexpire", "hpexpire", "hexpireat", "hpexpireat",
		"blpop", "brpop", "blmpop", "blmove", "brpoplpush", "bzpopmin", "bzpopmax", "bzmpop",
		"zincrby", "zpopmin", "zpopmax", "zmpop",
		"geoadd", "georadius", "georadiusbymember", "geosearchstore",
		"pfadd", "pfmerge", "pfdebug", "sort", "restore", "migrate",
		"gcra.limit", "gcra.limitall", "gcra.refund", "cl.throttle", "gcra.reset",
		"ratelimit.create", "ratelimit.update", "ratelimit.check", "ratelimit.reset", "ratelimit.drop", "ratelimit.setstate",
		"ratelimit.release",
		"xadd", "xtrim", "xreadgroup", "xclaim", "xautoclaim", "xgroup|create", "xgroup|setid",
		"function|load", "function|delete", "function|flush", "function|restore",
	}
)

func TestEveryWriteHasAnEffectDecision(t *testing.T) {
	decided := map[string]int{}
	for _, n := range append(append([]string{}, argvEffect...), emittedEffect...) {
		decided[n]++
	}
	writes := map[string]bool{}
	for _, c := range Default().All() {
		for _, x := range append([]*Command{c}, c.Subcommands...) {
			if x.Flags&FlagWrite == 0 {
				continue
			}
			writes[x.FullName()] = true
			if decided[x.FullName()] != 1 {
				t.Errorf("write command %q: listed %d times in effects_test.go (decide how it is journaled)", x.FullName(), decided[x.FullName()])
			}
		}
	}
	for n := range decided {
		if !writes[n] {
			t.Errorf("%q is listed but is not a write command", n)
		}
	}
}

// TestDispatcherJournalsArgvOnce checks the dispatcher's default: a changing write without its
// own effect journals its arguments copied, once; a no-op or a read journals nothing.
func TestDispatcherJournalsArgvOnce(t *testing.T) {
	st := store.New(2, 4, clock.NewFake(harnessT0))
	var got []store.Effect
	st.Journal = store.JournalFunc(func(e store.Effect) { got = append(got, store.CloneEffect(e)) })
	tbl := Default()
	c := &Ctx{W: resp.NewWriter(), Client: &Client{}, Srv: &rlBenchServer{}, Store: st, DB: st.DB(1), Now: harnessT0}
	run := func(args ...string) {
		c.Args = nil
		for _, a := range args {
			c.Args = append(c.Args, []byte(a))
		}
		tbl.Exec(c)
	}
	run("APPEND", "k", "ab")
	run("GET", "k")
	run("PERSIST", "k") // no TTL: nothing changed
	run("SET", "k", "v", "EX", "10", "GET")
	if len(got) != 2 {
		t.Fatalf("effects: %v", got)
	}
	if got[0].DB != 1 || string(got[0].Args[0]) != "APPEND" || string(got[0].Args[2]) != "ab" {
		t.Fatalf("APPEND effect: %d %q", got[0].DB, got[0].Args)
	}
	want := "SET k v PXAT " + itoa(harnessT0+10000)
	if s := joinArgs(got[1].Args); s != want {
		t.Fatalf("SET effect %q, want %q", s, want)
	}
}

func joinArgs(args [][]byte) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += string(a)
	}
	return s
}
