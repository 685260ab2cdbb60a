package command

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func argv(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func positions(refs []KeyRef) []int {
	out := []int{}
	for _, r := range refs {
		out = append(out, r.Pos)
	}
	return out
}

func TestACLCategoriesAddImpliedOnes(t *testing.T) {
	require.Equal(t, []string{"fast", "connection"}, (&Command{Flags: FlagFast, ACL: []string{"fast", "connection"}}).ACLCategories())
	// Redis derives write, admin, dangerous and slow from the flags and sorts by its own
	// category table; HotKV's own categories come last.
	require.Equal(t, []string{"write", "admin", "slow", "dangerous", "ratelimit"},
		(&Command{Flags: FlagWrite | FlagAdmin, ACL: []string{"ratelimit", "@slow"}}).ACLCategories())
	require.Equal(t, []string{"read", "string", "fast"},
		(&Command{Flags: FlagReadOnly | FlagFast, ACL: []string{"fast", "string"}}).ACLCategories())
	require.Equal(t, []string{"slow", "scripting"},
		(&Command{Flags: FlagReadOnly, ACL: []string{"scripting"}}).ACLCategories(), "scripting commands are not @read")
}

func TestInfoFlags(t *testing.T) {
	require.Equal(t, []string{"pubsub", "fast"}, (&Command{Flags: FlagPubSub | FlagFast | FlagMayReplicate}).InfoFlags(),
		"may_replicate is hidden as in Redis")
	require.Equal(t, []string{"noscript", "movablekeys"},
		(&Command{Flags: FlagNoScript, KeySpecs: []KeySpec{{Begin: 2, FirstKey: 1}}}).InfoFlags(),
		"a keynum spec makes the keys movable")
	require.Equal(t, []string{"write"}, (&Command{Flags: FlagWrite, KeySpecs: []KeySpec{{Begin: 1, Step: 1}}}).InfoFlags())
}

func TestKeyRefs(t *testing.T) {
	mset := &Command{Arity: -3, KeySpecs: []KeySpec{{Flags: KSOW | KSUpdate, Begin: 1, LastKey: -1, Step: 2}}}
	require.Equal(t, []int{1, 3}, positions(mset.KeyRefs(argv("mset a 1 b 2"))))
	require.Equal(t, KSOW|KSUpdate, mset.KeyRefs(argv("mset a 1"))[0].Flags)

	eval := &Command{Arity: -3, KeySpecs: []KeySpec{{Flags: KSRW, Begin: 2, FirstKey: 1, Step: 1}}}
	require.Equal(t, []int{3, 4}, positions(eval.KeyRefs(argv("eval s 2 k1 k2 arg"))))
	require.Empty(t, eval.KeyRefs(argv("eval s 0")))
	require.Empty(t, eval.KeyRefs(argv("eval s 5 k1")), "a count past the end is invalid")
	require.Empty(t, eval.KeyRefs(argv("eval s x k1")), "a count that is not a number is invalid")

	sort := &Command{Arity: -2, KeySpecs: []KeySpec{
		{Flags: KSRO, Begin: 1, Step: 1},
		{Flags: KSOW, BeginKeyword: "STORE", Begin: 1, Step: 1},
	}}
	require.Equal(t, []int{1, 4}, positions(sort.KeyRefs(argv("sort k LIMIT store d"))))
	require.Equal(t, []int{1}, positions(sort.KeyRefs(argv("sort k"))))

	limit := &Command{Arity: -2, KeySpecs: []KeySpec{{Flags: KSRO, Begin: 1, LastKey: -1, Step: 1, Limit: 2}}}
	require.Equal(t, []int{1, 2}, positions(limit.KeyRefs(argv("c a b x y"))), "limit 2 keeps the first half")

	legacy := &Command{Arity: -2, Flags: FlagWrite, FirstKey: 1, LastKey: -1, Step: 1}
	refs := legacy.KeyRefs(argv("del a b c"))
	require.Equal(t, []int{1, 2, 3}, positions(refs))
	require.Equal(t, KSRW|KSAccess|KSUpdate, refs[0].Flags)

	custom := &Command{Arity: -2, GetKeys: func(args [][]byte) []int { return []int{2} }}
	require.Equal(t, []int{2}, positions(custom.KeyRefs(argv("x y z"))))
}

func TestLookupFull(t *testing.T) {
	tb := Default()
	require.Equal(t, "config|get", tb.LookupFull("CONFIG|Get").FullName())
	require.Equal(t, "config", tb.LookupFull("config").FullName())
	require.Nil(t, tb.LookupFull("config|nosuch"))
	require.Nil(t, tb.LookupFull("config|get|x"))
	require.Nil(t, tb.LookupFull("ping|x"))
	require.Nil(t, tb.LookupFull("nosuch"))
}

func TestKeySpecDescribe(t *testing.T) {
	require.Equal(t, "RO access: index 1, range lastkey 0 step 1 limit 0", KeySpec{Flags: KSRO | KSAccess, Begin: 1, Step: 1}.Describe())
	require.Equal(t, "RW: index 2, keynum keynumidx 0 firstkey 1 step 1", KeySpec{Flags: KSRW, Begin: 2, FirstKey: 1}.Describe())
	require.Equal(t, "OW: after keyword STORE searching from 1, range lastkey 0 step 1 limit 0",
		KeySpec{Flags: KSOW, BeginKeyword: "STORE", Begin: 1}.Describe())
	require.Equal(t, "RO: unknown begin", KeySpec{Flags: KSRO}.Describe())
}
