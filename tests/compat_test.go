package tests

// Differential conformance against a real Redis 7.0: every line of the corpus under
// testdata/compat runs on an in-process HotKV and on a redis-server started by the test, in
// RESP2 and again in RESP3, and the replies must be the same bytes. A second check compares
// the COMMAND INFO and COMMAND DOCS metadata of every command both servers have.
//
// Corpus format (testdata/compat/*.txt): one command per line, split as redis-cli and
// sdssplitargs split ("double quotes" with \n \r \t \b \a \\ \" \xHH escapes, 'single quotes'
// with \'). A line starting with # is a comment. Blank lines separate blocks; each block starts
// with FLUSHALL and runs on fresh connections to both servers (database 0, no name, the pass's
// protocol). Directives after the arguments, each an unquoted word starting with #, relax the
// comparison of that line:
//
//	#sort       sort the elements of every array or set whose elements are all scalars
//	            (KEYS, the key list of SCAN) before comparing
//	#sortmap    sort the pairs of a map reply (a RESP3 map, or a RESP2 flat array of
//	            key/value pairs) by key: CONFIG GET of several names, whose order in Redis
//	            follows a randomly seeded hash
//	#shape      compare only the reply's shape: the type of every element and the length of
//	            every aggregate, not scalar contents (RANDOMKEY, INFO, CLIENT LIST, HELLO)
//	#approx N   integers may differ by up to N (PTTL, OBJECT IDLETIME)
//	#resp2      run the line in the RESP2 pass only (likewise #resp3)
//	#known why  a known, accepted difference: the replies are logged, not compared. The test
//	            fails if the replies become equal, so that the mark is removed.
//
// Set HOTKV_REQUIRE_REDIS=1 to fail rather than skip when redis-server is missing.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/testutil"
)

// compatRedisVersion is the Redis release line the corpus and the metadata are pinned to.
const compatRedisVersion = "7.0."

// startCompatRedis starts a redis-server on a free loopback port, stopped when the test ends,
// and returns its address.
func startCompatRedis(t *testing.T) string {
	t.Helper()
	require := os.Getenv("HOTKV_REQUIRE_REDIS") == "1"
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if require {
			t.Fatal("redis-server is not on PATH and HOTKV_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server is not on PATH (set HOTKV_REQUIRE_REDIS=1 to fail instead)")
	}
	dir := t.TempDir()
	var lastLog string
	// The free port may be taken again before redis-server binds it: then redis-server exits
	// and the next attempt picks another port.
	for attempt := 0; attempt < 5; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		var logBuf compatLog
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--enable-debug-command", "yes",
			"--dir", dir, "--daemonize", "no", "--logfile", "", "--loglevel", "warning")
		cmd.Stdout, cmd.Stderr = &logBuf, &logBuf
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		stop := func() {
			_ = cmd.Process.Kill()
			<-exited
		}
		// Ready when the server on the port is this process (INFO's process_id), not one
		// that took the port first.
		wantPID := "process_id:" + strconv.Itoa(cmd.Process.Pid) + "\r\n"
		info := ""
	wait:
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			select {
			case <-exited:
				break wait
			default:
			}
			if s, err := compatProbe(addr); err == nil && strings.Contains(s, wantPID) {
				info = s
				break
			}
		}
		if info == "" {
			stop()
			lastLog = logBuf.String()
			continue
		}
		t.Cleanup(stop)
		version := ""
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "redis_version:"); ok {
				version = v
			}
		}
		if !strings.HasPrefix(version, compatRedisVersion) {
			msg := fmt.Sprintf("the compat corpus is pinned to Redis %sx; redis-server on PATH is %q", compatRedisVersion, version)
			if require {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		return addr
	}
	t.Fatalf("redis-server did not start:\n%s", lastLog)
	return ""
}

// compatProbe asks the server at addr for INFO server, without failing the test when nothing
// answers yet.
func compatProbe(addr string) (string, error) {
	nc, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	if _, err := nc.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return "", err
	}
	br := bufio.NewReader(nc)
	head, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil || size < 0 {
		return "", fmt.Errorf("unexpected INFO reply %q", head)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(br, body); err != nil {
		return "", err
	}
	return string(body), nil
}

