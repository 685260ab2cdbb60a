package hotkv_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
)

// The shared test vectors (clients/testdata/vectors.json) are the specification's vectors in
// a form every client runs through its own typed API, so the Go, Python, Node.js and Java
// clients are held to the same answers. The file's _comment says how a case runs.

type vectorFile struct {
	T0       int64             `json:"t0"`
	Defaults map[string]string `json:"defaults"`
	Cases    []vectorCase      `json:"cases"`
}

type vectorCase struct {
	Name   string            `json:"name"`
	Spec   string            `json:"spec"`
	Config map[string]string `json:"config"`
	Steps  []vectorStep      `json:"steps"`
}

type vectorStep struct {
	At     int64           `json:"at"`
	Op     string          `json:"op"`
	Args   json.RawMessage `json:"args"`
	Cmd    []string        `json:"cmd"`
	Expect json.RawMessage `json:"expect"`
	Error  *string         `json:"error"`
}

// vectorArgs holds every op's arguments; each op reads its own.
type vectorArgs struct {
	Key            string   `json:"key"`
	Keys           []string `json:"keys"`
	PeriodMs       int64    `json:"period_ms"`
	Burst          int64    `json:"burst"`
	Count          *int64   `json:"count"`
	MaxBurst       int64    `json:"max_burst"`
	CountPerPeriod int64    `json:"count_per_period"`
	PeriodS        int64    `json:"period_s"`
	Quantity       *int64   `json:"quantity"`
	Name           string   `json:"name"`
	Limit          int64    `json:"limit"`
	WindowMs       int64    `json:"window_ms"`
	Algo           string   `json:"algo"`
	Refill         string   `json:"refill"`
	Drain          string   `json:"drain"`
	Cost           *int64   `json:"cost"`
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	b, err := os.ReadFile("../testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func orOne(p *int64) int64 {
	if p == nil {
		return 1
	}
	return *p
}

func parseRate(t *testing.T, s string) float64 {
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("rate %q: %v", s, err)
	}
	return f
}

// TestSharedVectors runs every shared vector through the typed API, in RESP2 and RESP3.
func TestSharedVectors(t *testing.T) {
	f := loadVectors(t)
	for _, proto := range []int{2, 3} {
		c := hotkv.NewClient(&redis.Options{Addr: serverAddr, Protocol: proto})
		defer c.Close()
		for _, vc := range f.Cases {
			t.Run(fmt.Sprintf("RESP%d/%s", proto, vc.Name), func(t *testing.T) {
				runVectorCase(t, c, f, vc)
			})
		}
	}
}

