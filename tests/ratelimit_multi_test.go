package tests

// GCRA.LIMITALL and GCRA.REFUND (docs/ratelimit.md, "GCRA.LIMITALL" and "GCRA.REFUND"): the
// vectors of that section, run like ratelimit_test.go's tables (rlStep rows, DEBUG CLOCK),
// the validation order, WRONGTYPE, and the all-or-nothing guarantee under concurrency.

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

const rlErrNumLimits = "ERR invalid numlimits: must be an integer from 1 to 256"

var gcraLimitAllBlocks = []rlBlock{
	{"LA1-LA3", []rlStep{
		{"LA1", 0, "GCRA.LIMITALL 2 u 60000 10 o 1000 2", "[0,-1,[0,10,9,-1,6000],[0,2,1,-1,500]]"},
		{"LA2", 0, "GCRA.LIMITALL 2 u 60000 10 o 1000 2", "[0,-1,[0,10,8,-1,12000],[0,2,0,-1,1000]]"},
		{"LA3", 0, "GCRA.LIMITALL 2 u 60000 10 o 1000 2", "[1,500,[0,10,7,-1,18000],[1,2,0,500,1000]]"},
		{"", 0, "GET u", `"1700000012000000000"`},
		{"", 0, "PTTL u", "12000"},
		{"", 0, "GET o", `"1700000001000000000"`},
		{"LA3b", 499, "GCRA.LIMITALL 2 u 60000 10 o 1000 2", "[1,1,[0,10,7,-1,17501],[1,2,0,1,501]]"},
		{"LA3c", 500, "GCRA.LIMITALL 2 u 60000 10 o 1000 2", "[0,-1,[0,10,7,-1,17500],[0,2,0,-1,1000]]"},
		{"", 500, "GET u", `"1700000018000000000"`},
		{"", 500, "PTTL u", "17500"},
		{"", 500, "PTTL o", "1000"},
	}},
	{"LA4", []rlStep{
		{"LA4", 0, "GCRA.LIMITALL 2 u 60000 10 o 1000 2 COUNT 3", "[1,-1,[0,10,7,-1,18000],[1,2,0,-1,0]]"},
		{"", 0, "EXISTS u o", "0"},
		{"", 0, "GCRA.LIMITALL 2 u 60000 10 o 1000 2 count 2", "[0,-1,[0,10,8,-1,12000],[0,2,0,-1,1000]]"},
	}},
	{"LA5", []rlStep{
		{"LA5", 0, "GCRA.LIMIT a 1000 1", "[0,1,0,-1,1000]"},
		{"", 0, "GCRA.LIMIT b 3000 1", "[0,1,0,-1,3000]"},
		{"", 0, "GCRA.LIMITALL 2 a 1000 1 b 3000 1", "[1,3000,[1,1,0,1000,1000],[1,1,0,3000,3000]]"},
		{"LA5b", 2999, "GCRA.LIMITALL 2 a 1000 1 b 3000 1", "[1,1,[0,1,0,-1,1000],[1,1,0,1,1]]"},
		{"LA5c", 3000, "GCRA.LIMITALL 2 a 1000 1 b 3000 1", "[0,-1,[0,1,0,-1,1000],[0,1,0,-1,3000]]"},
	}},
	{"LA6", []rlStep{ // a key listed twice is charged twice, in argument order
		{"LA6", 0, "GCRA.LIMITALL 2 k 60000 10 k 60000 10 COUNT 5", "[0,-1,[0,10,5,-1,30000],[0,10,0,-1,60000]]"},
		{"", 0, "GET k", `"1700000060000000000"`},
		{"", 0, "PTTL k", "60000"},
		{"LA6b", 6000, "GCRA.LIMITALL 2 k 60000 10 k 60000 10", "[1,6000,[0,10,0,-1,60000],[1,10,0,6000,60000]]"},
		{"", 6000, "GET k", `"1700000060000000000"`},
		{"LA6c", 12000, "GCRA.LIMITALL 2 k 60000 10 k 60000 10", "[0,-1,[0,10,1,-1,54000],[0,10,0,-1,60000]]"},
		{"", 12000, "GET k", `"1700000072000000000"`},
	}},
	{"LA7", []rlStep{ // one limit: GCRA.LIMIT's decision and state
		{"LA7", 0, "GCRA.LIMITALL 1 k 60000 10", "[0,-1,[0,10,9,-1,6000]]"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,8,-1,12000]"},
		{"", 0, "GCRA.LIMITALL 1 k 60000 10 COUNT 10", "[1,12000,[1,10,0,12000,12000]]"},
		{"", 0, "GCRA.LIMITALL 1 k 60000 10 COUNT 11", "[1,-1,[1,10,0,-1,12000]]"},
	}},
	{"LA8", []rlStep{ // validation order: arity, numlimits, triples, period/burst in order, COUNT, types
		{"LA8", 0, "GCRA.LIMITALL 1 k 60000", rlArity("gcra.limitall")},
		{"", 0, "GCRA.LIMITALL 0 k 60000 10", rlErrNumLimits},
		{"", 0, "GCRA.LIMITALL 257 k 60000 10", rlErrNumLimits},
		{"", 0, "GCRA.LIMITALL -1 k 60000 10", rlErrNumLimits},
		{"", 0, "GCRA.LIMITALL x k 60000 10", rlErrNumLimits},
		{"", 0, "GCRA.LIMITALL 01 k 60000 10", rlErrNumLimits},
		{"", 0, "GCRA.LIMITALL 2 k 60000 10", rlErrSyntax},
		{"", 0, "GCRA.LIMITALL 2 k 60000 10 j 60000", rlErrSyntax},
		{"", 0, "GCRA.LIMITALL 256 k 0 0", rlErrSyntax},
		{"", 0, "GCRA.LIMITALL 2 k 60000 10 j 0 10", rlErrPeriod},
		{"", 0, "GCRA.LIMITALL 2 k 60000 0 j 0 10", rlErrBurst},
		{"", 0, "GCRA.LIMITALL 1 k 0 10 junk", rlErrPeriod},
		{"", 0, "GCRA.LIMITALL 1 k 60000 10 junk", rlErrSyntax},
		{"", 0, "GCRA.LIMITALL 1 k 60000 10 COUNT", rlErrSyntax},
		{"", 0, "GCRA.LIMITALL 1 k 60000 10 COUNT 1 COUNT 1", rlErrSyntax},
		{"", 0, "GCRA.LIMITALL 1 k 60000 10 COUNT 0", rlErrCount},
		{"", 0, "GCRA.LIMITALL 1 k 60000 10 COUNT 1.5", rlErrCount},
		{"", 0, "GCRA.LIMITALL 1 k 60000 10 LIMIT 1", rlErrSyntax},
		{"", 0, "SET s hello EX 100", "OK"},
		{"", 0, "GCRA.LIMITALL 2 k 60000 10 s 60000 10", rlWrongType},
		{"", 0, "GCRA.LIMITALL 2 s 0 10 k 60000 10", rlErrPeriod},
		{"", 0, "EXISTS k", "0"},
		{"", 0, "GET s", `"hello"`},
		{"", 0, "TTL s", "100"},
		{"", 0, "DBSIZE", "1"},
	}},
}