// compatLog collects a subprocess's output.
type compatLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *compatLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *compatLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ---- corpus ----

type compatLine struct {
	file    string
	lineNo  int
	args    []string
	sort    bool
	sortMap bool
	shape   bool
	approx  int64
	only    int // 0 both passes, else the protocol
	known   string
}

func (l compatLine) String() string {
	var b strings.Builder
	for i, a := range l.args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(a) > 40 {
			a = a[:20] + fmt.Sprintf("...(%d bytes)", len(a))
		}
		if a == "" || strings.ContainsAny(a, " \"'\\#") || strings.IndexFunc(a, func(r rune) bool { return r < ' ' || r > '~' }) >= 0 {
			b.WriteString(strconv.Quote(a))
		} else {
			b.WriteString(a)
		}
	}
	return b.String()
}

type compatBlock struct {
	file   string
	lineNo int
	lines  []compatLine
}

func loadCompatCorpus(t *testing.T) []compatBlock {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "compat", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files in testdata/compat: %v", err)
	}
	var blocks []compatBlock
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		var cur *compatBlock
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for n := 1; sc.Scan(); n++ {
			text := strings.TrimSpace(sc.Text())
			switch {
			case text == "":
				cur = nil
				continue
			case strings.HasPrefix(text, "#"):
				continue
			}
			l, err := parseCompatLine(text)
			if err != nil {
				t.Fatalf("%s:%d: %v", name, n, err)
			}
			l.file, l.lineNo = name, n
			if cur == nil {
				if !strings.EqualFold(l.args[0], "flushall") || len(l.args) != 1 {
					t.Fatalf("%s:%d: a block must start with FLUSHALL, got %s", name, n, l)
				}
				blocks = append(blocks, compatBlock{file: name, lineNo: n})
				cur = &blocks[len(blocks)-1]
			}
			cur.lines = append(cur.lines, l)
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return blocks
}

// parseCompatLine splits a corpus line as sdssplitargs does, then reads the directives that
// follow the arguments.
func parseCompatLine(s string) (compatLine, error) {
	var l compatLine
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i == len(s) {
			break
		}
		if s[i] == '#' {
			if err := l.directives(s[i:]); err != nil {
				return l, err
			}
			break
		}
		arg, next, err := compatSplitArg(s, i)
		if err != nil {
			return l, err
		}
		l.args = append(l.args, arg)
		i = next
	}
	if len(l.args) == 0 {
		return l, fmt.Errorf("no command")
	}
	return l, nil
}

func (l *compatLine) directives(s string) error {
	fields := strings.Fields(s)
	for j := 0; j < len(fields); j++ {
		switch f := fields[j]; f {
		case "#sort":
			l.sort = true
		case "#sortmap":
			l.sortMap = true
		case "#shape":
			l.shape = true
		case "#resp2":
			l.only = 2
		case "#resp3":
			l.only = 3
		case "#approx":
			if j+1 >= len(fields) {
				return fmt.Errorf("#approx needs a tolerance")
			}
			n, err := strconv.ParseInt(fields[j+1], 10, 64)
			if err != nil {
				return fmt.Errorf("#approx: %v", err)
			}
			l.approx = n
			j++
		case "#known":
			l.known = strings.Join(fields[j+1:], " ")
			if l.known == "" {
				return fmt.Errorf("#known needs a reason")
			}
			return nil
		default:
			return fmt.Errorf("unknown directive %q", f)
		}
	}
	return nil
}

