package acl

import (
	"strings"

	"github.com/hotkv/hotkv/internal/glob"
)

// Check results, with Redis's ACL_DENIED_* values: when every selector denies a command, the
// highest reason (and then the last argument) is the one reported and logged.
const (
	Allowed       = 0
	DeniedCommand = 1
	DeniedKey     = 2
	DeniedAuth    = 3
	DeniedChannel = 4
)

// KeyAccess is one key argument of a command line and the permission it needs: PermRead for
// a key spec with the access flag, PermWrite for insert, update or delete, both, or none (a
// key that is only checked for existence needs a pattern of either kind).
type KeyAccess struct {
	Pos  int
	Perm uint8
}

// ChannelRef is one channel argument of a publishing or subscribing command; Pattern marks
// PSUBSCRIBE's patterns, which match channel rules literally.
type ChannelRef struct {
	Pos     int
	Pattern bool
}

// Request is one command line to check.
type Request struct {
	// ID is the command's (or subcommand's) catalog ID.
	ID   int
	Args [][]byte
	// FirstArg is the index of the argument that first-argument rules (SELECT|0) look at.
	FirstArg int
	// Keys computes the key arguments; nil for a command without keys. It is called at most
	// once, and only when a selector restricts keys.
	Keys func() []KeyAccess
	// Channels are the channel arguments, for the Pub/Sub commands that publish or subscribe.
	Channels []ChannelRef
}

// Check reports whether the user may run req (Redis's ACLCheckAllUserCommandPerm): Allowed, or
// the denial and the index of the argument it concerns.
func (u *User) Check(cat *Catalog, req *Request) (reason, pos int) {
	st := u.st.Load()
	if st.unrestricted {
		return Allowed, 0
	}
	var keys []KeyAccess
	keysDone := false
	reason, pos = DeniedCommand, 0
	for _, s := range st.selectors {
		r, p := s.check(cat, req, &keys, &keysDone)
		if r == Allowed {
			return Allowed, 0
		}
		if r > reason || (r == reason && p > pos) {
			reason, pos = r, p
		}
	}
	return reason, pos
}

func (s *selector) check(cat *Catalog, req *Request, keys *[]KeyAccess, keysDone *bool) (int, int) {
	if !s.allCommands && !cat.cmds[req.ID].noAuth && !s.bit(req.ID) {
		args := s.firstArgs[req.ID]
		if len(args) == 0 || len(req.Args) < 2 || req.FirstArg >= len(req.Args) {
			return DeniedCommand, 0
		}
		arg := string(req.Args[req.FirstArg])
		ok := false
		for _, a := range args {
			if strings.EqualFold(a, arg) {
				ok = true
				break
			}
		}
		if !ok {
			return DeniedCommand, 0
		}
	}
	if !s.allKeys && req.Keys != nil {
		if !*keysDone {
			*keys, *keysDone = req.Keys(), true
		}
		for _, k := range *keys {
			if !s.keyAllowed(string(req.Args[k.Pos]), k.Perm) {
				return DeniedKey, k.Pos
			}
		}
	}
	if !s.allChannels {
		for _, c := range req.Channels {
			if !channelAllowed(s.channels, string(req.Args[c.Pos]), c.Pattern) {
				return DeniedChannel, c.Pos
			}
		}
	}
	return Allowed, 0
}

func (s *selector) keyAllowed(key string, perm uint8) bool {
	if s.allKeys {
		return true
	}
	for _, k := range s.keys {
		if k.perm&perm != perm {
			continue
		}
		if glob.Match(k.pattern, key, false) {
			return true
		}
	}
	return false
}

// unrestrictedKeys reports whether the selector may touch every key with perm (Redis's
// ACLSelectorHasUnrestrictedKeyAccess): allkeys, or a "*" pattern with that permission.
func (s *selector) unrestrictedKeys(perm uint8) bool {
	if s.allKeys {
		return true
	}
	for _, k := range s.keys {
		if k.perm&perm == perm && k.pattern == "*" {
			return true
		}
	}
	return false
}

// channelAllowed matches a channel against channel rules. A channel named by PUBLISH or
// SUBSCRIBE matches the rules as patterns; a PSUBSCRIBE pattern must equal a rule literally,
// since a pattern cannot be proven to stay within another pattern.
func channelAllowed(rules []string, channel string, isPattern bool) bool {
	for _, r := range rules {
		if isPattern {
			if r == channel {
				return true
			}
		} else if glob.Match(r, channel, false) {
			return true
		}
	}
	return false
}

// CheckKey reports whether some selector of the user may touch key with perm, for commands
// that reach keys their key specs do not name (Redis's ACLUserCheckKeyPerm).
func (u *User) CheckKey(key string, perm uint8) bool {
	st := u.st.Load()
	if st.unrestricted {
		return true
	}
	for _, s := range st.selectors {
		if s.keyAllowed(key, perm) {
			return true
		}
	}
	return false
}

// CheckCommandWithAllKeys reports whether one selector both allows req and gives perm on every
// key, as SORT's BY and GET options and MIGRATE's KEYS need (Redis's
// ACLUserCheckCmdWithUnrestrictedKeyAccess).
func (u *User) CheckCommandWithAllKeys(cat *Catalog, req *Request, perm uint8) bool {
	st := u.st.Load()
	if st.unrestricted {
		return true
	}
	var keys []KeyAccess
	done := false
	for _, s := range st.selectors {
		if r, _ := s.check(cat, req, &keys, &done); r == Allowed && s.unrestrictedKeys(perm) {
			return true
		}
	}
	return false
}

// CheckChannel reports whether the user may publish or subscribe to channel (or, with
// isPattern, subscribe to the pattern), whatever the command: for Pub/Sub code that checks
// channels itself (Redis's ACLUserCheckChannelPerm).
func (u *User) CheckChannel(channel string, isPattern bool) bool {
	st := u.st.Load()
	for _, s := range st.selectors {
		if s.allChannels || channelAllowed(s.channels, channel, isPattern) {
			return true
		}
	}
	return false
}
