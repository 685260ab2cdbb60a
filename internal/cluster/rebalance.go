package cluster

import (
	"errors"
	"sort"
)

// Plan returns the changes that spread the slots evenly over the shards that have nodes
// (CLUSTERX REBALANCE): unassigned slots are assigned, and each shard above its share moves
// its highest slots, as contiguous ranges, to the shards below theirs. Shares differ by one
// slot at most (the first shards by id get the remainder). Nothing is planned while a move is
// in progress, because the map would change under the plan.
func (m *Map) Plan() ([]Op, error) {
	if len(m.Migrations) > 0 {
		return nil, errors.New("slots are being moved: rebalance once the moves in progress are done")
	}
	var ids []string
	for id := range m.Shards {
		if len(m.shardNodes(id)) > 0 {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, errors.New("no shard has a node yet")
	}
	sort.Strings(ids)
	want := map[string]int{}
	for i, id := range ids {
		want[id] = Slots / len(ids)
		if i < Slots%len(ids) {
			want[id]++
		}
	}
	// Donors give from the end of their ranges; the unassigned slots are the first donor.
	type donor struct {
		id     string
		ranges []Range
		excess int
	}
	count := func(rs []Range) int {
		n := 0
		for _, r := range rs {
			n += r.End - r.Start + 1
		}
		return n
	}
	owner := m.owners()
	var free []Range
	for s := 0; s < Slots; s++ {
		if owner[s] == "" {
			if n := len(free); n > 0 && free[n-1].End == s-1 {
				free[n-1].End = s
			} else {
				free = append(free, Range{s, s})
			}
		}
	}
	donors := []*donor{{id: "", ranges: free, excess: count(free)}}
	need := map[string]int{}
	for _, id := range ids {
		have := count(m.Shards[id].Slots)
		switch {
		case have > want[id]:
			donors = append(donors, &donor{id: id, ranges: Normalize(m.Shards[id].Slots), excess: have - want[id]})
		case have < want[id]:
			need[id] = want[id] - have
		}
	}
	var ops []Op
	for _, id := range ids {
		for need[id] > 0 {
			var d *donor
			for _, c := range donors {
				if c.excess > 0 {
					d = c
					break
				}
			}
			if d == nil {
				break
			}
			last := &d.ranges[len(d.ranges)-1]
			take := min(need[id], d.excess, last.End-last.Start+1)
			piece := Range{last.End - take + 1, last.End}
			if d.id == "" {
				// Unassigned slots are handed out from the start, so that a fresh cluster's
				// shards get ranges in id order (s1 the lowest).
				first := &d.ranges[0]
				take = min(need[id], first.End-first.Start+1)
				piece = Range{first.Start, first.Start + take - 1}
				if first.Start += take; first.Start > first.End {
					d.ranges = d.ranges[1:]
				}
				ops = append(ops, Op{Kind: "assign", Shard: id, Slots: []Range{piece}})
			} else {
				if last.End -= take; last.End < last.Start {
					d.ranges = d.ranges[:len(d.ranges)-1]
				}
				ops = append(ops, Op{Kind: "migrate", Shard: id, Slots: []Range{piece}})
			}
			d.excess -= take
			need[id] -= take
		}
	}
	return ops, nil
}