// compatSplitArg reads one argument starting at s[i], with sdssplitargs's quoting rules.
func compatSplitArg(s string, i int) (string, int, error) {
	var b strings.Builder
	inq, insq := false, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case inq:
			switch {
			case c == '\\' && i+3 < len(s) && s[i+1] == 'x' && compatIsHex(s[i+2]) && compatIsHex(s[i+3]):
				v, _ := strconv.ParseUint(s[i+2:i+4], 16, 8)
				b.WriteByte(byte(v))
				i += 3
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				case 't':
					b.WriteByte('\t')
				case 'b':
					b.WriteByte('\b')
				case 'a':
					b.WriteByte('\a')
				default:
					b.WriteByte(s[i])
				}
			case c == '"':
				if i+1 < len(s) && s[i+1] != ' ' && s[i+1] != '\t' {
					return "", 0, fmt.Errorf("closing quote must be followed by a space")
				}
				return b.String(), i + 1, nil
			default:
				b.WriteByte(c)
			}
		case insq:
			switch {
			case c == '\\' && i+1 < len(s) && s[i+1] == '\'':
				b.WriteByte('\'')
				i++
			case c == '\'':
				if i+1 < len(s) && s[i+1] != ' ' && s[i+1] != '\t' {
					return "", 0, fmt.Errorf("closing quote must be followed by a space")
				}
				return b.String(), i + 1, nil
			default:
				b.WriteByte(c)
			}
		default:
			switch c {
			case ' ', '\t':
				return b.String(), i, nil
			case '"':
				inq = true
			case '\'':
				insq = true
			default:
				b.WriteByte(c)
			}
		}
	}
	if inq || insq {
		return "", 0, fmt.Errorf("unbalanced quotes")
	}
	return b.String(), i, nil
}

func compatIsHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// ---- RESP trees ----

// compatNode is a parsed reply: typ is the RESP type byte; str is the header of a scalar (the
// text of a simple string, error, integer, double ...) or the payload of a blob; kids are the
// elements of an aggregate (for a map, keys and values alternate).
type compatNode struct {
	typ  byte
	str  string
	kids []*compatNode
}

func parseCompatReply(t testing.TB, s string) *compatNode {
	t.Helper()
	n, rest, err := parseCompatNode(s)
	if err != nil || rest != "" {
		t.Fatalf("bad reply %q: %v (rest %q)", s, err, rest)
	}
	return n
}

func parseCompatNode(s string) (*compatNode, string, error) {
	end := strings.Index(s, "\r\n")
	if end < 1 {
		return nil, s, fmt.Errorf("no line")
	}
	n := &compatNode{typ: s[0]}
	head, rest := s[1:end], s[end+2:]
	switch n.typ {
	case '$', '=', '!':
		size, err := strconv.Atoi(head)
		if err != nil {
			return nil, s, err
		}
		if size < 0 {
			n.str = head
			return n, rest, nil
		}
		if len(rest) < size+2 {
			return nil, s, fmt.Errorf("short blob")
		}
		n.str = rest[:size]
		return n, rest[size+2:], nil
	case '*', '~', '>', '%', '|':
		size, err := strconv.Atoi(head)
		if err != nil {
			return nil, s, err
		}
		if size < 0 {
			n.str = head
			return n, rest, nil
		}
		if n.typ == '%' || n.typ == '|' {
			size *= 2
		}
		for i := 0; i < size; i++ {
			var kid *compatNode
			kid, rest, err = parseCompatNode(rest)
			if err != nil {
				return nil, s, err
			}
			n.kids = append(n.kids, kid)
		}
		return n, rest, nil
	default:
		n.str = head
		return n, rest, nil
	}
}

func (n *compatNode) aggregate() bool { return strings.IndexByte("*~>%|", n.typ) >= 0 && n.str == "" }

func (n *compatNode) encode(b *strings.Builder) {
	b.WriteByte(n.typ)
	switch {
	case n.aggregate():
		size := len(n.kids)
		if n.typ == '%' || n.typ == '|' {
			size /= 2
		}
		b.WriteString(strconv.Itoa(size) + "\r\n")
		for _, k := range n.kids {
			k.encode(b)
		}
	case strings.IndexByte("$=!", n.typ) >= 0 && n.str != "-1":
		b.WriteString(strconv.Itoa(len(n.str)) + "\r\n" + n.str + "\r\n")
	default:
		b.WriteString(n.str + "\r\n")
	}
}

func (n *compatNode) String() string {
	var b strings.Builder
	n.encode(&b)
	return b.String()
}

// sortLeaves sorts, in place, every array or set whose elements are all scalars.
func (n *compatNode) sortLeaves() {
	if !n.aggregate() {
		return
	}
	flat := true
	for _, k := range n.kids {
		k.sortLeaves()
		if k.aggregate() {
			flat = false
		}
	}
	if flat && (n.typ == '*' || n.typ == '~') {
		sort.Slice(n.kids, func(i, j int) bool { return n.kids[i].String() < n.kids[j].String() })
	}
}

