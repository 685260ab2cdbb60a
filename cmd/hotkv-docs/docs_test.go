package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hotkv/hotkv/internal/config"
)

// TestDocsAreCurrent fails when docs/ no longer matches the command and config tables: a
// command or directive was added or changed without regenerating the reference.
func TestDocsAreCurrent(t *testing.T) {
	files, err := render()
	if err != nil {
		t.Fatalf("rendering the docs: %v", err)
	}
	docs := filepath.Join("..", "..", "docs")
	var stale []string
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(docs, filepath.FromSlash(rel)))
		if err != nil || !bytes.Equal(got, want) {
			stale = append(stale, "docs/"+rel)
		}
	}
	pages, _ := filepath.Glob(filepath.Join(docs, "commands", "*.md"))
	for _, p := range pages {
		rel, _ := filepath.Rel(docs, p)
		if _, ok := files[filepath.ToSlash(rel)]; !ok {
			stale = append(stale, "docs/"+filepath.ToSlash(rel)+" (no longer generated)")
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		t.Fatalf("the generated reference is out of date:\n  %s\nRun `%s` from the repository root and commit the result.",
			strings.Join(stale, "\n  "), regenerate)
	}
}

// TestWriteIsRepeatable checks the generator end to end in a temporary directory: a second
// run changes nothing, and a page of a vanished group is removed.
func TestWriteIsRepeatable(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "commands"), 0o755); err != nil {
		t.Fatal(err)
	}
	ghost := filepath.Join(dir, "commands", "ghost.md")
	if err := os.WriteFile(ghost, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ghost); !os.IsNotExist(err) {
		t.Fatalf("stale page kept: %v", err)
	}
	first, err := os.ReadFile(filepath.Join(dir, "commands", "server.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## CONFIG\n", "### CONFIG GET\n", "```\nMEMORY USAGE key [SAMPLES count]\n```", "- **ACL categories:** `@read` `@slow`"} {
		if !bytes.Contains(first, []byte(want)) {
			t.Errorf("server.md lacks %q", want)
		}
	}
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(filepath.Join(dir, "commands", "server.md"))
	if !bytes.Equal(first, second) {
		t.Fatal("two runs differ")
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "config.md"))
	if err != nil || !bytes.Contains(cfg, []byte("### enable-debug-command\n")) {
		t.Fatalf("config.md: %v", err)
	}
}

// TestConfFileIsCurrent fails when deploy/hotkv.conf no longer matches the config table.
func TestConfFileIsCurrent(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("..", "..", "deploy", "hotkv.conf"))
	if err != nil || !bytes.Equal(got, confFile(config.Directives())) {
		t.Fatalf("deploy/hotkv.conf is out of date (%v): run `%s` from the repository root and commit the result", err, regenerate)
	}
}

// TestConfFileDocumentsEveryDirective: each directive's doc and its default line are there
// (but for Redis's directives HotKV only accepts and its test hooks, which docs/config.md
// lists and the file names there), and the file loads back to every default.
func TestConfFileDocumentsEveryDirective(t *testing.T) {
	data := confFile(config.Directives())
	for _, d := range config.Directives() {
		lines, _ := d.FileLines(d.Default)
		if d.Inert || d.Unsupported != "" || d.Hidden {
			if bytes.Contains(data, []byte("\n"+lines[0]+"\n")) {
				t.Errorf("Redis-only directive listed: %q", lines[0])
			}
			continue
		}
		if !bytes.Contains(data, []byte("\n"+lines[0]+"\n")) {
			t.Errorf("no default line %q", lines[0])
		}
	}
	path := filepath.Join(t.TempDir(), "hotkv.conf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Directives(), []string{path})
	if err != nil {
		t.Fatal(err)
	}
	defaults := config.New(config.Directives())
	for _, d := range config.Directives() {
		if c.Get(d.Name) != defaults.Get(d.Name) {
			t.Errorf("%s: %q from the file, default %q", d.Name, c.Get(d.Name), defaults.Get(d.Name))
		}
	}
}
