package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSaveNew(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "host-file")
	tests := []struct {
		name     string
		existing func(t *testing.T, dir string) // what dir holds before
		save     string
		want     string // the file written, in dir
	}{
		{"new name", nil, "plot.png", "plot.png"},
		{"dir is created", nil, "x", "x"},
		{"taken by a file", writeIn("data.csv", "mine"), "data.csv", "data-2.csv"},
		{"taken twice", func(t *testing.T, dir string) {
			writeIn("data.csv", "mine")(t, dir)
			writeIn("data-2.csv", "mine")(t, dir)
		}, "data.csv", "data-3.csv"},
		{"a symlink out of dir", symlinkIn("report.txt", outside), "report.txt", "report-2.txt"},
		{"a dangling symlink", symlinkIn("new.txt", filepath.Join(outside+"-missing")), "new.txt", "new-2.txt"},
		{"a directory", func(t *testing.T, dir string) { mkdir(t, filepath.Join(dir, "d")) }, "d", "d-2"},
		{"escaping name", nil, "../../escape", "_.._escape"},
		{"name cleaned, then numbered", writeIn("rf", "mine"), "-rf", "rf-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(outside, []byte("host"), 0o600); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "out")
			if tt.existing != nil {
				mkdir(t, dir)
				tt.existing(t, dir)
			}
			got, err := saveNew(dir, tt.save, []byte("artifact"))
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dir, tt.want); got != want {
				t.Errorf("saveNew(%q) wrote %s, want %s", tt.save, got, want)
			}
			if b, _ := os.ReadFile(got); string(b) != "artifact" {
				t.Errorf("%s holds %q", got, b)
			}
			if b, _ := os.ReadFile(outside); string(b) != "host" {
				t.Errorf("the file outside --out now holds %q", b)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.Type().IsRegular() && e.Name() != tt.want {
					if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); string(b) != "mine" {
						t.Errorf("existing %s was replaced: %q", e.Name(), b)
					}
				}
			}
		})
	}
}

func TestCreateNewNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	writeIn("target", "host")(t, dir)
	symlinkIn("link", target)(t, dir)
	for _, p := range []string{target, filepath.Join(dir, "link")} {
		if err := createNew(p, []byte("from the sandbox")); err == nil {
			t.Errorf("createNew(%s) replaced an existing file", p)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "host" {
		t.Errorf("target holds %q", b)
	}
	if err := createNew(filepath.Join(dir, "fresh"), []byte("ok")); err != nil {
		t.Errorf("createNew of a new file: %v", err)
	}
}

func TestNumberedName(t *testing.T) {
	for _, tt := range []struct {
		name string
		i    int
		want string
	}{{"a.png", 1, "a.png"}, {"a.png", 2, "a-2.png"}, {"a", 3, "a-3"}, {"a.tar.gz", 2, "a.tar-2.gz"}} {
		if got := numberedName(tt.name, tt.i); got != tt.want {
			t.Errorf("numberedName(%q, %d) = %q, want %q", tt.name, tt.i, got, tt.want)
		}
	}
}

func writeIn(name, content string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlinkIn(name, target string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func mkdir(t *testing.T, dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}