// sortPairs sorts the elements of a map, or of a flat array read as key/value pairs, in pairs
// by key.
func (n *compatNode) sortPairs() {
	if !n.aggregate() || len(n.kids)%2 != 0 {
		return
	}
	type pair struct{ k, v *compatNode }
	pairs := make([]pair, 0, len(n.kids)/2)
	for i := 0; i < len(n.kids); i += 2 {
		pairs = append(pairs, pair{n.kids[i], n.kids[i+1]})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].k.String() < pairs[j].k.String() })
	for i, p := range pairs {
		n.kids[2*i], n.kids[2*i+1] = p.k, p.v
	}
}

// compatSame compares types and aggregate lengths, and scalars too unless shapeOnly; integers
// may differ by tol.
func compatSame(a, b *compatNode, shapeOnly bool, tol int64) bool {
	if a.typ != b.typ || len(a.kids) != len(b.kids) || a.aggregate() != b.aggregate() {
		return false
	}
	if a.aggregate() {
		for i := range a.kids {
			if !compatSame(a.kids[i], b.kids[i], shapeOnly, tol) {
				return false
			}
		}
		return true
	}
	if shapeOnly || a.str == b.str {
		return true
	}
	if a.typ == ':' && tol > 0 {
		x, err1 := strconv.ParseInt(a.str, 10, 64)
		y, err2 := strconv.ParseInt(b.str, 10, 64)
		return err1 == nil && err2 == nil && max(x-y, y-x) <= tol
	}
	return false
}

// ---- the corpus test ----

func TestCompatCorpus(t *testing.T) {
	redisAddr := startCompatRedis(t)
	hot := testutil.StartServer(t)
	blocks := loadCompatCorpus(t)
	commands, known := 0, 0
	for _, b := range blocks {
		commands += len(b.lines)
		for _, l := range b.lines {
			if l.known != "" {
				known++
			}
		}
	}
	t.Logf("compat corpus: %d blocks, %d commands (%d known differences), each run in RESP2 and RESP3", len(blocks), commands, known)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			for _, b := range blocks {
				t.Run(fmt.Sprintf("%s:%d", b.file, b.lineNo), func(t *testing.T) {
					runCompatBlock(t, b, proto, hot.Addr, redisAddr)
				})
			}
		})
	}
}

func runCompatBlock(t *testing.T, b compatBlock, proto int, hotAddr, redisAddr string) {
	hot := testutil.DialAddr(t, hotAddr)
	red := testutil.DialAddr(t, redisAddr)
	if proto == 3 {
		for _, r := range []*testutil.Raw{hot, red} {
			if reply := r.Do("HELLO", "3"); !strings.HasPrefix(reply, "%") {
				t.Fatalf("HELLO 3: %q", reply)
			}
		}
	}
	for _, l := range b.lines {
		if l.only != 0 && l.only != proto {
			continue
		}
		h, r := hot.Do(l.args...), red.Do(l.args...)
		same := h == r
		if !same && (l.sort || l.sortMap || l.shape || l.approx > 0) {
			hn, rn := parseCompatReply(t, h), parseCompatReply(t, r)
			if l.sort {
				hn.sortLeaves()
				rn.sortLeaves()
			}
			if l.sortMap {
				hn.sortPairs()
				rn.sortPairs()
			}
			same = compatSame(hn, rn, l.shape, l.approx)
		}
		where := fmt.Sprintf("%s:%d RESP%d: %s", l.file, l.lineNo, proto, l)
		switch {
		case l.known != "" && same:
			t.Errorf("%s\n  marked #known (%s) but the replies are now equal: remove the mark", where, l.known)
		case l.known != "":
			t.Logf("%s\n  known difference (%s)\n  hotkv: %s\n  redis: %s", where, l.known, compatClip(h, 200), compatClip(r, 200))
		case !same:
			t.Errorf("%s\n  hotkv: %s\n  redis: %s", where, compatClip(h, 2000), compatClip(r, 2000))
		}
	}
}

