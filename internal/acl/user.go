package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/hotkv/hotkv/internal/resp"
)

// User is an ACL user. Connections hold a *User for as long as they are authenticated as it;
// its rules live in an immutable snapshot that ACL SETUSER replaces atomically, so a check
// never locks and never sees a half-applied change.
type User struct {
	name string
	st   atomic.Pointer[state]
}

// Name is the user name.
func (u *User) Name() string { return u.name }

// Unrestricted reports whether the user may run every command on every key and channel: the
// default user out of the box. The dispatcher skips all checks for it.
func (u *User) Unrestricted() bool { return u.st.Load().unrestricted }

// Enabled reports whether the user is "on".
func (u *User) Enabled() bool { return u.st.Load().flags&flagEnabled != 0 }

// NoPass reports whether any password authenticates the user.
func (u *User) NoPass() bool { return u.st.Load().flags&flagNoPass != 0 }

// User flags, in the order ACL LIST and ACL GETUSER name them (Redis's ACLUserFlags).
const (
	flagEnabled uint8 = 1 << iota
	flagDisabled
	flagNoPass
	flagSkipSanitize
	flagSanitize
)

var userFlagNames = []struct {
	flag uint8
	name string
}{
	{flagEnabled, "on"}, {flagDisabled, "off"}, {flagNoPass, "nopass"},
	{flagSkipSanitize, "skip-sanitize-payload"}, {flagSanitize, "sanitize-payload"},
}

// state is one immutable version of a user's rules.
type state struct {
	flags     uint8
	passwords []string // lower-case hex SHA-256, in the order added
	selectors []*selector
	// unrestricted caches "the root selector allows everything".
	unrestricted bool
}

// Key pattern permissions (Redis's ACL_READ_PERMISSION, ACL_WRITE_PERMISSION).
const (
	PermRead  uint8 = 1
	PermWrite uint8 = 2
	permAll         = PermRead | PermWrite
)

type keyPattern struct {
	perm    uint8
	pattern string
}

// selector is a set of command, key and channel permissions; a user has a root selector and
// any number of "(...)" selectors, and a command is allowed when one selector allows it all.
type selector struct {
	root, allKeys, allChannels, allCommands bool
	// future is Redis's reserved "future commands" bit: set by +@all, cleared only by -@all.
	// Descriptions start from +@all when it is set.
	future    bool
	allowed   []uint64
	firstArgs map[int][]string
	keys      []keyPattern
	channels  []string
}

func newSelector(cat *Catalog, root, allChannels bool) *selector {
	return &selector{root: root, allChannels: allChannels, allowed: make([]uint64, (cat.Len()+63)/64)}
}

func (s *selector) clone() *selector {
	n := *s
	n.allowed = append([]uint64(nil), s.allowed...)
	if s.firstArgs != nil {
		n.firstArgs = make(map[int][]string, len(s.firstArgs))
		for id, args := range s.firstArgs {
			n.firstArgs[id] = append([]string(nil), args...)
		}
	}
	n.keys = append([]keyPattern(nil), s.keys...)
	n.channels = append([]string(nil), s.channels...)
	return &n
}

func (s *selector) bit(id int) bool { return s.allowed[id/64]&(1<<(id%64)) != 0 }

func (s *selector) setBit(id int, on bool) {
	if on {
		s.allowed[id/64] |= 1 << (id % 64)
	} else {
		s.allowed[id/64] &^= 1 << (id % 64)
		s.allCommands = false
	}
}

// changePerm allows or blocks a command and, for a container, every subcommand; it drops the
// command's allowed first arguments (ACLChangeSelectorPerm).
func (s *selector) changePerm(cat *Catalog, id int, allow bool) {
	s.setBit(id, allow)
	delete(s.firstArgs, id)
	for _, sub := range cat.cmds[id].subs {
		s.setBit(sub, allow)
	}
}

func (s *selector) setCategory(cat *Catalog, bit uint64, allow bool) {
	for id, cmd := range cat.cmds {
		if cmd.cats&bit != 0 {
			s.changePerm(cat, id, allow)
		}
	}
}

func (s *selector) setAll(allow bool) {
	var w uint64
	if allow {
		w = ^uint64(0)
	}
	for i := range s.allowed {
		s.allowed[i] = w
	}
	s.allCommands, s.future = allow, allow
	s.firstArgs = nil
}

// ruleError is a rule that cannot be applied; its text is Redis's ACLSetUserStringError for
// the errno the rule failed with.
type ruleError struct{ msg string }

func (e *ruleError) Error() string { return e.msg }

