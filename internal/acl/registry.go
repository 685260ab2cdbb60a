package acl

import (
	"crypto/subtle"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Registry holds the users. Changes (ACL SETUSER, DELUSER, LOAD, requirepass) take its lock;
// permission checks do not: they read the user's current snapshot.
type Registry struct {
	cat *Catalog

	mu    sync.Mutex
	users map[string]*User
	// def is the default user; its pointer never changes (ACL LOAD copies the loaded rules
	// into it), because every new connection starts with it.
	def *User
	// pubsubAll is acl-pubsub-default: whether new users and selectors start with
	// allchannels (Redis 7.0's default is resetchannels).
	pubsubAll bool

	// Log is the ACL log (ACL LOG).
	Log Log
}

// NewRegistry makes a registry with only the default user, "on nopass ~* &* +@all".
func NewRegistry(cat *Catalog) *Registry {
	r := &Registry{cat: cat, users: map[string]*User{}}
	r.def = &User{name: "default"}
	r.def.st.Store(r.defaultState())
	r.users["default"] = r.def
	r.Log.max = 128
	return r
}

func (r *Registry) defaultState() *state {
	e := editor{cat: r.cat, pubsubDefault: r.pubsubAll, st: r.newState()}
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		_ = e.apply(op)
	}
	return e.st.finish()
}

// Catalog is the command catalog rules are resolved against.
func (r *Registry) Catalog() *Catalog { return r.cat }

// Default is the default user.
func (r *Registry) Default() *User { return r.def }

// SetPubSubDefault applies acl-pubsub-default: allchannels (true) or resetchannels.
func (r *Registry) SetPubSubDefault(all bool) {
	r.mu.Lock()
	r.pubsubAll = all
	r.mu.Unlock()
}

// AuthRequired reports whether a connection that has not authenticated must do so: the
// default user has a password or is off (Redis's authRequired).
func (r *Registry) AuthRequired() bool {
	st := r.def.st.Load()
	return st.flags&flagNoPass == 0 || st.flags&flagDisabled != 0
}

// Get finds a user by exact name.
func (r *Registry) Get(name string) *User {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.users[name]
}

// Authenticate checks a user name and password (Redis's ACLCheckUserCredentials): the user must
// exist and be on, and either be nopass or have the password. The comparison of hashes takes
// the same time wherever they differ.
func (r *Registry) Authenticate(name, pass string) *User {
	r.mu.Lock()
	u := r.users[name]
	r.mu.Unlock()
	if u == nil {
		return nil
	}
	st := u.st.Load()
	if st.flags&flagDisabled != 0 {
		return nil
	}
	if st.flags&flagNoPass != 0 {
		return u
	}
	h := []byte(HashPassword(pass))
	for _, p := range st.passwords {
		if subtle.ConstantTimeCompare(h, []byte(p)) == 1 {
			return u
		}
	}
	return nil
}

// SetRequirePass implements requirepass: the default user's passwords are replaced by pass,
// or it becomes nopass when pass is empty.
func (r *Registry) SetRequirePass(pass string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := editor{cat: r.cat, pubsubDefault: r.pubsubAll, st: cloneState(r.def.st.Load())}
	_ = e.apply("resetpass")
	if pass != "" {
		_ = e.apply(">" + pass)
	} else {
		_ = e.apply("nopass")
	}
	r.def.st.Store(e.st.finish())
}

