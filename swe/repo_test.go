package swe

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRepoValidate proves each rule of a repository's bytes: present,
// bounded, a known format, and a named format that the bytes are.
func TestRepoValidate(t *testing.T) {
	tarBytes := buildTar(t, false, tarMember{hdr: tar.Header{Name: "a.py"}, content: "x = 1\n"})
	gz := buildTar(t, true, tarMember{hdr: tar.Header{Name: "a.py"}, content: "x = 1\n"})
	bundle := []byte("# v2 git bundle\n0123456789012345678901234567890123456789 HEAD\n\nPACK")
	for _, tc := range []struct {
		name        string
		repo        Repo
		field, rule string // "" field: valid
		format      RepoFormat
	}{
		{"tar detected", Repo{Archive: tarBytes}, "", "", RepoTar},
		{"tar.gz detected", Repo{Archive: gz}, "", "", RepoTar},
		{"bundle detected", Repo{Archive: bundle}, "", "", RepoBundle},
		{"v3 bundle detected", Repo{Archive: []byte("# v3 git bundle\n@object-format=sha1\n")}, "", "", RepoBundle},
		{"empty tar", Repo{Archive: make([]byte, 1024)}, "", "", RepoTar},
		{"tar named", Repo{Format: RepoTar, Archive: gz}, "", "", RepoTar},
		{"missing", Repo{}, "repo.archive", "is required", ""},
		{"too big", Repo{Archive: make([]byte, MaxRepoBytes+1)}, "repo.archive", "at most", ""},
		{"garbage", Repo{Archive: []byte("hello, not an archive at all")}, "repo.archive", "must be a tar", ""},
		{"zip", Repo{Archive: []byte("PK\x03\x04 zip bytes")}, "repo.archive", "must be a tar", ""},
		{"unknown format", Repo{Format: "zip", Archive: gz}, "repo.format", `must be "tar", "bundle"`, ""},
		{"bundle named, tar given", Repo{Format: RepoBundle, Archive: gz}, "repo.format", "not a git bundle", ""},
		{"tar named, bundle given", Repo{Format: RepoTar, Archive: bundle}, "repo.format", "not a tar", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateRepo(tc.repo)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				if f := repoFormat(tc.repo); f != tc.format {
					t.Fatalf("format %q, want %q", f, tc.format)
				}
				return
			}
			ie := asInputError(err)
			if ie == nil || ie.Field != tc.field || !strings.Contains(ie.Rule, tc.rule) {
				t.Fatalf("validate: %v, want an input error on %s saying %q", err, tc.field, tc.rule)
			}
		})
	}
}

// TestTaskValidate proves each rule of a task: the prompt, the test
// command and the named tests, each error naming its field.
func TestTaskValidate(t *testing.T) {
	repo := Repo{Archive: buildTar(t, true, tarMember{hdr: tar.Header{Name: "a.py"}, content: "x = 1\n"})}
	many := make([]string, MaxTests+1)
	for i := range many {
		many[i] = "test_a.py"
	}
	for _, tc := range []struct {
		name        string
		task        Task
		field, rule string
	}{
		{"valid", Task{Repo: repo, Prompt: "fix it", TestCommand: "make test", Tests: []string{"tests/test_x.py::test_y[1-2]", "test_a.py", "t/test_b.py::TestC::test_d"}}, "", ""},
		{"bad repo", Task{Prompt: "fix it"}, "repo.archive", "is required"},
		{"no prompt", Task{Repo: repo, Prompt: "  \n"}, "task", "is required"},
		{"long prompt", Task{Repo: repo, Prompt: strings.Repeat("x", MaxTaskBytes+1)}, "task", "at most"},
		{"NUL prompt", Task{Repo: repo, Prompt: "fix\x00it"}, "task", "NUL"},
		{"long command", Task{Repo: repo, Prompt: "p", TestCommand: strings.Repeat("x", maxTestCommandBytes+1)}, "test_command", "at most"},
		{"NUL command", Task{Repo: repo, Prompt: "p", TestCommand: "pytest\x00"}, "test_command", "NUL"},
		{"too many tests", Task{Repo: repo, Prompt: "p", Tests: many}, "tests", "at most 1000"},
		{"empty test", Task{Repo: repo, Prompt: "p", Tests: []string{"a.py", ""}}, "tests[1]", "empty path"},
		{"node without file", Task{Repo: repo, Prompt: "p", Tests: []string{"::test_y"}}, "tests[0]", "empty path"},
		{"absolute", Task{Repo: repo, Prompt: "p", Tests: []string{"/etc/test_x.py"}}, "tests[0]", "absolute"},
		{"dot dot", Task{Repo: repo, Prompt: "p", Tests: []string{"../test_x.py::t"}}, "tests[0]", "clean path"},
		{"inner dot dot", Task{Repo: repo, Prompt: "p", Tests: []string{"a/../../test_x.py"}}, "tests[0]", "clean path"},
		{"newline", Task{Repo: repo, Prompt: "p", Tests: []string{"test_x.py::t\nrm -rf /"}}, "tests[0]", "one line"},
		{"NUL", Task{Repo: repo, Prompt: "p", Tests: []string{"test_x.py\x00"}}, "tests[0]", "NUL"},
		{"long test", Task{Repo: repo, Prompt: "p", Tests: []string{"a.py::" + strings.Repeat("t", maxTestIDBytes)}}, "tests[0]", "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.task.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				return
			}
			ie := asInputError(err)
			if ie == nil || ie.Field != tc.field || !strings.Contains(ie.Rule, tc.rule) {
				t.Fatalf("validate: %v, want an input error on %s saying %q", err, tc.field, tc.rule)
			}
		})
	}
}

