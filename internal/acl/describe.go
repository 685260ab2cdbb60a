package acl

import (
	"math"
	"strings"
)

// patternString is a key pattern as rules write it: "~p", "%R~p" or "%W~p".
func (k keyPattern) String() string {
	switch k.perm {
	case PermRead:
		return "%R~" + k.pattern
	case PermWrite:
		return "%W~" + k.pattern
	}
	return "~" + k.pattern
}

// describeCommands renders a selector's command permissions as the shortest rules Redis's
// ACLDescribeSelectorCommandRules finds: +@all or -@all, then the categories that fit best,
// then single commands and first arguments for what is left. Applying the result to a fresh
// selector gives back the same permissions.
func describeCommands(cat *Catalog, s *selector) string {
	var out []string
	fake := newSelector(cat, false, false)
	additive := !s.future
	if additive {
		out = append(out, "-@all")
	} else {
		out = append(out, "+@all")
		fake.setAll(true)
	}
	// temp tracks what the categories applied so far leave unexplained.
	temp := &selector{allowed: append([]uint64(nil), s.allowed...)}
	applied := make([]bool, len(cat.categories))
	for {
		best := -1
		var mindiff, maxsame uint64 = math.MaxInt32, 0
		for j := range cat.categories {
			if applied[j] {
				continue
			}
			var on, off uint64
			bit := uint64(1) << j
			for id, cmd := range cat.cmds {
				if cmd.cats&bit != 0 {
					if temp.bit(id) {
						on++
					} else {
						off++
					}
				}
			}
			diff, same := on, off
			if additive {
				diff, same = off, on
			}
			if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
				best, mindiff, maxsame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		bit := uint64(1) << best
		fake.setCategory(cat, bit, additive)
		temp.setCategory(cat, bit, !additive)
		if additive {
			out = append(out, "+@"+cat.categories[best])
		} else {
			out = append(out, "-@"+cat.categories[best])
		}
		applied[best] = true
	}
	var walk func(ids []int)
	walk = func(ids []int) {
		for _, id := range ids {
			user := s.bit(id)
			if user != fake.bit(id) {
				if user {
					out = append(out, "+"+cat.cmds[id].name)
				} else {
					out = append(out, "-"+cat.cmds[id].name)
				}
				fake.changePerm(cat, id, user)
			}
			walk(cat.cmds[id].subs)
			if !user {
				for _, a := range s.firstArgs[id] {
					out = append(out, "+"+cat.cmds[id].name+"|"+a)
				}
			}
		}
	}
	walk(cat.tops)
	return strings.Join(out, " ")
}

// describeSelector renders keys, channels and commands (ACLDescribeSelector).
func describeSelector(cat *Catalog, s *selector) string {
	var b strings.Builder
	if s.allKeys {
		b.WriteString("~* ")
	} else {
		for _, k := range s.keys {
			b.WriteString(k.String())
			b.WriteByte(' ')
		}
	}
	if s.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.channels {
			b.WriteByte('&')
			b.WriteString(c)
			b.WriteByte(' ')
		}
	}
	b.WriteString(describeCommands(cat, s))
	return b.String()
}

// describe renders a user's rules as ACL LIST and the ACL file write them (ACLDescribeUser).
func (st *state) describe(cat *Catalog) string {
	var b strings.Builder
	for _, f := range userFlagNames {
		if st.flags&f.flag != 0 {
			b.WriteString(f.name)
			b.WriteByte(' ')
		}
	}
	for _, p := range st.passwords {
		b.WriteByte('#')
		b.WriteString(p)
		b.WriteByte(' ')
	}
	for i, s := range st.selectors {
		if i == 0 {
			b.WriteString(describeSelector(cat, s))
		} else {
			b.WriteString(" (")
			b.WriteString(describeSelector(cat, s))
			b.WriteByte(')')
		}
	}
	return b.String()
}

// SelectorInfo is one selector as ACL GETUSER shows it.
type SelectorInfo struct {
	Commands, Keys, Channels string
}

// UserInfo is ACL GETUSER's view of a user.
type UserInfo struct {
	Flags     []string
	Passwords []string
	Root      SelectorInfo
	Selectors []SelectorInfo
}

func selectorInfo(cat *Catalog, s *selector) SelectorInfo {
	info := SelectorInfo{Commands: describeCommands(cat, s)}
	if s.allKeys {
		info.Keys = "~*"
	} else {
		parts := make([]string, len(s.keys))
		for i, k := range s.keys {
			parts[i] = k.String()
		}
		info.Keys = strings.Join(parts, " ")
	}
	if s.allChannels {
		info.Channels = "&*"
	} else {
		parts := make([]string, len(s.channels))
		for i, c := range s.channels {
			parts[i] = "&" + c
		}
		info.Channels = strings.Join(parts, " ")
	}
	return info
}
