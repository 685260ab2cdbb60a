// Package acl is HotKV's access control, as Redis 7.0 defines it: users with passwords
// (stored as SHA-256), on/off, command permissions by command, subcommand, first argument and
// category, key patterns with read/write permissions, Pub/Sub channel patterns, selectors, the
// ACL file format and the ACL log.
//
// The package knows commands only through a Catalog that internal/command builds from its
// table, so that it imports nothing of the server (ARCHITECTURE.md §8). Users are changed
// copy-on-write: a connection reads its user's permissions with one atomic load and never
// takes a lock, which keeps the default all-permissive user free on the hot path.
package acl

import (
	"sort"
	"strings"
)

// RedisCategories are Redis 7.0's ACL categories in its own order (ACL CAT lists them so, and
// rule descriptions try them so). Categories a command table adds, HotKV's "ratelimit", follow
// in name order.
var RedisCategories = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting",
}

// CommandDef describes one command or subcommand to the ACL engine.
type CommandDef struct {
	// Name is the full lower-case name: "get", "client|list".
	Name string
	// Categories are the ACL categories without '@'.
	Categories []string
	// Parent is the index of the container command in the definitions, -1 for a top-level
	// command. A container comes before its subcommands.
	Parent int
	// NoAuth commands (AUTH, HELLO, QUIT ...) run whatever the user's command permissions.
	NoAuth bool
}

// Catalog is the set of commands rules can name, with one ID per command and subcommand; the
// IDs index the selectors' command bitmaps.
type Catalog struct {
	cmds       []catCmd
	tops       []int // top-level commands, in order
	byName     map[string]int
	categories []string
	catIndex   map[string]int
}

type catCmd struct {
	name   string
	cats   uint64
	parent int
	subs   []int
	noAuth bool
}

// NewCatalog builds a catalog from command definitions; a command's ID is its index in defs.
// Iteration (descriptions, ACL CAT) follows defs' order, so callers pass a stable order:
// Redis walks a hash table whose order changes from run to run, HotKV sorts by name.
func NewCatalog(defs []CommandDef) *Catalog {
	c := &Catalog{byName: make(map[string]int, len(defs)), catIndex: map[string]int{}}
	c.categories = append(c.categories, RedisCategories...)
	var extra []string
	seen := map[string]bool{}
	for _, name := range RedisCategories {
		seen[name] = true
	}
	for _, d := range defs {
		for _, cat := range d.Categories {
			if !seen[cat] {
				seen[cat] = true
				extra = append(extra, cat)
			}
		}
	}
	sort.Strings(extra)
	c.categories = append(c.categories, extra...)
	if len(c.categories) > 64 {
		panic("acl: more than 64 command categories")
	}
	for i, name := range c.categories {
		c.catIndex[name] = i
	}
	c.cmds = make([]catCmd, len(defs))
	for i, d := range defs {
		var bits uint64
		for _, cat := range d.Categories {
			bits |= 1 << c.catIndex[cat]
		}
		c.cmds[i] = catCmd{name: d.Name, cats: bits, parent: d.Parent, noAuth: d.NoAuth}
		c.byName[d.Name] = i
		if d.Parent >= 0 {
			c.cmds[d.Parent].subs = append(c.cmds[d.Parent].subs, i)
		} else {
			c.tops = append(c.tops, i)
		}
	}
	return c
}

// Categories lists the category names in ACL CAT's order.
func (c *Catalog) Categories() []string { return c.categories }

// CategoryCommands lists the full names of the commands and subcommands in a category, for
// ACL CAT <category>; ok is false for an unknown category.
func (c *Catalog) CategoryCommands(category string) (names []string, ok bool) {
	bit, ok := c.categoryBit(category)
	if !ok {
		return nil, false
	}
	names = []string{}
	for _, cmd := range c.cmds {
		if cmd.cats&bit != 0 {
			names = append(names, cmd.name)
		}
	}
	return names, true
}

// ID returns the ID of a command by full name ("get", "config|get"), case-insensitively.
func (c *Catalog) ID(name string) (int, bool) {
	id, ok := c.byName[strings.ToLower(name)]
	return id, ok
}

// Len is the number of commands and subcommands.
func (c *Catalog) Len() int { return len(c.cmds) }

func (c *Catalog) categoryBit(name string) (uint64, bool) {
	i, ok := c.catIndex[strings.ToLower(name)]
	if !ok {
		return 0, false
	}
	return 1 << i, true
}

// Name returns a command's full name.
func (c *Catalog) Name(id int) string { return c.cmds[id].name }

// NoAuth reports whether a command runs whatever the user's command permissions.
func (c *Catalog) NoAuth(id int) bool { return c.cmds[id].noAuth }