var (
	errUnknownCommand = &ruleError{"Unknown command or category name in ACL"}
	errRuleSyntax     = &ruleError{"Syntax error"}
	errKeysAfterAll   = &ruleError{"Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"}
	errChanAfterAll   = &ruleError{"Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"}
	errNoSuchPassword = &ruleError{"The password you are trying to remove from the user does not exist"}
	errBadHash        = &ruleError{"The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"}
	errDuplicateUser  = &ruleError{"Duplicate user found. A user can only be defined once in config files"}
	errFirstArgOfSub  = &ruleError{"Allowing first-arg of a subcommand is not supported"}
)

// hasSpaces is Redis's ACLStringHasSpaces: names and patterns may not hold white space or NUL,
// so that rule strings can be written out and read back unambiguously.
func hasSpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// applySelectorRule applies one command, key or channel rule to s (Redis's ACLSetSelector).
func applySelectorRule(cat *Catalog, s *selector, op string) error {
	lop := strings.ToLower(op)
	switch {
	case lop == "allkeys" || op == "~*":
		s.allKeys = true
		s.keys = nil
	case lop == "resetkeys":
		s.allKeys = false
		s.keys = nil
	case lop == "allchannels" || op == "&*":
		s.allChannels = true
		s.channels = nil
	case lop == "resetchannels":
		s.allChannels = false
		s.channels = nil
	case lop == "allcommands" || lop == "+@all":
		s.setAll(true)
	case lop == "nocommands" || lop == "-@all":
		s.setAll(false)
	case op[0] == '~' || op[0] == '%':
		if s.allKeys {
			return errKeysAfterAll
		}
		perm, offset := permAll, 1
		if op[0] == '%' {
			perm = 0
			ok := true
			for ; offset < len(op); offset++ {
				ch := op[offset]
				if ch == 'R' || ch == 'r' {
					if perm&PermRead != 0 {
						ok = false
						break
					}
					perm |= PermRead
				} else if ch == 'W' || ch == 'w' {
					if perm&PermWrite != 0 {
						ok = false
						break
					}
					perm |= PermWrite
				} else if ch == '~' {
					offset++
					break
				} else {
					ok = false
					break
				}
			}
			if perm == 0 || !ok {
				return errRuleSyntax
			}
		}
		pat := op[offset:]
		if hasSpaces(pat) {
			return errRuleSyntax
		}
		found := false
		for i := range s.keys {
			if s.keys[i].pattern == pat {
				s.keys[i].perm |= perm
				found = true
				break
			}
		}
		if !found {
			s.keys = append(s.keys, keyPattern{perm: perm, pattern: pat})
		}
		s.allKeys = false
	case op[0] == '&':
		if s.allChannels {
			return errChanAfterAll
		}
		pat := op[1:]
		if hasSpaces(pat) {
			return errRuleSyntax
		}
		found := false
		for _, c := range s.channels {
			if c == pat {
				found = true
				break
			}
		}
		if !found {
			s.channels = append(s.channels, pat)
		}
		s.allChannels = false
	case op[0] == '+' && (len(op) < 2 || op[1] != '@'):
		name := op[1:]
		bar := strings.LastIndexByte(name, '|')
		if bar < 0 {
			id, ok := cat.ID(name)
			if !ok {
				return errUnknownCommand
			}
			s.changePerm(cat, id, true)
			return nil
		}
		base, sub := name[:bar], name[bar+1:]
		id, ok := cat.ID(base)
		if !ok {
			return errUnknownCommand
		}
		if cat.cmds[id].parent >= 0 {
			return errFirstArgOfSub
		}
		if sub == "" {
			return errRuleSyntax
		}
		if len(cat.cmds[id].subs) > 0 {
			subID, ok := cat.ID(name)
			if !ok {
				return errUnknownCommand
			}
			s.changePerm(cat, subID, true)
			return nil
		}
		// A first argument of a command without subcommands (SELECT|0, DEBUG|OBJECT):
		// deprecated in Redis 7 but still honoured.
		if s.firstArgs == nil {
			s.firstArgs = map[int][]string{}
		}
		for _, a := range s.firstArgs[id] {
			if strings.EqualFold(a, sub) {
				return nil
			}
		}
		s.firstArgs[id] = append(s.firstArgs[id], sub)
	case op[0] == '-' && (len(op) < 2 || op[1] != '@'):
		id, ok := cat.ID(op[1:])
		if !ok {
			return errUnknownCommand
		}
		s.changePerm(cat, id, false)
	case (op[0] == '+' || op[0] == '-') && op[1] == '@':
		bit, ok := cat.categoryBit(op[2:])
		if !ok {
			return errUnknownCommand
		}
		s.setCategory(cat, bit, op[0] == '+')
	default:
		return errRuleSyntax
	}
	return nil
}