func runVectorCase(t *testing.T, c *hotkv.Client, f vectorFile, vc vectorCase) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.FlushAll(ctx).Err())
	names, err := c.RateLimitList(ctx).Result()
	must(err)
	for _, n := range names {
		must(c.RateLimitDrop(ctx, n).Err())
	}
	for k, v := range f.Defaults {
		must(c.ConfigSet(ctx, k, v).Err())
	}
	for k, v := range vc.Config {
		must(c.ConfigSet(ctx, k, v).Err())
	}
	defer func() {
		for k, v := range f.Defaults {
			_ = c.ConfigSet(ctx, k, v).Err()
		}
	}()
	for i, s := range vc.Steps {
		must(c.Do(ctx, "DEBUG", "CLOCK", "SET", f.T0+s.At).Err())
		var a vectorArgs
		if len(s.Args) > 0 {
			must(json.Unmarshal(s.Args, &a))
		}
		var got any
		var err error
		switch s.Op {
		case "gcra_limit", "gcra_peek":
			period := time.Duration(a.PeriodMs) * time.Millisecond
			var r hotkv.GCRAResult
			if s.Op == "gcra_limit" {
				r, err = c.GCRALimit(ctx, a.Key, period, a.Burst, orOne(a.Count)).Result()
			} else {
				r, err = c.GCRAPeek(ctx, a.Key, period, a.Burst, orOne(a.Count)).Result()
			}
			got = map[string]any{"denied": r.Denied, "limit": r.Limit, "remaining": r.Remaining,
				"retry_after_ms": r.RetryAfterMs, "reset_after_ms": r.ResetAfterMs}
		case "gcra_reset":
			got, err = c.GCRAReset(ctx, a.Keys...).Result()
		case "cl_throttle":
			q := int64(1)
			if a.Quantity != nil {
				q = *a.Quantity
			}
			var r hotkv.ThrottleResult
			r, err = c.CLThrottle(ctx, a.Key, a.MaxBurst, a.CountPerPeriod, time.Duration(a.PeriodS)*time.Second, q).Result()
			got = map[string]any{"limited": r.Limited, "limit": r.Limit, "remaining": r.Remaining,
				"retry_after_s": r.RetryAfterSec, "reset_after_s": r.ResetAfterSec}
		case "ratelimit_create":
			got, err = c.RateLimitCreate(ctx, a.Name, a.Limit, time.Duration(a.WindowMs)*time.Millisecond,
				&hotkv.RateLimitOptions{Algorithm: hotkv.Algorithm(a.Algo), Refill: parseRate(t, a.Refill), Drain: parseRate(t, a.Drain)}).Result()
		case "ratelimit_check", "ratelimit_peek":
			var r hotkv.RateLimitResult
			if s.Op == "ratelimit_check" {
				r, err = c.RateLimitCheck(ctx, a.Name, a.Key, orOne(a.Cost)).Result()
			} else {
				r, err = c.RateLimitPeek(ctx, a.Name, a.Key).Result()
			}
			got = map[string]any{"allowed": r.Allowed, "remaining": r.Remaining, "retry_after_ms": r.RetryAfterMs,
				"limit": r.Limit, "current": r.Current}
		case "ratelimit_reset":
			got, err = c.RateLimitReset(ctx, a.Name, a.Key).Result()
		case "ratelimit_stats":
			var r hotkv.RateLimitStats
			r, err = c.RateLimitStats(ctx, a.Name).Result()
			m := map[string]any{"name": r.Name, "algo": string(r.Algorithm), "limit": r.Limit, "window_ms": r.WindowMs,
				"unique_keys": r.UniqueKeys, "total_allowed": r.TotalAllowed, "total_denied": r.TotalDenied}
			if r.RefillPerSec != 0 {
				m["refill_per_sec"] = r.RefillPerSec
			}
			if r.DrainPerSec != 0 {
				m["drain_per_sec"] = r.DrainPerSec
			}
			got = m
		case "ratelimit_drop":
			got, err = c.RateLimitDrop(ctx, a.Name).Result()
		case "ratelimit_list":
			var l []string
			l, err = c.RateLimitList(ctx).Result()
			got = l
		case "raw":
			args := make([]any, len(s.Cmd))
			for j, x := range s.Cmd {
				args[j] = x
			}
			got, err = c.Do(ctx, args...).Result()
			if err == redis.Nil {
				got, err = nil, nil
			}
		default:
			t.Fatalf("step %d: unknown op %q", i, s.Op)
		}
		if s.Error != nil {
			if err == nil || err.Error() != *s.Error {
				t.Fatalf("step %d (%s at t0+%d): want error %q, got %v (reply %v)", i, s.Op, s.At, *s.Error, err, got)
			}
			continue
		}
		if err != nil {
			t.Fatalf("step %d (%s at t0+%d): %v", i, s.Op, s.At, err)
		}
		if want, have := normalize(t, s.Expect), normalizeValue(t, got); want != have {
			t.Fatalf("step %d (%s at t0+%d):\n want %s\n  got %s", i, s.Op, s.At, want, have)
		}
	}
}

// normalize and normalizeValue bring an expectation and a typed result to one comparable
// JSON form (numbers as JSON numbers, map keys sorted).
func normalize(t *testing.T, raw json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return normalizeValue(t, v)
}

func normalizeValue(t *testing.T, v any) string {
	if l, ok := v.([]any); ok && len(l) == 0 {
		v = []string{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&back); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(back)
	return string(out)
}