var gcraRefundBlocks = []rlBlock{
	{"RF1-RF3", []rlStep{
		{"RF1", 0, "GCRA.LIMIT k 60000 10 3", "[0,10,7,-1,18000]"},
		{"", 0, "GCRA.REFUND k 60000 10", "[0,10,8,-1,12000]"},
		{"", 0, "GET k", `"1700000012000000000"`},
		{"", 0, "PTTL k", "12000"},
		{"RF2", 0, "GCRA.REFUND k 60000 10 5", "[0,10,10,-1,0]"},
		{"", 0, "EXISTS k", "0"},
		{"RF3", 0, "GCRA.REFUND k 60000 10", "[0,10,10,-1,0]"},
		{"", 0, "EXISTS k", "0"},
	}},
	{"RF4", []rlStep{ // an already-full key is left as it is
		{"RF4", 0, "SET n 123", "OK"},
		{"", 0, "GCRA.REFUND n 60000 10", "[0,10,10,-1,0]"},
		{"", 0, "GET n", `"123"`},
		{"", 0, "PTTL n", "-1"},
	}},
	{"RF5", []rlStep{ // sub-ms interval: the TAT moves back by exactly T ns
		{"RF5", 0, "GCRA.LIMIT k 1000 3", "[0,3,2,-1,334]"},
		{"", 0, "GCRA.LIMIT k 1000 3", "[0,3,1,-1,667]"},
		{"", 100, "GCRA.REFUND k 1000 3", "[0,3,2,-1,234]"},
		{"", 100, "GET k", `"1700000000333333333"`},
		{"", 100, "PTTL k", "234"},
		{"", 100, "GCRA.LIMIT k 1000 3 2", "[0,3,0,-1,900]"},
	}},
	{"RF6", []rlStep{ // a TAT far in the future; a huge count cannot overflow
		{"RF6", 0, "SET big 9223372036854775807", "OK"},
		{"", 0, "GCRA.REFUND big 60000 10", "[0,10,0,-1,7523372030855]"},
		{"", 0, "GET big", `"9223372030854775807"`},
		{"", 0, "PTTL big", "7523372030855"},
		{"", 0, "GCRA.REFUND big 60000 10 9223372036854775807", "[0,10,10,-1,0]"},
		{"", 0, "EXISTS big", "0"},
	}},
	{"RF7", []rlStep{ // validation: GCRA.LIMIT's, then WRONGTYPE
		{"RF7", 0, "GCRA.REFUND k 60000", rlArity("gcra.refund")},
		{"", 0, "GCRA.REFUND k 60000 10 1 x", rlArity("gcra.refund")},
		{"", 0, "GCRA.REFUND k 0 10", rlErrPeriod},
		{"", 0, "GCRA.REFUND k 60000 0", rlErrBurst},
		{"", 0, "GCRA.REFUND k 60000 10 0", rlErrCount},
		{"", 0, "GCRA.REFUND k 0 0 0", rlErrPeriod},
		{"", 0, "SET s hello EX 100", "OK"},
		{"", 0, "GCRA.REFUND s 60000 10", rlWrongType},
		{"", 0, "GCRA.REFUND s 0 10", rlErrPeriod},
		{"", 0, "GET s", `"hello"`},
		{"", 0, "TTL s", "100"},
		{"", 0, "SET f 1.5", "OK"},
		{"", 0, "GCRA.REFUND f 60000 10", rlWrongType},
	}},
}