// compatClip quotes a reply for a message, cut to n bytes.
func compatClip(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:n]) + fmt.Sprintf("... (%d bytes)", len(s))
}

// ---- COMMAND INFO and COMMAND DOCS ----

// compatHotkvOnlySubcommands are subcommands HotKV has that Redis 7.0 does not (Redis 7.2 added
// them); they are listed, not compared.
var compatHotkvOnlySubcommands = map[string]bool{"client|setinfo": true, "client|no-touch": true}

func TestCompatCommandInfo(t *testing.T) {
	redisAddr := startCompatRedis(t)
	hotSrv := testutil.StartServer(t)
	hot, red := hotSrv.Dial(t), testutil.DialAddr(t, redisAddr)
	for _, r := range []*testutil.Raw{hot, red} {
		r.Do("HELLO", "3")
	}
	all := parseCompatReply(t, hot.Do("COMMAND", "INFO"))
	compared := 0
	var hotOnly, redisOnly []string
	for _, entry := range all.kids {
		name := entry.kids[0].str
		theirs := parseCompatReply(t, red.Do("COMMAND", "INFO", name))
		if len(theirs.kids) != 1 || theirs.kids[0].typ == '_' {
			hotOnly = append(hotOnly, name)
			continue
		}
		d := &compatInfoDiff{}
		d.compare(entry, theirs.kids[0])
		compared++
		hotOnly = append(hotOnly, d.hotOnly...)
		redisOnly = append(redisOnly, d.redisOnly...)
		if len(d.diffs) > 0 {
			t.Errorf("COMMAND INFO %s differs from Redis (-hotkv +redis):\n  %s", name, strings.Join(d.diffs, "\n  "))
		}
	}
	t.Logf("compared COMMAND INFO of %d commands; HotKV only: %v; subcommands HotKV does not have yet: %v",
		compared, hotOnly, redisOnly)
	if compared < 60 {
		t.Errorf("only %d commands compared", compared)
	}
}

// compatInfoDiff collects the differences between COMMAND INFO entries, and the subcommands
// only one side has.
type compatInfoDiff struct {
	diffs, hotOnly, redisOnly []string
}

// compare compares two COMMAND INFO entries field by field: sets as sets, key specs in order,
// subcommands keyed by name. A subcommand only Redis has is one HotKV has not implemented
// yet, not a difference; one only HotKV has must be listed in compatHotkvOnlySubcommands.
func (d *compatInfoDiff) compare(h, r *compatNode) {
	name := h.kids[0].str
	if len(h.kids) != 10 || len(r.kids) != 10 {
		d.diffs = append(d.diffs, fmt.Sprintf("%s: %d elements, Redis %d", name, len(h.kids), len(r.kids)))
		return
	}
	field := func(what string, hv, rv string) {
		if hv != rv {
			d.diffs = append(d.diffs, fmt.Sprintf("%s %s:\n    - %s\n    + %s", name, what, hv, rv))
		}
	}
	set := func(n *compatNode) string {
		var out []string
		for _, k := range n.kids {
			out = append(out, k.str)
		}
		sort.Strings(out)
		return "[" + strings.Join(out, " ") + "]"
	}
	field("name", h.kids[0].str, r.kids[0].str)
	field("arity", h.kids[1].str, r.kids[1].str)
	field("flags", set(h.kids[2]), set(r.kids[2]))
	field("first/last/step", h.kids[3].str+" "+h.kids[4].str+" "+h.kids[5].str,
		r.kids[3].str+" "+r.kids[4].str+" "+r.kids[5].str)
	field("acl categories", set(h.kids[6]), set(r.kids[6]))
	field("tips", set(h.kids[7]), set(r.kids[7]))
	var hs, rs []string
	for _, ks := range h.kids[8].kids {
		hs = append(hs, compatCanonical(ks))
	}
	for _, ks := range r.kids[8].kids {
		rs = append(rs, compatCanonical(ks))
	}
	field("key specs", strings.Join(hs, " "), strings.Join(rs, " "))

	subs := map[string]*compatNode{}
	for _, s := range r.kids[9].kids {
		subs[s.kids[0].str] = s
	}
	seen := map[string]bool{}
	for _, s := range h.kids[9].kids {
		sn := s.kids[0].str
		seen[sn] = true
		switch rsub := subs[sn]; {
		case rsub != nil:
			d.compare(s, rsub)
		case compatHotkvOnlySubcommands[sn]:
			d.hotOnly = append(d.hotOnly, sn)
		default:
			d.diffs = append(d.diffs, fmt.Sprintf("%s: subcommand %s is missing from Redis 7.0", name, sn))
		}
	}
	for _, sn := range slices.Sorted(maps.Keys(subs)) {
		if !seen[sn] {
			d.redisOnly = append(d.redisOnly, sn)
		}
	}
}

