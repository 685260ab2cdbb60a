package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// MemResult is what filling a server with rate-limit keys cost.
type MemResult struct {
	Keys int64
	// UsedBefore/After are INFO memory's used_memory (allocator bytes in use) and
	// RSSBefore/After its used_memory_rss (the process's resident set), each read after
	// MEMORY PURGE so freed memory is not counted.
	UsedBefore, UsedAfter int64
	RSSBefore, RSSAfter   int64
	FillTime              time.Duration
}

// BytesPerKey is the used_memory growth per key.
func (m MemResult) BytesPerKey() float64 {
	return float64(m.UsedAfter-m.UsedBefore) / float64(m.Keys)
}

// RSSPerKey is the resident-set growth per key.
func (m MemResult) RSSPerKey() float64 {
	return float64(m.RSSAfter-m.RSSBefore) / float64(m.Keys)
}

func memSample(ctx context.Context, addr string) (used, rss int64, err error) {
	if _, err := Do(ctx, addr, "MEMORY", "PURGE"); err != nil {
		return 0, 0, err
	}
	time.Sleep(200 * time.Millisecond) // let RSS settle after the purge
	info, err := Info(ctx, addr, "memory")
	if err != nil {
		return 0, 0, err
	}
	used, _ = strconv.ParseInt(info["used_memory"], 10, 64)
	rss, _ = strconv.ParseInt(info["used_memory_rss"], 10, 64)
	return used, rss, nil
}

// MemoryScriptMax is the largest Redis fill done through the GCRA script itself; larger ones
// SET what the script would have stored.
const MemoryScriptMax = 1_000_000

// Memory empties the server, then creates n live GCRA keys the way each server would hold a
// per-user limit (GCRA.LIMIT on HotKV, the GCRA Lua script on Redis) and reports the growth.
// The limit is one per hour, so each key lives an hour: a fill of 10M keys takes far less,
// and nothing expires before it is measured.
func Memory(ctx context.Context, addr string, redisSide bool, n int64) (MemResult, error) {
	if _, err := Do(ctx, addr, "FLUSHALL"); err != nil {
		return MemResult{}, err
	}
	var t Template
	switch {
	case redisSide && n > MemoryScriptMax:
		// What the script stores (an integer TAT with a TTL), written by SET: Redis runs the
		// script at about 100k calls a second, which would make a 10M-key fill take minutes.
		t = ParseTemplate("SET", "rl:"+RandPlaceholder, "1764000000000", "PX", "3600000")
	case redisSide:
		w, _ := FindWorkload("gcra")
		if _, err := w.Prepare(ctx, addr, true); err != nil { // loads the script
			return MemResult{}, err
		}
		t = ParseTemplate("EVALSHA", SHA1(GCRALua), "1", "rl:"+RandPlaceholder, "1", "1", "3600", "1")
	default:
		t = ParseTemplate("GCRA.LIMIT", "rl:"+RandPlaceholder, "3600000", "1")
	}
	return measureFill(ctx, addr, n, t)
}

// Aggregates are the small-aggregate shapes AggregateMemory measures: each key gets eight
// elements in one command, the same command on both servers.
var Aggregates = map[string][]string{
	"hash": {"HSET", "h:" + RandPlaceholder, "f1", "value-1", "f2", "value-2", "f3", "value-3", "f4", "value-4",
		"f5", "value-5", "f6", "value-6", "f7", "value-7", "f8", "value-8"},
	"set":  {"SADD", "s:" + RandPlaceholder, "member-1", "member-2", "member-3", "member-4", "member-5", "member-6", "member-7", "member-8"},
	"zset": {"ZADD", "z:" + RandPlaceholder, "1", "member-1", "2", "member-2", "3", "member-3", "4", "member-4", "5", "member-5", "6", "member-6", "7", "member-7", "8", "member-8"},
	"list": {"RPUSH", "l:" + RandPlaceholder, "item-1", "item-2", "item-3", "item-4", "item-5", "item-6", "item-7", "item-8"},
}

// AggregateMemory empties the server and creates n small aggregates of one kind (Aggregates),
// reporting the memory growth, for the data types' bar: memory per small hash, set and
// sorted set at or below Redis's.
func AggregateMemory(ctx context.Context, addr, kind string, n int64) (MemResult, error) {
	line, ok := Aggregates[kind]
	if !ok {
		return MemResult{}, fmt.Errorf("unknown aggregate %q", kind)
	}
	if _, err := Do(ctx, addr, "FLUSHALL"); err != nil {
		return MemResult{}, err
	}
	return measureFill(ctx, addr, n, ParseTemplate(line...))
}

// measureFill runs t for key numbers 0..n-1 and reports the memory growth, each end read after
// MEMORY PURGE, then empties the server.
func measureFill(ctx context.Context, addr string, n int64, t Template) (MemResult, error) {
	var err error
	res := MemResult{Keys: n}
	if res.UsedBefore, res.RSSBefore, err = memSample(ctx, addr); err != nil {
		return res, err
	}
	start := time.Now()
	r, err := Run(ctx, Config{Addr: addr, Conns: 8, Pipeline: 64, Requests: n, Sequential: true, Commands: []Template{t}})
	if err != nil {
		return res, err
	}
	res.FillTime = time.Since(start)
	if r.Errors > 0 {
		return res, fmt.Errorf("%s: %d error replies while filling, first: %s", addr, r.Errors, r.FirstError)
	}
	size, err := Do(ctx, addr, "DBSIZE")
	if err != nil {
		return res, err
	}
	if size.(int64) != n {
		return res, fmt.Errorf("%s: DBSIZE %d after filling %d keys", addr, size, n)
	}
	res.UsedAfter, res.RSSAfter, err = memSample(ctx, addr)
	if err != nil {
		return res, err
	}
	_, err = Do(ctx, addr, "FLUSHALL")
	return res, err
}
