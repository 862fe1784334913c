package docker

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteTreeHome proves the archive ImportImage sends holds the
// sandbox's /home (a directory of root's with the link /home/user to
// /work) in place of the image's own, whatever that is, and everything
// else of the tree: a /home that is a link must not cut the walk short.
func TestWriteTreeHome(t *testing.T) {
	for _, tc := range []struct {
		name string
		home func(t *testing.T, root string) // makes the image's /home
	}{
		{"home directory with a user", func(t *testing.T, root string) {
			mkfile(t, filepath.Join(root, "home", "builder", "secret"), "the build's")
			mkfile(t, filepath.Join(root, "home", "user", "old"), "the image's")
		}},
		{"home a link", func(t *testing.T, root string) {
			if err := os.Symlink("var/home", filepath.Join(root, "home")); err != nil {
				t.Fatal(err)
			}
		}},
		{"no home", func(t *testing.T, root string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			mkfile(t, filepath.Join(root, "etc", "hostname"), "image")
			mkfile(t, filepath.Join(root, "usr", "bin", "python3"), "#!")
			mkfile(t, filepath.Join(root, "var", "lib", "x"), "x")
			tc.home(t, root)
			var buf bytes.Buffer
			if err := writeTree(&buf, root); err != nil {
				t.Fatal(err)
			}
			got := map[string]*tar.Header{}
			tr := tar.NewReader(&buf)
			for {
				h, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if got[h.Name] != nil {
					t.Errorf("%s twice in the archive", h.Name)
				}
				got[h.Name] = h
			}
			if h := got["home/"]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != 0 || h.Mode&0o022 != 0 {
				t.Errorf("home/: want a directory of root's that only root writes, got %+v", h)
			}
			if h := got["home/user"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/work" {
				t.Errorf("home/user: want a link to /work, got %+v", h)
			}
			for name := range got {
				if strings.HasPrefix(name, "home") && name != "home/" && name != "home/user" {
					t.Errorf("the image's %s is in the archive", name)
				}
			}
			for _, want := range []string{"etc/hostname", "usr/bin/python3", "var/lib/x"} {
				if got[want] == nil {
					t.Errorf("%s missing from the archive", want)
				}
			}
		})
	}
}

func mkfile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