// HashPassword is how passwords are stored: the lower-case hex SHA-256 of the clear text, as
// Redis stores them (ACL GETUSER shows this, and '#<hash>' rules take it).
func HashPassword(pass string) string {
	sum := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(sum[:])
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// editor stages changes to a user state: it works on a private copy, so a failed rule leaves
// the user as it was.
type editor struct {
	cat           *Catalog
	pubsubDefault bool // acl-pubsub-default allchannels
	st            *state
}

func (r *Registry) newState() *state {
	return &state{flags: flagDisabled, selectors: []*selector{newSelector(r.cat, true, r.pubsubAll)}}
}

func cloneState(st *state) *state {
	n := &state{flags: st.flags, passwords: append([]string(nil), st.passwords...)}
	n.selectors = make([]*selector, len(st.selectors))
	for i, s := range st.selectors {
		n.selectors[i] = s.clone()
	}
	return n
}

// apply applies one rule (Redis's ACLSetUser).
func (e *editor) apply(op string) error {
	if op == "" {
		return nil
	}
	st := e.st
	lop := strings.ToLower(op)
	switch {
	case lop == "on":
		st.flags = st.flags&^flagDisabled | flagEnabled
	case lop == "off":
		st.flags = st.flags&^flagEnabled | flagDisabled
	case lop == "skip-sanitize-payload":
		st.flags = st.flags&^flagSanitize | flagSkipSanitize
	case lop == "sanitize-payload":
		st.flags = st.flags&^flagSkipSanitize | flagSanitize
	case lop == "nopass":
		st.flags |= flagNoPass
		st.passwords = nil
	case lop == "resetpass":
		st.flags &^= flagNoPass
		st.passwords = nil
	case op[0] == '>' || op[0] == '#':
		var h string
		if op[0] == '>' {
			h = HashPassword(op[1:])
		} else {
			if !validHash(op[1:]) {
				return errBadHash
			}
			h = op[1:]
		}
		found := false
		for _, p := range st.passwords {
			if p == h {
				found = true
				break
			}
		}
		if !found {
			st.passwords = append(st.passwords, h)
		}
		st.flags &^= flagNoPass
	case op[0] == '<' || op[0] == '!':
		var h string
		if op[0] == '<' {
			h = HashPassword(op[1:])
		} else {
			if !validHash(op[1:]) {
				return errBadHash
			}
			h = op[1:]
		}
		idx := -1
		for i, p := range st.passwords {
			if p == h {
				idx = i
				break
			}
		}
		if idx < 0 {
			return errNoSuchPassword
		}
		st.passwords = append(st.passwords[:idx:idx], st.passwords[idx+1:]...)
	case op[0] == '(' && op[len(op)-1] == ')':
		s := newSelector(e.cat, false, e.pubsubDefault)
		args, ok := resp.SplitArgs(op[1 : len(op)-1])
		if !ok {
			// Redis's sdssplitargs fails on unbalanced quotes and the selector is then
			// empty: the rule applies nothing but is accepted.
			args = nil
		}
		for _, a := range args {
			if a == "" {
				continue
			}
			if err := applySelectorRule(e.cat, s, a); err != nil {
				return err
			}
		}
		st.selectors = append(st.selectors, s)
	case lop == "clearselectors":
		st.selectors = st.selectors[:1]
	case lop == "reset":
		for _, r := range []string{"resetpass", "resetkeys", "resetchannels"} {
			_ = e.apply(r)
		}
		if e.pubsubDefault {
			_ = e.apply("allchannels")
		}
		for _, r := range []string{"off", "sanitize-payload", "clearselectors", "-@all"} {
			_ = e.apply(r)
		}
	default:
		return applySelectorRule(e.cat, st.selectors[0], op)
	}
	return nil
}

// finish computes the state's cached facts.
func (st *state) finish() *state {
	root := st.selectors[0]
	st.unrestricted = root.allCommands && root.allKeys && root.allChannels
	return st
}

// mergeSelectorArgs joins a selector written across several arguments ("(~x", "+get)") into
// one, as Redis's ACLMergeSelectorArguments does; an unclosed one returns its index and
// false.
func mergeSelectorArgs(args []string) ([]string, int, bool) {
	out := make([]string, 0, len(args))
	open := -1
	var cur strings.Builder
	for i, op := range args {
		if len(op) > 0 && op[0] == '(' && op[len(op)-1] != ')' {
			open = i
			cur.Reset()
			cur.WriteString(op)
			continue
		}
		if open >= 0 {
			cur.WriteByte(' ')
			cur.WriteString(op)
			if len(op) > 0 && op[len(op)-1] == ')' {
				open = -1
				out = append(out, cur.String())
			}
			continue
		}
		out = append(out, op)
	}
	if open >= 0 {
		return nil, open, false
	}
	return out, 0, true
}

// ErrUserSpaces is ACL SETUSER's reply for a user name with white space or NUL.
var ErrUserSpaces = errors.New("Usernames can't contain spaces or null characters")