// tarEntry is what FromDir packed for one name.
type tarEntry struct {
	typ     byte
	mode    int64
	link    string
	content string
}

// readTarGz lists a gzip'd tar's members.
func readTarGz(t *testing.T, b []byte) map[string]tarEntry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	got := map[string]tarEntry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		c, _ := io.ReadAll(tr)
		got[h.Name] = tarEntry{h.Typeflag, h.Mode, h.Linkname, string(c)}
	}
}

// TestFromDir proves what a host directory packs to: files with their
// modes, directories, links kept as links (one to a secret outside packs
// the link, never the secret), .git and special files left out; and that
// a directory past MaxRepoBytes fails naming it.
func TestFromDir(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("TOP SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.py": "x = 1\n", "bin/run.sh": "#!/bin/sh\n", ".git/config": "[core]\n", "sub/.git": "gitdir: elsewhere\n"})
	for _, l := range [][2]string{{secret, "leak"}, {"a.py", "alias.py"}, {"/etc", "etc"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != RepoTar || validateRepo(r) != nil {
		t.Fatalf("format %q, validate %v", r.Format, validateRepo(r))
	}
	got := readTarGz(t, r.Archive)
	want := map[string]tarEntry{
		"a.py":       {tar.TypeReg, 0o644, "", "x = 1\n"},
		"bin/":       {tar.TypeDir, 0o755, "", ""},
		"bin/run.sh": {tar.TypeReg, 0o755, "", "#!/bin/sh\n"},
		"sub/":       {tar.TypeDir, 0o755, "", ""},
		"leak":       {tar.TypeSymlink, 0o777, secret, ""},
		"alias.py":   {tar.TypeSymlink, 0o777, "a.py", ""},
		"etc":        {tar.TypeSymlink, 0o777, "/etc", ""},
	}
	if len(got) != len(want) {
		t.Errorf("packed %v, want %v", got, want)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g != w {
			t.Errorf("%s: packed %+v (present %v), want %+v", name, g, ok, w)
		}
	}
	if bytes.Contains(r.Archive, []byte("TOP SECRET")) {
		t.Error("the secret behind a link was packed")
	}

	t.Run("too big", func(t *testing.T) {
		big := t.TempDir()
		f, err := os.Create(filepath.Join(big, "noise.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(f, rand.Reader, MaxRepoBytes+1<<20); err != nil { // random bytes do not compress
			t.Fatal(err)
		}
		f.Close()
		_, err = FromDir(big)
		ie := asInputError(err)
		if ie == nil || ie.Field != "repo" || !strings.Contains(ie.Rule, big) || !strings.Contains(ie.Rule, "more than") {
			t.Fatalf("FromDir: %v, want an input error naming %s and the limit", err, big)
		}
	})
	t.Run("too much", func(t *testing.T) {
		big := t.TempDir()
		f, err := os.Create(filepath.Join(big, "zeros.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(maxRepoFileBytes + 1); err != nil { // sparse: nothing on disk, refused before it is read
			t.Fatal(err)
		}
		f.Close()
		start := time.Now()
		_, err = FromDir(big)
		ie := asInputError(err)
		if ie == nil || ie.Field != "repo" || !strings.Contains(ie.Rule, big) || !strings.Contains(ie.Rule, "bytes of files") {
			t.Fatalf("FromDir: %v, want an input error naming %s and the limit", err, big)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("FromDir took %v: it read the file before refusing it", took)
		}
	})
	t.Run("not a directory", func(t *testing.T) {
		_, err := FromDir(secret)
		if ie := asInputError(err); ie == nil || !strings.Contains(ie.Rule, "must be a directory") {
			t.Fatalf("FromDir: %v", err)
		}
	})
}
