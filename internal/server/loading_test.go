package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/freeport"
	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/store"
)

// writeLoadSnapshot writes a snapshot of n keys (key:0..) to dir/dump.hkv.
func writeLoadSnapshot(t *testing.T, dir string, n int) {
	t.Helper()
	now := time.Now().UnixMilli()
	st := store.New(16, 4, clock.NewFake(now))
	db := st.DB(0)
	for i := 0; i < n; i++ {
		k := []byte(fmt.Sprint("key:", i))
		sh := db.ShardFor(k)
		sh.Lock()
		db.Set(k, store.BytesValue([]byte("some value")), 0, false, now)
		sh.Unlock()
	}
	if _, err := persist.SaveFile(filepath.Join(dir, "dump.hkv"), st, persist.SaveOptions{Now: now, Version: Version}); err != nil {
		t.Fatal(err)
	}
}

// startLoading starts a server on dir in the background and returns it, once its port is
// open and its load has begun, with the address, a channel that gets Start's result and one
// that SHUTDOWN's stop function closes.
func startLoading(t *testing.T, dir string, args ...string) (*Server, string, <-chan error, <-chan struct{}, *lockedBuffer) {
	t.Helper()
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Directives(), append([]string{"--dir", dir, "--port", fmt.Sprint(port), "--bind", "127.0.0.1"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	s := New(cfg, slog.New(slog.NewTextHandler(log, nil)))
	addr := make(chan string, 1)
	s.SetLoadingHook(func() { addr <- s.Addr().String() })
	stopped := make(chan struct{})
	s.SetShutdownFunc(func() { close(stopped) })
	started := make(chan error, 1)
	go func() { started <- s.Start() }()
	select {
	case a := <-addr:
		return s, a, started, stopped, log
	case err := <-started:
		t.Fatalf("Start returned before loading: %v\n%s", err, log)
	}
	return nil, "", nil, nil, nil
}

// TestServeWhileLoading: while the dataset loads (slowed by key-load-delay), the port is
// open and clients get Redis's answers: -LOADING for commands not flagged loading, a refused
// EXEC for a transaction that queued one, INFO with the load's progress, CONFIG SET except for
// appendonly. Once loaded, the same connection is served with every key. Both loaders: a
// snapshot, and with appendonly yes the log made from it and then the log itself.
func TestServeWhileLoading(t *testing.T) {
	const n = 20000
	dir := t.TempDir()
	writeLoadSnapshot(t, dir, n)
	for i, aof := range []string{"no", "yes", "yes"} {
		// 20000 keys at 75 µs each: about 1.5 s of loading. The last start lets Redis's
		// protected configs be set, which decides the refusal of CONFIG SET dir below.
		protected := []string{"no", "no", "yes"}[i]
		s, addr, started, _, log := startLoading(t, dir, "--appendonly", aof, "--key-load-delay", "75", "--enable-debug-command", "yes",
			"--enable-protected-configs", protected)
		ctx := context.Background()
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true, PoolSize: 1})
		loadingErr := "LOADING Redis is loading the dataset in memory"
		if err := c.Ping(ctx).Err(); err == nil || err.Error() != loadingErr {
			t.Fatalf("appendonly %s: PING while loading: %v", aof, err)
		}
		if err := c.Get(ctx, "key:1").Err(); err == nil || err.Error() != loadingErr {
			t.Fatalf("GET while loading: %v", err)
		}
		info, err := c.Info(ctx, "persistence").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"loading:1\r\n", "loading_start_time:", "loading_total_bytes:", "loading_loaded_bytes:", "loading_loaded_perc:", "loading_eta_seconds:"} {
			if !strings.Contains(info, want) {
				t.Fatalf("INFO while loading lacks %q:\n%s", want, info)
			}
		}
		if err := c.ConfigSet(ctx, "appendonly", "no").Err(); err == nil || err.Error() != loadingErr {
			t.Fatalf("CONFIG SET appendonly while loading: %v", err)
		}
		// Redis checks protection first: with protected configs off, dir is refused as
		// protected; allowed, the load refuses it. (HotKV never sets dir at run time.)
		err = c.ConfigSet(ctx, "dir", "elsewhere").Err()
		if protected == "yes" && (err == nil || err.Error() != loadingErr) ||
			protected == "no" && (err == nil || !strings.HasSuffix(err.Error(), "can't set protected config")) {
			t.Fatalf("CONFIG SET dir while loading (enable-protected-configs %s): %v", protected, err)
		}
		if err := c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
			t.Fatalf("CONFIG SET maxmemory-policy while loading: %v", err)
		}
		if err := c.Do(ctx, "DEBUG", "POPULATE", "10").Err(); err == nil || err.Error() != loadingErr {
			t.Fatalf("DEBUG POPULATE while loading: %v", err)
		}
		// A transaction: MULTI is allowed, SET is refused at queue time, EXEC aborts.
		if err := c.Do(ctx, "MULTI").Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.Do(ctx, "SET", "k", "v").Err(); err == nil || err.Error() != loadingErr {
			t.Fatalf("SET queued while loading: %v", err)
		}
		if err := c.Do(ctx, "EXEC").Err(); err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
			t.Fatalf("EXEC after a refused command: %v", err)
		}
		select {
		case err := <-started:
			t.Fatalf("the load ended before the checks (make key-load-delay larger): %v", err)
		default:
		}
		if err := <-started; err != nil {
			t.Fatalf("start: %v\n%s", err, log)
		}
		if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
			t.Fatalf("PING after loading: %q %v", got, err)
		}
		if got, err := c.DBSize(ctx).Result(); err != nil || got != n {
			t.Fatalf("DBSIZE after loading: %d %v", got, err)
		}
		if got, _ := c.Get(ctx, "key:1").Result(); got != "some value" {
			t.Fatalf("GET after loading: %q", got)
		}
		info, _ = c.Info(ctx, "persistence").Result()
		if !strings.Contains(info, "loading:0\r\n") || strings.Contains(info, "loading_start_time") {
			t.Fatalf("INFO after loading:\n%s", info)
		}
		if got, _ := c.ConfigGet(ctx, "maxmemory-policy").Result(); got["maxmemory-policy"] != "allkeys-lru" {
			t.Fatalf("maxmemory-policy set during the load: %v", got)
		}
		_ = c.Close()
		_ = s.Close()
	}
}