// compatCanonical renders a reply with map keys and set members sorted, so that equal metadata
// compares equal whatever the order of its maps and sets.
func compatCanonical(n *compatNode) string {
	switch {
	case n.typ == '%' && n.aggregate():
		var pairs []string
		for i := 0; i+1 < len(n.kids); i += 2 {
			pairs = append(pairs, compatCanonical(n.kids[i])+":"+compatCanonical(n.kids[i+1]))
		}
		sort.Strings(pairs)
		return "{" + strings.Join(pairs, " ") + "}"
	case n.aggregate():
		var els []string
		for _, k := range n.kids {
			els = append(els, compatCanonical(k))
		}
		if n.typ == '~' {
			sort.Strings(els)
		}
		return "[" + strings.Join(els, " ") + "]"
	default:
		return n.str
	}
}

// TestCompatCommandDocs compares the summary, group, since and complexity that COMMAND DOCS
// reports for every command and subcommand both servers have. The arguments are not compared:
// HotKV derives them from the syntax line and names groups of arguments differently.
func TestCompatCommandDocs(t *testing.T) {
	redisAddr := startCompatRedis(t)
	hotSrv := testutil.StartServer(t)
	hot, red := hotSrv.Dial(t), testutil.DialAddr(t, redisAddr)
	for _, r := range []*testutil.Raw{hot, red} {
		r.Do("HELLO", "3")
	}
	docsOf := func(r *testutil.Raw, names ...string) map[string]*compatNode {
		args := append([]string{"COMMAND", "DOCS"}, names...)
		m := parseCompatReply(t, r.Do(args...))
		out := map[string]*compatNode{}
		for i := 0; i+1 < len(m.kids); i += 2 {
			out[m.kids[i].str] = m.kids[i+1]
		}
		return out
	}
	fields := func(doc *compatNode) map[string]*compatNode {
		out := map[string]*compatNode{}
		for i := 0; i+1 < len(doc.kids); i += 2 {
			out[doc.kids[i].str] = doc.kids[i+1]
		}
		return out
	}
	var check func(name string, h, r *compatNode)
	compared := 0
	check = func(name string, h, r *compatNode) {
		compared++
		hf, rf := fields(h), fields(r)
		for _, f := range []string{"summary", "since", "group", "complexity"} {
			hv, rv := "", ""
			if n := hf[f]; n != nil {
				hv = n.str
			}
			if n := rf[f]; n != nil {
				rv = n.str
			}
			if hv != rv {
				t.Errorf("COMMAND DOCS %s %s differs from Redis:\n  hotkv: %q\n  redis: %q", name, f, hv, rv)
			}
		}
		if hs, rs := hf["subcommands"], rf["subcommands"]; hs != nil && rs != nil {
			rsubs := map[string]*compatNode{}
			for i := 0; i+1 < len(rs.kids); i += 2 {
				rsubs[rs.kids[i].str] = rs.kids[i+1]
			}
			for i := 0; i+1 < len(hs.kids); i += 2 {
				if rsub := rsubs[hs.kids[i].str]; rsub != nil {
					check(hs.kids[i].str, hs.kids[i+1], rsub)
				}
			}
		}
	}
	hotDocs := docsOf(hot)
	names := slices.Sorted(maps.Keys(hotDocs))
	redisDocs := docsOf(red, names...)
	for _, n := range names {
		if r := redisDocs[n]; r != nil {
			check(n, hotDocs[n], r)
		}
	}
	t.Logf("compared COMMAND DOCS of %d commands and subcommands", compared)
}