// SetUser creates or changes a user with rules, all or nothing (ACL SETUSER). The error text is
// Redis's reply without the "ERR " prefix. It returns the user and whether its channel
// permissions shrank, which disconnects its subscribers whose channels are no longer allowed.
func (r *Registry) SetUser(name string, rules []string) (u *User, channelsRevoked bool, err error) {
	if hasSpaces(name) {
		return nil, false, ErrUserSpaces
	}
	merged, bad, ok := mergeSelectorArgs(rules)
	if !ok {
		return nil, false, fmt.Errorf("Unmatched parenthesis in acl selector starting at '%s'.", rules[bad])
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u = r.users[name]
	var old *state
	e := editor{cat: r.cat, pubsubDefault: r.pubsubAll}
	if u != nil {
		old = u.st.Load()
		e.st = cloneState(old)
	} else {
		e.st = r.newState()
	}
	for _, op := range merged {
		if err := e.apply(op); err != nil {
			return nil, false, fmt.Errorf("Error in ACL SETUSER modifier '%s': %s", op, err.Error())
		}
	}
	if u == nil {
		u = &User{name: name}
		r.users[name] = u
	} else {
		channelsRevoked = !channelSuperset(e.st, old)
	}
	u.st.Store(e.st.finish())
	return u, channelsRevoked, nil
}

// channelSuperset reports whether the new state allows at least every channel rule the old one
// had, Redis's shortcut before it looks for subscribers to disconnect
// (ACLKillPubsubClientsIfNeeded).
func channelSuperset(nst, old *state) bool {
	var upcoming []string
	for _, s := range nst.selectors {
		if s.allChannels {
			return true
		}
		upcoming = append(upcoming, s.channels...)
	}
	for _, s := range old.selectors {
		if s.allChannels {
			return false
		}
		for _, c := range s.channels {
			found := false
			for _, n := range upcoming {
				if n == c {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
	}
	return true
}

// ChannelsAllowedAfterRevoke reports whether a subscriber of u keeps the right to its
// subscriptions: every channel and pattern matches one of u's channel rules, matched as
// Redis does when it decides which subscribers to disconnect.
func (u *User) ChannelsAllowedAfterRevoke(channels, patterns []string) bool {
	st := u.st.Load()
	var rules []string
	for _, s := range st.selectors {
		if s.allChannels {
			return true
		}
		rules = append(rules, s.channels...)
	}
	for _, p := range patterns {
		if !channelAllowed(rules, p, true) {
			return false
		}
	}
	for _, c := range channels {
		if !channelAllowed(rules, c, false) {
			return false
		}
	}
	return true
}

// ErrDeleteDefault is ACL DELUSER's reply for the default user.
var ErrDeleteDefault = fmt.Errorf("The 'default' user cannot be removed")

// DelUsers deletes users (ACL DELUSER) and returns the deleted ones: connections
// authenticated as them must be closed. A deleted user denies everything from then on, so a
// connection still running a command batch can do nothing more with it.
func (r *Registry) DelUsers(names []string) ([]*User, error) {
	for _, n := range names {
		if n == "default" {
			return nil, ErrDeleteDefault
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*User
	for _, n := range names {
		if u := r.users[n]; u != nil {
			delete(r.users, n)
			u.st.Store(r.deadState())
			out = append(out, u)
		}
	}
	return out, nil
}

func (r *Registry) deadState() *state {
	st := r.newState()
	st.selectors[0].allChannels = false
	return st.finish()
}

// Names lists user names sorted (ACL USERS).
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.users))
	for n := range r.users {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// List returns every user as a "user <name> <rules>" line, sorted by name (ACL LIST, and the
// ACL file's content).
func (r *Registry) List() []string {
	r.mu.Lock()
	users := make([]*User, 0, len(r.users))
	for _, u := range r.users {
		users = append(users, u)
	}
	r.mu.Unlock()
	sort.Slice(users, func(i, j int) bool { return users[i].name < users[j].name })
	out := make([]string, len(users))
	for i, u := range users {
		out[i] = "user " + u.name + " " + u.st.Load().describe(r.cat)
	}
	return out
}

// Describe renders one user's rules as ACL LIST does.
func (r *Registry) Describe(u *User) string { return u.st.Load().describe(r.cat) }

// Info returns ACL GETUSER's view of a user.
func (r *Registry) Info(u *User) UserInfo {
	st := u.st.Load()
	info := UserInfo{Flags: []string{}, Passwords: append([]string{}, st.passwords...)}
	for _, f := range userFlagNames {
		if st.flags&f.flag != 0 {
			info.Flags = append(info.Flags, f.name)
		}
	}
	info.Root = selectorInfo(r.cat, st.selectors[0])
	info.Selectors = []SelectorInfo{}
	for _, s := range st.selectors[1:] {
		info.Selectors = append(info.Selectors, selectorInfo(r.cat, s))
	}
	return info
}

// ValidateUserLine checks a `user <name> <rules...>` config directive as Redis does while it
// reads redis.conf (ACLAppendUserForLoading): unknown commands are let through there, other
// errors stop the start. It returns the error text Redis prints.
func (r *Registry) ValidateUserLine(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("Error in user declaration '%s': %s", "user", "Wrong format")
	}
	// Redis names the offending rule by its index among the rules but looks it up in the whole
	// line ("user" included), so it quotes the word two places before the rule; kept as is.
	word := func(j int) string {
		if j == 0 {
			return "user"
		}
		if j-1 < len(args) {
			return args[j-1]
		}
		return ""
	}
	merged, bad, ok := mergeSelectorArgs(args[1:])
	if !ok {
		return fmt.Errorf("Error in user declaration '%s': %s", word(bad), "Syntax error")
	}
	e := editor{cat: r.cat, pubsubDefault: r.pubsubAll, st: r.newState()}
	for j, op := range merged {
		if err := e.apply(op); err != nil && err != errUnknownCommand {
			return fmt.Errorf("Error in user declaration '%s': %s", word(j), err.Error())
		}
	}
	return nil
}

// LoadConfigured creates the users declared with `user` lines in the config file, each line
// split into name and rules, as Redis does at startup (ACLLoadConfiguredUsers); a second
// declaration of a user is refused, and the default user, when declared, is reset first.
func (r *Registry) LoadConfigured(lines [][]string) error {
	seen := map[string]bool{}
	for _, l := range lines {
		if len(l) < 1 {
			continue
		}
		if seen[l[0]] {
			return fmt.Errorf("Error in user declaration '%s': %s", l[0], errDuplicateUser.msg)
		}
		seen[l[0]] = true
		if err := r.ValidateUserLine(l); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range lines {
		name := l[0]
		if hasSpaces(name) {
			return fmt.Errorf("Spaces not allowed in ACL usernames")
		}
		merged, _, _ := mergeSelectorArgs(l[1:])
		e := editor{cat: r.cat, pubsubDefault: r.pubsubAll, st: r.newState()}
		if name == "default" {
			e.st = cloneState(r.def.st.Load())
			_ = e.apply("reset")
		}
		for _, op := range merged {
			if err := e.apply(op); err != nil {
				return fmt.Errorf("Error loading ACL rule '%s' for the user named '%s': %s", op, name, err.Error())
			}
		}
		if name == "default" {
			r.def.st.Store(e.st.finish())
			continue
		}
		u := &User{name: name}
		u.st.Store(e.st.finish())
		r.users[name] = u
	}
	return nil
}

// LoadFile replaces every user with the ones the ACL file defines (ACL LOAD, and aclfile at
// startup), all or nothing. file is the name errors mention (the aclfile setting as given).
// The users replaced are returned: connections authenticated as them must be closed, as
// Redis frees them. The default user keeps its identity and takes the file's rules (or the
// initial ones when the file does not define it).
func (r *Registry) LoadFile(path, file string) ([]*User, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Error loading ACLs, opening file '%s': %s", path, errnoText(err))
	}
	var errs strings.Builder
	loaded := map[string]*state{}
	var order []string
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, line := range strings.Split(string(data), "\n") {
		linenum := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		var argv []string
		for _, f := range strings.Split(line, " ") {
			if f != "" {
				argv = append(argv, f)
			}
		}
		if len(argv) == 0 {
			continue
		}
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", file, linenum)
			continue
		}
		if hasSpaces(argv[1]) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", file, linenum, argv[1])
			continue
		}
		if _, dup := loaded[argv[1]]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", argv[1], linenum)
			continue
		}
		e := editor{cat: r.cat, pubsubDefault: r.pubsubAll, st: r.newState()}
		loaded[argv[1]] = e.st
		order = append(order, argv[1])
		merged, _, ok := mergeSelectorArgs(argv[2:])
		if !ok {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", file, linenum)
		}
		syntaxErr := false
		for _, op := range merged {
			op = strings.Trim(op, "\t\r\n")
			if err := e.apply(op); err != nil {
				if err == errUnknownCommand {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", file, linenum, op, err.Error())
				} else if !syntaxErr {
					fmt.Fprintf(&errs, "%s:%d: %s. ", file, linenum, err.Error())
					syntaxErr = true
				}
			}
		}
	}
	if errs.Len() > 0 {
		errs.WriteString("WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
		return nil, fmt.Errorf("%s", errs.String())
	}
	var replaced []*User
	for name, u := range r.users {
		if name != "default" {
			u.st.Store(r.deadState())
			replaced = append(replaced, u)
		}
	}
	users := map[string]*User{"default": r.def}
	for _, name := range order {
		st := loaded[name].finish()
		if name == "default" {
			r.def.st.Store(st)
			continue
		}
		u := &User{name: name}
		u.st.Store(st)
		users[name] = u
	}
	if _, ok := loaded["default"]; !ok {
		r.def.st.Store(r.defaultState())
	}
	r.users = users
	return replaced, nil
}

// SaveFile writes every user to path in the ACL file format (ACL SAVE): a temporary file in the
// same directory, fsynced, then renamed over the old one, so a crash leaves the old file or
// the new one.
func (r *Registry) SaveFile(path string) error {
	var b strings.Builder
	for _, l := range r.List() {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	tmp := fmt.Sprintf("%s.tmp-%d-%d", path, os.Getpid(), time.Now().UnixMilli())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(b.String())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if d, derr := os.Open(filepath.Dir(path)); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// errnoText is strerror's wording for the common errors, as Redis's messages carry it.
func errnoText(err error) string {
	switch {
	case os.IsNotExist(err):
		return "No such file or directory"
	case os.IsPermission(err):
		return "Permission denied"
	}
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
