package main

// Checks of the files in deploy/ and the Dockerfile, with the real binary: the documented
// default config starts a server at every default, the systemd unit verifies, the image's
// build command makes a static binary, and the image's health check works.

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/config"
)

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

// TestDefaultConfStartsWithDefaults: deploy/hotkv.conf, unchanged but for the port given as a
// flag, starts the server, and CONFIG GET reports every default.
func TestDefaultConfStartsWithDefaults(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "hotkv.conf"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "hotkv.conf", string(data))
	port := freePort(t)
	p := startProc(t, dir, "hotkv.conf", "--port", strconv.Itoa(port), "--dir", "./data")
	p.port = port
	if !p.waitReady(t, 20*time.Second) {
		t.Fatalf("not serving from deploy/hotkv.conf:\n%s", p.out.String())
	}
	c := client(p)
	defer c.Close()
	got := configAll(t, c)
	defaults := config.New(config.Directives())
	for _, d := range config.Directives() {
		if d.Hidden {
			continue // not in CONFIG GET *, as in Redis
		}
		want := defaults.Get(d.Name)
		switch d.Name {
		case "port":
			want = strconv.Itoa(port)
		case "dir":
			want, _ = filepath.EvalSymlinks(filepath.Join(dir, "data"))
		}
		if got[d.Name] != want {
			t.Errorf("CONFIG GET %s = %q, want the default %q", d.Name, got[d.Name], want)
		}
	}
	// A CONFIG REWRITE of the documented file changes only what changed (and writes the port
	// flag's value and the absolute dir in place).
	if err := c.ConfigSet(ctx, "maxmemory", "2gb").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "CONFIG", "REWRITE").Err(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "hotkv.conf"))
	want := strings.Replace(string(data), "\nmaxmemory 0\n", "\nmaxmemory 2gb\n", 1)
	want = strings.Replace(want, "\nport 6379\n", "\nport "+strconv.Itoa(port)+"\n", 1)
	want = strings.Replace(want, "\ndir \"./data\"\n", "\ndir \""+got["dir"]+"\"\n", 1)
	// Redis always writes the users when there is no aclfile.
	want += "\n" + config.RewriteSignature + "\nuser default on nopass ~* &* +@all\n"
	if string(after) != want {
		t.Fatalf("CONFIG REWRITE of deploy/hotkv.conf changed more than maxmemory, port and dir:\n%s", after)
	}
}

// TestDockerConfParses: the image's config (deploy/docker.conf including the defaults) starts
// a server listening on every address with its data in the given dir.
func TestDockerConfParses(t *testing.T) {
	dir := t.TempDir()
	defaults, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "hotkv.conf"))
	if err != nil {
		t.Fatal(err)
	}
	docker, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "docker.conf"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "hotkv-defaults.conf", string(defaults))
	// The image's absolute paths, moved into the test's directory.
	conf := strings.ReplaceAll(string(docker), "/etc/hotkv/", dir+"/")
	conf = strings.ReplaceAll(conf, "\ndir /data\n", "\ndir "+dir+"\n")
	writeFile(t, dir, "hotkv.conf", conf)
	port := freePort(t)
	p := startProc(t, dir, "hotkv.conf", "--port", strconv.Itoa(port))
	p.port = port
	if !p.waitReady(t, 20*time.Second) {
		t.Fatalf("not serving from deploy/docker.conf:\n%s", p.out.String())
	}
	c := client(p)
	defer c.Close()
	got := c.ConfigGet(ctx, "bind").Val()["bind"]
	if got != "* -::*" {
		t.Fatalf("bind %q, want every address", got)
	}
	if pm := c.ConfigGet(ctx, "protected-mode").Val()["protected-mode"]; pm != "yes" {
		t.Fatalf("protected-mode %q", pm)
	}
}

