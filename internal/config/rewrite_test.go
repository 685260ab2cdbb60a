package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// loadFile writes content to a temp config file and loads it with the extra flags.
func loadFile(t *testing.T, content string, flags ...string) (*Config, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hotkv.conf")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Directives(), append([]string{path}, flags...))
	if err != nil {
		t.Fatal(err)
	}
	return c, path
}

func set(t *testing.T, c *Config, pairs ...string) {
	t.Helper()
	var ps [][2]string
	for i := 0; i+1 < len(pairs); i += 2 {
		ps = append(ps, [2]string{pairs[i], pairs[i+1]})
	}
	if err := c.Set(ps, true); err != nil {
		t.Fatal(err)
	}
}

// TestRewriteLikeRedis mirrors what redis-server 7.0.15 writes for the same file and changes
// (checked by hand against it): comments, blank lines and order stay, the first line of a
// directive is replaced in place (an alias's line too, under the primary name), later
// duplicates and extra save lines go, runs of blank lines shrink to one, unknown lines become
// `# ??? ` comments, and what was not in the file is appended after the signature.
func TestRewriteLikeRedis(t *testing.T) {
	c, path := loadFile(t, strings.Join([]string{
		"# top comment",
		"port 7501",
		"",
		"# a block",
		"  maxmemory 100mb",
		"save 900 1",
		"save 300 10",
		"save 60 10000",
		"hash-max-ziplist-entries 20",
		"hash-max-listpack-entries 21",
		"logfile \"\"",
		"maxmemory 200mb",
		"notify-keyspace-events KEA",
		"",
		"",
		"# end",
		"",
	}, "\n"))
	if c.File() != path {
		t.Fatalf("File() = %q, want %q", c.File(), path)
	}
	set(t, c, "maxmemory-policy", "allkeys-lru", "requirepass", "se cret\"", "client-output-buffer-limit", "pubsub 1mb 512kb 30", "save", "900 1 300 10")
	// The line from the file becomes bogus after loading: a directive this server lacks.
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, append(data, []byte("bogus-directive 12\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	users := func() []string { return []string{"user default on #abc ~* &* +@all"} }
	if err := c.Rewrite(RewriteOptions{Users: users}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := strings.Join([]string{
		"# top comment",
		"port 7501",
		"",
		"# a block",
		"maxmemory 200mb",
		"save 900 1",
		"save 300 10",
		"",
		"hash-max-listpack-entries 21",
		"",
		"logfile \"\"",
		"",
		"notify-keyspace-events \"AKE\"",
		"",
		"# end",
		"# ??? bogus-directive 12",
		"", // the old file's final newline, as Redis keeps it
		RewriteSignature,
		"requirepass \"se cret\\\"\"",
		"maxmemory-policy allkeys-lru",
		"client-output-buffer-limit pubsub 1mb 512kb 30",
		"user default on #abc ~* &* +@all",
		"",
	}, "\n")
	if string(got) != want {
		t.Fatalf("rewritten file:\n%s\nwant:\n%s", got, want)
	}
	// A second rewrite changes nothing and writes no second signature.
	if err := c.Rewrite(RewriteOptions{Users: users}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != want {
		t.Fatalf("second rewrite differs:\n%s", again)
	}
	// The result loads back to the same values.
	back, err := Load(Directives(), []string{path})
	if err != nil {
		t.Fatalf("loading the rewritten file: %v", err)
	}
	for _, d := range Directives() {
		if d.Name == "dir" {
			continue
		}
		if back.Get(d.Name) != c.Get(d.Name) {
			t.Errorf("%s: %q after reload, %q before", d.Name, back.Get(d.Name), c.Get(d.Name))
		}
	}
}

// TestRewriteForceAllRoundTrips is Redis's "CONFIG REWRITE sanity": every directive written,
// then loaded back, gives the same CONFIG GET values, for defaults and for changed values
// alike.
func TestRewriteForceAllRoundTrips(t *testing.T) {
	c, path := loadFile(t, "")
	set(t, c, "save", "", "notify-keyspace-events", "Kx", "tls-protocols", "TLSv1.2 TLSv1.3", "maxmemory", "12345",
		"client-output-buffer-limit", "normal 1gb 2mb 3", "requirepass", "a b\\c\n")
	if err := c.Set([][2]string{{"bind", "127.0.0.1 -::1 ::*"}, {"dir", "/tmp/a dir"}}, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Rewrite(RewriteOptions{ForceAll: true}); err != nil {
		t.Fatal(err)
	}
	back, err := Load(Directives(), []string{path})
	if err != nil {
		data, _ := os.ReadFile(path)
		t.Fatalf("loading the rewritten file: %v\n%s", err, data)
	}
	for _, d := range Directives() {
		if back.Get(d.Name) != c.Get(d.Name) {
			t.Errorf("%s: %q after reload, %q before", d.Name, back.Get(d.Name), c.Get(d.Name))
		}
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{"\nsave \"\"\n", "\nmaxmemory 12345\n", "\nclient-output-buffer-limit normal 1gb 2mb 3\n",
		"\nclient-output-buffer-limit replica 256mb 64mb 60\n", "\ndir \"/tmp/a dir\"\n", "\nbind 127.0.0.1 -::1 ::*\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("forced rewrite lacks %q:\n%s", want, data)
		}
	}
}

// TestRewriteDefaultsStayAbsent: directives at their defaults are not appended (save apart,
// which Redis always writes), and a default value in the file is kept in place.
func TestRewriteDefaultsStayAbsent(t *testing.T) {
	c, path := loadFile(t, "# only a comment\nhz 10\nbind 127.0.0.1 -::1\n")
	if err := c.Rewrite(RewriteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# only a comment\nhz 10\nbind 127.0.0.1 -::1\n\n" + RewriteSignature + "\nsave 3600 1\nsave 300 100\nsave 60 10000\n"
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestRewriteUserLines: with an aclfile the config file's user lines are removed (the users
// live in the aclfile); without one they are rewritten in place from the registry.
func TestRewriteUserLines(t *testing.T) {
	c, path := loadFile(t, "user alice on nopass ~* +@all\n# keep\nuser bob off\n")
	if err := c.Rewrite(RewriteOptions{Users: func() []string {
		return []string{"user alice on nopass ~* &* +@all", "user bob off resetchannels -@all", "user carol on"}
	}}); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "user alice on nopass ~* &* +@all\n# keep\nuser bob off resetchannels -@all\n\n" + RewriteSignature + "\nsave 3600 1\nsave 300 100\nsave 60 10000\nuser carol on\n"; string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if err := c.Rewrite(RewriteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(path)
	if strings.Contains(string(got), "user ") {
		t.Fatalf("user lines kept with an aclfile:\n%s", got)
	}
}

func TestRewriteErrors(t *testing.T) {
	c := New(Directives())
	if err := c.Rewrite(RewriteOptions{}); !errors.Is(err, ErrNoConfigFile) || err.Error() != "The server is running without a config file" {
		t.Fatalf("without a file: %v", err)
	}
	c, path := loadFile(t, "port 1\n")
	if err := os.RemoveAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	if err := c.Rewrite(RewriteOptions{}); err == nil || err.Error() != "Rewriting config file: No such file or directory" {
		t.Fatalf("missing directory: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere: no permission error to provoke")
	}
	c, path = loadFile(t, "port 1\n")
	dir := filepath.Dir(path)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	err := c.Rewrite(RewriteOptions{})
	if err == nil || err.Error() != "Rewriting config file: Permission denied" || !errors.Is(err, syscall.EACCES) {
		t.Fatalf("read-only dir: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "hotkv.conf.*")); len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestRewriteKeepsModeAndFollowsLinks: a restricted file stays restricted (it may hold
// requirepass) and a symlinked file is rewritten where it lives.
func TestRewriteKeepsModeAndFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.conf")
	if err := os.WriteFile(real, []byte("port 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.conf")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Directives(), []string{link})
	if err != nil {
		t.Fatal(err)
	}
	set(t, c, "requirepass", "x")
	if err := c.Rewrite(RewriteOptions{}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", fi.Mode(), err)
	}
	fi, _ = os.Stat(real)
	data, _ := os.ReadFile(real)
	if fi.Mode().Perm() != 0o600 || !strings.Contains(string(data), "requirepass \"x\"") {
		t.Fatalf("mode %v, content %q", fi.Mode().Perm(), data)
	}
}

func TestFormatMemory(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1023: "1023", 1024: "1kb", 1536: "1536", 1 << 20: "1mb", 3 << 30: "3gb", 1000: "1000"} {
		if got := FormatMemory(n); got != want {
			t.Errorf("FormatMemory(%d) = %q, want %q", n, got, want)
		}
	}
}