// TestShutdownWhileLoading: SHUTDOWN during the load stops it and the server at once, and
// saves nothing (the data is half loaded), even with save points configured, as Redis's
// prepareForShutdown; the snapshot on disk is left as it was.
func TestShutdownWhileLoading(t *testing.T) {
	dir := t.TempDir()
	writeLoadSnapshot(t, dir, 20000)
	before, err := os.ReadFile(filepath.Join(dir, "dump.hkv"))
	if err != nil {
		t.Fatal(err)
	}
	// 20000 keys at 1 ms each would load for 20 s.
	_, addr, started, stopped, log := startLoading(t, dir, "--appendonly", "no", "--save", "3600 1", "--key-load-delay", "1000")
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	defer c.Close()
	t0 := time.Now()
	_ = c.Shutdown(context.Background()).Err() // the connection closes without a reply
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("Start after SHUTDOWN while loading: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the load went on after SHUTDOWN")
	}
	select {
	case <-stopped: // after Close
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not close")
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("stopping took %v", d)
	}
	after, err := os.ReadFile(filepath.Join(dir, "dump.hkv"))
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the snapshot changed (err %v): %d bytes before, %d after", err, len(before), len(after))
	}
	if !strings.Contains(log.String(), "Shutdown requested while loading the data") {
		t.Fatalf("no log line:\n%s", log)
	}
}

// TestReplayIgnoresMaxmemory: replaying the append-only log neither evicts nor refuses a
// write for maxmemory, as Redis's loading never does (isSafeToPerformEvictions): every write
// the log holds was admitted once, and a restart with a limit the data now exceeds must load
// all of it, or the dataset would silently differ from its own log.
func TestReplayIgnoresMaxmemory(t *testing.T) {
	dir := t.TempDir()
	s, _ := startInDir(t, dir, "--appendonly", "yes")
	const n = 20000
	now := time.Now().UnixMilli()
	for i := 0; i < n; i++ {
		s.aof().Append(store.Effect{DB: 0, Args: [][]byte{[]byte("SET"), []byte(fmt.Sprint("key:", i)), bytes.Repeat([]byte("v"), 200)}, Time: now})
	}
	s.Close()
	for _, policy := range []string{"noeviction", "allkeys-lru"} {
		s, log := startInDir(t, dir, "--appendonly", "yes", "--maxmemory", "1mb", "--maxmemory-policy", policy)
		if got := s.keyCount(); got != n {
			t.Fatalf("maxmemory-policy %s: %d keys after the replay, want %d\n%s", policy, got, n, log)
		}
		if strings.Contains(log.String(), "replayed from the append-only log failed") {
			t.Fatalf("maxmemory-policy %s: replay errors:\n%s", policy, log)
		}
		s.Close()
	}
}