// TestSystemdUnitVerifies runs `systemd-analyze verify` on deploy/hotkv.service, with
// ExecStart pointing at the binary the tests built (verify requires an executable there), and
// checks the values the docs promise.
func TestSystemdUnitVerifies(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "hotkv.service"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(unit)
	for _, want := range []string{"\nType=notify\n", "\nExecStart=/usr/local/bin/hotkv-server /etc/hotkv/hotkv.conf --supervised systemd\n",
		"\nUser=hotkv\n", "\nNoNewPrivileges=yes\n", "\nProtectSystem=strict\n", "\nReadWritePaths=/var/lib/hotkv", "\nTimeoutStopSec="} {
		if !strings.Contains(text, want) {
			t.Errorf("hotkv.service lacks %q", strings.TrimSpace(want))
		}
	}
	m := regexp.MustCompile(`\nLimitNOFILE=(\d+)\n`).FindStringSubmatch(text)
	maxclients, _ := strconv.Atoi(config.New(config.Directives()).Get("maxclients"))
	if m == nil {
		t.Error("hotkv.service sets no LimitNOFILE")
	} else if n, _ := strconv.Atoi(m[1]); n < maxclients+32 {
		t.Errorf("LimitNOFILE=%d is below maxclients %d + 32", n, maxclients)
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	path := filepath.Join(t.TempDir(), "hotkv.service")
	writeFile(t, filepath.Dir(path), "hotkv.service", strings.ReplaceAll(text, "/usr/local/bin/hotkv-server", serverBin))
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		// Unknown keys and bad values are warnings with exit status 0: any output fails.
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDockerBuildIsStatic runs the Dockerfile's `go build` line as it stands and checks that
// the binary is static (no ELF interpreter, no shared libraries), as the distroless/static
// runtime image requires. Docker itself is not needed.
func TestDockerBuildIsStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary again")
	}
	df, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RUN ((?:\w+=\S+ )*)go build (.*) -o (\S+) (\./cmd/hotkv-server)$`).FindStringSubmatch(string(df))
	if m == nil {
		t.Fatal("no `RUN [ENV=...] go build ... -o <out> ./cmd/hotkv-server` line in the Dockerfile")
	}
	env := strings.Fields(m[1])
	if !strings.Contains(m[1], "CGO_ENABLED=0") {
		t.Fatalf("the Dockerfile's build does not set CGO_ENABLED=0: %q", m[0])
	}
	flags := shellWords(m[2])
	bin := filepath.Join(t.TempDir(), "hotkv-server")
	args := append(append([]string{"build"}, flags...), "-o", bin, m[4])
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary has an ELF interpreter: it is dynamically linked")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Fatalf("the binary needs shared libraries: %v", libs)
	}
	if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil || !strings.Contains(string(out), "HotKV server") {
		t.Fatalf("the static binary does not run: %v %s", err, out)
	}
}

// TestCheckHealth: --check-health exits 0 on PONG and 1 when nothing listens, when the
// password is missing or wrong, with the reason on standard error.
func TestCheckHealth(t *testing.T) {
	p := startServer(t, "")
	if code, out := runToExit(t, "", "--check-health", p.addr()); code != 0 {
		t.Fatalf("healthy server: exit %d %s", code, out)
	}
	if code, out := runToExit(t, "", "--check-health", strconv.Itoa(p.port)); code != 0 {
		t.Fatalf("a bare port: exit %d %s", code, out)
	}
	if code, out := runToExit(t, "", "--check-health", "127.0.0.1:"+strconv.Itoa(freePort(t))); code != 1 || !strings.Contains(out, "unhealthy") {
		t.Fatalf("nothing listening: exit %d %s", code, out)
	}
	if code, out := runToExit(t, "", "--check-health", p.addr(), "--bogus"); code != 2 || !strings.Contains(out, "Usage") {
		t.Fatalf("bad argument: exit %d %s", code, out)
	}

	securedPort := freePort(t)
	secured := startProc(t, "", "--requirepass", "pw", "--port", strconv.Itoa(securedPort), "--bind", "127.0.0.1")
	secured.port = securedPort
	if !secured.waitAnswering(t, 20*time.Second) {
		t.Fatalf("not serving:\n%s", secured.out.String())
	}
	if code, out := runToExit(t, "", "--check-health", secured.addr()); code != 1 || !strings.Contains(out, "NOAUTH") {
		t.Fatalf("no password: exit %d %s", code, out)
	}
	t.Setenv("REDISCLI_AUTH", "wrong")
	if code, out := runToExit(t, "", "--check-health", secured.addr()); code != 1 || !strings.Contains(out, "WRONGPASS") {
		t.Fatalf("wrong password: exit %d %s", code, out)
	}
	t.Setenv("REDISCLI_AUTH", "pw")
	if code, out := runToExit(t, "", "--check-health", secured.addr()); code != 0 {
		t.Fatalf("right password: exit %d %s", code, out)
	}
	if code, out := runToExit(t, "", "--check-health", secured.addr(), "--user", "default"); code != 0 {
		t.Fatalf("--user default: exit %d %s", code, out)
	}
}

// shellWords splits a shell command line's words, joining double-quoted parts into the word
// they are in (-ldflags="-s -w" is one word, -ldflags=-s -w).
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
