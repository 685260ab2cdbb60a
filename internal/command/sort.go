package command

import (
	"bytes"
	"github.com/hotkv/hotkv/internal/acl"
	"math"
	"slices"
	"strings"

	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// SORT and SORT_RO follow Redis 7.0's sort.c step by step, because the details show in
// replies: which elements are loaded when nothing is sorted (BY without '*'), how LIMIT is
// clamped, that equal numeric weights fall back to comparing the elements, that a set sorted
// into STORE without a sort order is sorted by ALPHA anyway (so the stored list is
// deterministic), and that a weight that is not a number fails the whole command.
//
// BY and GET patterns name arbitrary keys, known only while sorting, so a SORT with a pattern
// holds every shard of its database; one without holds the shards of its key and STORE key.
// SORT ... STORE is journaled as its result (DEL, then RPUSH of the stored list), not as
// itself: the order of elements with equal ALPHA weights depends on iteration order, which a
// replay need not reproduce.

func sortCommands() []*Command {
	const complexity = "O(N+M*log(M)) where N is the number of elements in the list or set to sort, and M the number of returned elements. When the elements are not sorted, complexity is O(N)."
	byGetNotes := "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"
	sortKey := KeySpec{Flags: KSRO | KSAccess, Begin: 1, Step: 1}
	sort := &Command{Name: "sort", Arity: -2, Flags: FlagWrite | FlagDenyOOM,
		ACL: []string{"write", "set", "sortedset", "list", "slow", "dangerous"}, FirstKey: 1, LastKey: 1, Step: 1,
		KeySpecs: []KeySpec{sortKey, {Flags: KSRO | KSAccess, Notes: byGetNotes},
			{Flags: KSOW | KSUpdate, Notes: "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array"}},
		GetKeys: sortGetKeys, GetKeysSpecs: []int{0, 2}, Global: true, Group: "generic", Since: "1.0.0", Complexity: complexity,
		Syntax:  "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA] [STORE destination]",
		Summary: "Sort the elements in a list, set or sorted set",
		Doc: "A BY or GET pattern holds every shard of the database while SORT runs (the keys it reads are known only then). " +
			"With STORE it is journaled as the stored result (DEL, then RPUSH), so a replay stores the same list.",
		Handler: func(c *Ctx) { sortGeneric(c, false) }}
	sortRO := &Command{Name: "sort_ro", Arity: -2, Flags: FlagReadOnly,
		ACL: []string{"read", "set", "sortedset", "list", "slow", "dangerous"}, FirstKey: 1, LastKey: 1, Step: 1,
		KeySpecs: []KeySpec{sortKey, {Flags: KSRO | KSAccess, Notes: byGetNotes}},
		GetKeys:  func([][]byte) []int { return []int{1} }, Global: true, Group: "generic", Since: "7.0.0",
		Complexity: complexity,
		Syntax:     "key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC | DESC] [ALPHA]",
		Summary:    "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
		Handler:    func(c *Ctx) { sortGeneric(c, true) }}
	return []*Command{sort, sortRO}
}

// sortGetKeys is Redis's sortGetKeys: the key, and the last STORE's destination. Its loop
// skips LIMIT's two arguments and BY's and GET's one, as SORT's parser does.
func sortGetKeys(args [][]byte) []int {
	keys := []int{1}
	store := 0
	for i := 2; i < len(args); i++ {
		switch {
		case EqualFold(args[i], "limit"):
			i += 2
		case EqualFold(args[i], "get"), EqualFold(args[i], "by"):
			i++
		case EqualFold(args[i], "store") && i+1 < len(args):
			store = i + 1
		}
	}
	if store > 0 {
		keys = append(keys, store)
	}
	return keys
}

// sortItem is one element being sorted and its weight: a number, or for ALPHA with BY the
// looked-up value (hasCmp false when the key was missing, which sorts first).
type sortItem struct {
	obj    string
	score  float64
	cmp    []byte
	hasCmp bool
}

func sortGeneric(c *Ctx, readonly bool) {
	desc, alpha, dontsort := false, false, false
	var limitStart, limitCount int64 = 0, -1
	var storeKey, sortBy []byte
	var gets [][]byte
	for j := 2; j < len(c.Args); j++ {
		left := len(c.Args) - j - 1
		switch {
		case c.ArgIs(j, "asc"):
			desc = false
		case c.ArgIs(j, "desc"):
			desc = true
		case c.ArgIs(j, "alpha"):
			alpha = true
		case c.ArgIs(j, "limit") && left >= 2:
			var ok bool
			if limitStart, ok = c.Int(j + 1); !ok {
				return
			}
			if limitCount, ok = c.Int(j + 2); !ok {
				return
			}
			j += 2
		case !readonly && c.ArgIs(j, "store") && left >= 1:
			storeKey = c.Args[j+1]
			j++
		case c.ArgIs(j, "by") && left >= 1:
			sortBy = c.Args[j+1]
			if bytes.IndexByte(sortBy, '*') < 0 {
				dontsort = true
			} else if !c.fullKeyAccess(acl.PermRead) {
				// The pattern reaches keys no key spec names: only a user who may read
				// every key may use it (Redis's ACLUserCheckCmdWithUnrestrictedKeyAccess).
				c.Error("ERR BY option of SORT denied due to insufficient ACL permissions.")
				return
			}
			j++
		case c.ArgIs(j, "get") && left >= 1:
			if !c.fullKeyAccess(acl.PermRead) {
				c.Error("ERR GET option of SORT denied due to insufficient ACL permissions.")
				return
			}
			gets = append(gets, c.Args[j+1])
			j++
		default:
			c.Syntax()
			return
		}
	}
	if sortBy != nil || len(gets) > 0 {
		c.LockDBs(c.DB.ID)
	} else {
		keys := [][]byte{c.Args[1]}
		if storeKey != nil {
			keys = append(keys, storeKey)
		}
		c.LockKeysIn(c.DB.ID, keys, c.DB.ID, nil)
	}

	e := c.LookupRead(c.Args[1])
	kind := store.KindList
	if e != nil {
		kind = e.Val.Kind
		if kind != store.KindList && kind != store.KindSet && kind != store.KindZSet {
			c.WrongType()
			return
		}
	}
	if dontsort && kind == store.KindSet && (storeKey != nil || c.inScript) {
		// Redis sorts a set anyway when the result is stored or goes to a script, so that it
		// is deterministic.
		dontsort, alpha, sortBy = false, true, nil
	}

	n := int64(0)
	if e != nil {
		n = int64(objLen(e.Val.Obj()))
	}
	start := max(limitStart, 0)
	end := n - 1
	if limitCount >= 0 {
		end = start + min(limitCount, n) - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	if end >= n {
		end = n - 1
	}

	var items []sortItem
	if e != nil {
		items = loadSortItems(e.Val.Obj(), kind, dontsort, desc, &start, &end)
	}

	if !dontsort {
		convErr := false
		for i := range items {
			var by []byte
			if sortBy != nil {
				v, ok := c.sortLookup(sortBy, items[i].obj)
				if !ok {
					continue
				}
				by = v
			} else {
				by = []byte(items[i].obj)
			}
			if alpha {
				if sortBy != nil {
					items[i].cmp, items[i].hasCmp = by, true
				}
				continue
			}
			// strtod must stop at the end of the C string; an empty string is 0.
			v, m, erange := strtod(by)
			if (m < len(by) && by[m] != 0) || erange || math.IsNaN(v) {
				convErr = true
			}
			items[i].score = v
		}
		if convErr {
			c.Error("ERR One or more scores can't be converted into double")
			return
		}
		slices.SortStableFunc(items, func(a, b sortItem) int {
			var r int
			switch {
			case !alpha:
				switch {
				case a.score > b.score:
					r = 1
				case a.score < b.score:
					r = -1
				default:
					r = strings.Compare(a.obj, b.obj) // equal weights: deterministic by element
				}
			case sortBy != nil:
				switch {
				case !a.hasCmp && !b.hasCmp:
					r = 0
				case !a.hasCmp:
					r = -1
				case !b.hasCmp:
					r = 1
				default:
					r = bytes.Compare(a.cmp, b.cmp)
				}
			default:
				r = strings.Compare(a.obj, b.obj)
			}
			if desc {
				r = -r
			}
			return r
		})
	}

	count := max(end-start+1, 0)
	outputLen := count
	if len(gets) > 0 {
		outputLen *= int64(len(gets))
	}
	if storeKey == nil {
		c.W.Array(int(outputLen))
		for j := start; j <= end; j++ {
			if len(gets) == 0 {
				c.W.BulkString(items[j].obj)
			}
			for _, g := range gets {
				if v, ok := c.sortLookup(g, items[j].obj); ok {
					c.W.Bulk(v)
				} else {
					c.W.Null()
				}
			}
		}
		return
	}

	// STORE: the result replaces the destination as a list (no TTL), or deletes it when empty.
	c.touched = true
	l := types.NewList()
	for j := start; j <= end; j++ {
		if len(gets) == 0 {
			// Packed encodings hand out members that alias their bytes: the list keeps copies.
			l.PushRight(strings.Clone(items[j].obj))
		}
		for _, g := range gets {
			v, _ := c.sortLookup(g, items[j].obj)
			l.PushRight(string(v)) // a missing value is stored as ""
		}
	}
	if outputLen > 0 {
		c.DB.Set(storeKey, store.ObjValue(store.KindList, l), 0, false, c.Now)
		c.markReady(storeKey)
		c.Dirty(outputLen)
		c.notify(evList, "sortstore", storeKey)
		c.touchIn(c.DB, storeKey)
		if c.Store.Journal != nil {
			// Two effects, replayed as one step: MULTI, DEL, RPUSH, EXEC (or inside the EXEC
			// this SORT runs in).
			own := c.tx == nil
			if own {
				c.tx = &txJournal{out: c.Store.Journal}
			}
			c.Emit(c.DB.ID, effDel, storeKey)
			args := make([][]byte, 0, 2+l.Len())
			args = append(args, effRPush, storeKey)
			for i := range l.Len() {
				args = append(args, []byte(l.Index(i)))
			}
			c.Emit(c.DB.ID, args...)
			if own {
				c.tx.finish()
				c.tx = nil
			}
		}
	} else if old := c.DB.Lookup(storeKey, c.Now); old != nil {
		c.DB.Remove(old)
		c.Dirty(1)
		c.notify(evGeneric, "del", storeKey)
		c.touchIn(c.DB, storeKey)
		c.emitDel(storeKey)
	} else {
		c.skipEffect()
	}
	c.W.Int(outputLen)
}

// objLen is the number of elements of a list, set or sorted set.
func objLen(o any) int {
	switch v := o.(type) {
	case *types.List:
		return v.Len()
	case *types.ZSet:
		return v.Len()
	case interface{ Len() int }:
		return v.Len()
	}
	return 0
}

// loadSortItems loads the elements to sort. Without sorting, a list or sorted set loads only
// the LIMIT range, in its own order (reversed by DESC), and start/end are rebased onto it, as
// Redis does.
func loadSortItems(o any, kind store.Kind, dontsort, desc bool, start, end *int64) []sortItem {
	var items []sortItem
	switch kind {
	case store.KindList:
		l := o.(*types.List)
		n := int64(l.Len())
		if dontsort {
			if *end >= *start {
				for k := *start; k <= *end; k++ {
					i := k
					if desc {
						i = n - 1 - k
					}
					items = append(items, sortItem{obj: l.Index(int(i))})
				}
				*end -= *start
				*start = 0
			}
			return items
		}
		items = make([]sortItem, 0, n)
		for i := range int(n) {
			items = append(items, sortItem{obj: l.Index(i)})
		}
	case store.KindSet:
		s := o.(setOperand)
		items = make([]sortItem, 0, s.Len())
		s.Each(func(m string) bool {
			items = append(items, sortItem{obj: m})
			return true
		})
	case store.KindZSet:
		z := o.(*types.ZSet)
		if dontsort {
			if *end >= *start {
				want := int(*end - *start + 1)
				rank := int(*start)
				if desc {
					rank = z.Len() - 1 - rank // Walk counts ranks from the lowest score
				}
				z.Walk(rank, desc, func(m string, _ float64) bool {
					items = append(items, sortItem{obj: m})
					return len(items) < want
				})
				*end -= *start
				*start = 0
			}
			return items
		}
		items = make([]sortItem, 0, z.Len())
		z.Each(func(m string, _ float64) bool {
			items = append(items, sortItem{obj: m})
			return true
		})
	}
	return items
}

// sortLookup is Redis's lookupKeyByPattern: "#" is the element itself; otherwise the first '*'
// of the pattern is replaced by the element and the key read, a string, or with "->field"
// after the '*' a hash field. A pattern without '*' finds nothing.
func (c *Ctx) sortLookup(pattern []byte, elem string) ([]byte, bool) {
	if len(pattern) == 1 && pattern[0] == '#' {
		return []byte(elem), true
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return nil, false
	}
	var field []byte
	keyEnd := len(pattern)
	if f := bytes.Index(pattern[star+1:], []byte("->")); f >= 0 && star+1+f+2 < len(pattern) {
		keyEnd = star + 1 + f
		field = pattern[keyEnd+2:]
	}
	key := make([]byte, 0, keyEnd-1+len(elem))
	key = append(key, pattern[:star]...)
	key = append(key, elem...)
	key = append(key, pattern[star+1:keyEnd]...)
	e := c.LookupRead(key)
	if e == nil {
		return nil, false
	}
	if field != nil {
		if e.Val.Kind != store.KindHash {
			return nil, false
		}
		v, ok := e.Val.Obj().(*types.Hash).Get(string(field))
		return []byte(v), ok
	}
	if e.Val.Kind != store.KindString {
		return nil, false
	}
	return StringBytes(&e.Val, nil), true
}