func TestGCRALimitAllVectors(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, false, gcraLimitAllBlocks)
	})
}

func TestGCRARefundVectors(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, false, gcraRefundBlocks)
	})
}

// TestGCRALimitAllKeys checks that COMMAND GETKEYS finds every third argument (the keynum
// spec with step 3) and that COMMAND INFO describes it as Redis 7 describes keynum specs.
func TestGCRALimitAllKeys(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		keys, err := c.Do(ctx, "COMMAND", "GETKEYS", "GCRA.LIMITALL", 3, "a", 1, 1, "b", 2, 2, "c", 3, 3, "COUNT", 2).StringSlice()
		require.NoError(t, err)
		require.Equal(t, []string{"a", "b", "c"}, keys)
		require.Error(t, c.Do(ctx, "COMMAND", "GETKEYS", "GCRA.LIMITALL", 3, "a", 1, 1).Err())
		info, err := c.Do(ctx, "COMMAND", "INFO", "GCRA.LIMITALL").Slice()
		require.NoError(t, err)
		row := info[0].([]any)
		require.Equal(t, int64(-5), row[1])
		require.Contains(t, rlStrings(row[2]), "movablekeys")
		require.Equal(t, []any{int64(0), int64(0), int64(0)}, row[3:6])
		spec := fmt.Sprint(row[8])
		require.Contains(t, spec, "keynum")
		require.Regexp(t, `keystep[ :]3`, spec)
	})
}

// TestGCRALimitAllAtomicUnderConcurrency: 50 clients hammer one GCRA.LIMITALL over a loose
// and a strict limit; the admissions never exceed the stricter limit, and because nothing is
// recorded on a denial the loose key holds exactly the admitted requests.
func TestGCRALimitAllAtomicUnderConcurrency(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlReset(t, c)
		const workers, each, strict, loose = 50, 40, 300, 100000
		args := []any{"GCRA.LIMITALL", 2, "{x}loose", 60000, loose, "{x}strict", 60000, strict}
		counts := make([]int, workers)
		done := make(chan error, workers)
		for w := range workers {
			cw := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: c.Options().Protocol, PoolSize: 1})
			t.Cleanup(func() { _ = cw.Close() })
			go func() {
				pipe := cw.Pipeline()
				res := make([]*redis.Cmd, each)
				for k := range res {
					res[k] = pipe.Do(ctx, args...)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					done <- err
					return
				}
				for _, r := range res {
					if v, _ := r.Slice(); len(v) == 4 && v[0].(int64) == 0 {
						counts[w]++
					}
				}
				done <- nil
			}()
		}
		for range workers {
			require.NoError(t, <-done)
		}
		total := 0
		for _, n := range counts {
			total += n
		}
		require.Equal(t, strict, total, "the clock is frozen: exactly the strict burst is admitted")
		// The loose key was charged once per admission and never on a denial.
		v, err := c.Do(ctx, "GCRA.PEEK", "{x}loose", 60000, loose).Slice()
		require.NoError(t, err)
		require.Equal(t, int64(loose-strict-1), v[2])
	})
}
