package command

import (
	"bufio"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hotkv/hotkv/internal/rdb"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// MIGRATE moves keys to another Redis-protocol server (Redis or HotKV) by sending it RESTORE
// with each key's DUMP payload, then deleting the keys here unless COPY. It is how keys are
// moved between instances by hand today and by cluster resharding later.
//
// Decisions:
//   - The keys' shards stay locked for the whole exchange (at most `timeout` per step), so no
//     client sees a key both here and there or changes it half-way; Redis blocks the whole
//     server for the same exchange. Other shards go on serving.
//   - Connections to a target are kept for 10 seconds after their last use and reused, as
//     Redis does (INFO migrate_cached_sockets counts them), so that moving keys one MIGRATE at
//     a time does not pay a handshake each. A cached connection that fails before any reply
//     (the target closed it) is replaced by a new one once.
//   - Replies and errors are Redis's: +NOKEY when none of the keys exists, "IOERR error or
//     timeout ..." when the target cannot be reached or stops answering (keys stay here), and
//     "ERR Target instance replied with error: ..." when it refuses a key (that key stays;
//     the keys it accepted are deleted here, as in Redis).
//   - Deleted keys are journaled as DEL effects, so a restart or a replica never brings them
//     back.
func migrateCommands() []*Command {
	return []*Command{
		{Name: "migrate", Arity: -6, Flags: FlagWrite | FlagMovableKeys, ACL: []string{"keyspace", "write", "slow", "dangerous"},
			FirstKey: 3, LastKey: 3, Step: 1,
			KeySpecs: []KeySpec{
				{Flags: KSRW | KSAccess | KSDelete, Begin: 3},
				{Flags: KSRW | KSAccess | KSDelete | KSIncomplete, BeginKeyword: "KEYS", Begin: -2, LastKey: -1, Step: 1},
			},
			GetKeys: migrateKeys, Group: "generic", Since: "2.6.0",
			Complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
			Syntax:     `host port <key | ""> destination-db timeout [COPY] [REPLACE] [AUTH password | AUTH2 username password] [KEYS key [key ...]]`,
			Summary:    "Atomically transfer a key from a Redis instance to another one.",
			Tips:       []string{"nondeterministic_output"},
			Doc: "The target may be Redis or HotKV: the payloads are DUMP's, which Redis restores (streams and hashes with field TTLs excepted, see DUMP). " +
				"The keys' shards stay locked during the transfer; a connection is made per call (Redis caches it for 10 seconds).\n\n" +
				"History: 3.0.0 added `COPY` and `REPLACE`; 3.0.6 added `KEYS`; 4.0.7 added `AUTH`; 6.0.0 added `AUTH2`.",
			Handler: migrateCommand},
	}
}

// migrateKeys is Redis's migrateGetKeys: the key argument, or with KEYS the arguments after
// it. AUTH and AUTH2 values are skipped so that a password spelled "KEYS" is not taken for
// the option.
func migrateKeys(args [][]byte) []int {
	first, n := 3, 1
	for i := 6; i < len(args); i++ {
		switch {
		case EqualFold(args[i], "auth"):
			i++
		case EqualFold(args[i], "auth2"):
			i += 2
		case EqualFold(args[i], "keys"):
			if len(args[3]) == 0 {
				first, n = i+1, len(args)-i-1
			}
			i = len(args)
		}
	}
	out := make([]int, 0, n)
	for i := first; i < first+n; i++ {
		out = append(out, i)
	}
	return out
}

func migrateCommand(c *Ctx) {
	var copyKeys, replace bool
	var username, password []byte
	keys := c.Args[3:4]
	for j := 6; j < len(c.Args); j++ {
		more := len(c.Args) - 1 - j
		switch {
		case c.ArgIs(j, "copy"):
			copyKeys = true
		case c.ArgIs(j, "replace"):
			replace = true
		case c.ArgIs(j, "auth") && more >= 1:
			password = c.Args[j+1]
			j++
		case c.ArgIs(j, "auth2") && more >= 2:
			username, password = c.Args[j+1], c.Args[j+2]
			j += 2
		case c.ArgIs(j, "keys"):
			if len(c.Args[3]) != 0 {
				c.Error("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
				return
			}
			keys = c.Args[j+1:]
			j = len(c.Args)
		default:
			c.Syntax()
			return
		}
	}
	port, ok := c.Int(2)
	if !ok {
		return
	}
	dbid, ok := c.Int(4)
	if !ok {
		return
	}
	timeout, ok := c.Int(5)
	if !ok {
		return
	}
	if timeout <= 0 {
		timeout = 1000
	}

	// The keys that exist now, with their payloads and remaining TTLs.
	type moving struct {
		key     []byte
		e       *store.Entry
		ttl     int64
		payload []byte
	}
	var ms []moving
	for _, k := range keys {
		e := c.LookupRead(k)
		if e == nil {
			continue
		}
		var ttl int64
		if at := e.ExpireAt(); at > 0 {
			ttl = max(1, at-c.Now)
		}
		o, ok := dumpObject(e)
		if !ok {
			c.Error("ERR this value cannot be dumped")
			return
		}
		ms = append(ms, moving{key: k, e: e, ttl: ttl, payload: rdb.Dump(o)})
	}
	if len(ms) == 0 {
		c.skipEffect()
		c.W.Simple("NOKEY")
		return
	}

	step := time.Duration(timeout) * time.Millisecond
	addr := net.JoinHostPort(string(c.Args[1]), strconv.FormatInt(port, 10))
	mkey := migrateKey{c.Store, addr}
	mc, cached := migrateSockets.get(mkey)
	if mc == nil {
		conn, err := net.DialTimeout("tcp", addr, step)
		if err != nil {
			c.skipEffect()
			c.Error("IOERR error or timeout connecting to the client")
			return
		}
		mc = &migrateConn{conn: conn, rd: bufio.NewReader(conn)}
	}
	ok = false
	defer func() {
		if ok {
			migrateSockets.put(mkey, mc)
		} else {
			_ = mc.conn.Close()
		}
	}()
	conn, rd := mc.conn, mc.rd

	// One pipeline: AUTH, SELECT, then a RESTORE per key.
	w := resp.NewWriter()
	sends := 0
	if password != nil {
		if username != nil {
			writeCommand(w, []byte("AUTH"), username, password)
		} else {
			writeCommand(w, []byte("AUTH"), password)
		}
		sends++
	}
	writeCommand(w, []byte("SELECT"), []byte(strconv.FormatInt(dbid, 10)))
	for _, m := range ms {
		args := [][]byte{[]byte("RESTORE"), m.key, []byte(strconv.FormatInt(m.ttl, 10)), m.payload}
		if replace {
			args = append(args, []byte("REPLACE"))
		}
		writeCommand(w, args...)
	}
	_ = conn.SetWriteDeadline(time.Now().Add(step))
	if _, err := conn.Write(w.Buf); err != nil {
		if cached {
			// The target may have closed the idle connection: once more on a fresh one.
			_ = conn.Close()
			migrateCommand(c)
			return
		}
		c.skipEffect()
		c.Error("IOERR error or timeout writing to target instance")
		return
	}

	var readErr error
	readReply := func() (string, bool) {
		_ = conn.SetReadDeadline(time.Now().Add(step))
		line, err := rd.ReadString('\n')
		if err != nil || len(line) < 3 {
			readErr = err
			return "", false
		}
		return line[:len(line)-2], true
	}
	// AUTH and SELECT: an error from either stops the migration with every key kept here.
	for i := 0; i < sends+1; i++ {
		reply, ok := readReply()
		if !ok && i == 0 && cached {
			if ne, isNet := readErr.(net.Error); !isNet || !ne.Timeout() {
				_ = conn.Close()
				migrateCommand(c)
				return
			}
		}
		if !ok {
			c.skipEffect()
			c.Error("IOERR error or timeout reading to target instance")
			return
		}
		if reply[0] == '-' {
			c.skipEffect()
			c.Error("ERR Target instance replied with error: " + reply[1:])
			return
		}
	}
	targetErr := ""
	deleted := 0
	for _, m := range ms {
		reply, ok := readReply()
		if !ok {
			// Keys restored before the connection failed stay in both places, as in Redis.
			if deleted == 0 {
				c.skipEffect()
			}
			c.Error("IOERR error or timeout reading to target instance")
			return
		}
		if reply[0] == '-' {
			if targetErr == "" {
				targetErr = reply[1:]
			}
			continue
		}
		if !copyKeys {
			c.DB.Remove(m.e)
			c.notify(evGeneric, "del", m.key)
			c.emitDel(m.key)
			deleted++
		}
	}
	if deleted > 0 {
		c.Dirty(int64(deleted))
	} else {
		c.skipEffect()
	}
	ok = true // the connection is in a known state: keep it for the next MIGRATE
	if targetErr != "" {
		c.Error("ERR Target instance replied with error: " + targetErr)
		return
	}
	c.W.OK()
}

// migrateIdle is how long a connection to a MIGRATE target stays open unused (Redis's
// MIGRATE_SOCKET_CACHE_TTL).
const migrateIdle = 10 * time.Second

// migrateConn is an open connection to a MIGRATE target.
type migrateConn struct {
	conn     net.Conn
	rd       *bufio.Reader
	lastUsed time.Time
}

// migrateKey names a cached connection: the server's keyspace (one per server, so servers
// sharing a process, as in tests, keep their caches apart) and the target's address.
type migrateKey struct {
	st   *store.Store
	addr string
}

// migrateCache holds idle connections to MIGRATE targets by address. A MIGRATE takes its
// target's connection out while it uses it, so two MIGRATEs to one target at once use two
// connections (the second is closed when the first is back in the cache).
type migrateCache struct {
	mu    sync.Mutex
	conns map[migrateKey]*migrateConn
}

var migrateSockets = &migrateCache{conns: map[migrateKey]*migrateConn{}}

// MigrateCachedSockets is INFO's migrate_cached_sockets: connections to MIGRATE targets kept
// open for reuse.
func MigrateCachedSockets(st *store.Store) int {
	migrateSockets.mu.Lock()
	defer migrateSockets.mu.Unlock()
	n := 0
	for k := range migrateSockets.conns {
		if k.st == st {
			n++
		}
	}
	return n
}

func (m *migrateCache) get(addr migrateKey) (*migrateConn, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mc := m.conns[addr]
	if mc == nil {
		return nil, false
	}
	delete(m.conns, addr)
	return mc, true
}

func (m *migrateCache) put(addr migrateKey, mc *migrateConn) {
	mc.lastUsed = time.Now()
	m.mu.Lock()
	if old := m.conns[addr]; old != nil {
		m.mu.Unlock()
		_ = mc.conn.Close()
		return
	}
	m.conns[addr] = mc
	m.mu.Unlock()
	// Close it once it has been idle for migrateIdle, unless a later MIGRATE took it.
	time.AfterFunc(migrateIdle, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.conns[addr] == mc && time.Since(mc.lastUsed) >= migrateIdle {
			delete(m.conns, addr)
			_ = mc.conn.Close()
		}
	})
}

// writeCommand writes one request in RESP, as a client sends it.
func writeCommand(w *resp.Writer, args ...[]byte) {
	w.Array(len(args))
	for _, a := range args {
		w.Bulk(a)
	}
}
