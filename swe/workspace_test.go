package swe

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestWorkspaceFormats proves each format unpacks to the same repository
// in the sandbox, modes kept, with an empty diff to start from: a tar, a
// gzip'd tar (FromDir's) and a git bundle built by the host's git, whose
// own .git the diff leaves alone.
func TestWorkspaceFormats(t *testing.T) {
	cfg := wsConfig(t)
	git := hostGit(t)
	dir := t.TempDir()
	writeTree(t, dir, tinyRepo)
	gz, err := FromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	zr, err := gzip.NewReader(bytes.NewReader(gz.Archive))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(&plain, zr); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "repo.bundle")
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A", "-f"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "input"}, {"bundle", "create", bundle, "--all"}} {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	bundleBytes, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		repo   Repo
		format RepoFormat
	}{
		{"tar", Repo{Archive: plain.Bytes()}, RepoTar},
		{"tar.gz", gz, RepoTar},
		{"bundle", Repo{Archive: bundleBytes}, RepoBundle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if f := repoFormat(tc.repo); f != tc.format {
				t.Fatalf("detected %q, want %q", f, tc.format)
			}
			w, err := openWorkspace(t.Context(), cfg, tc.repo)
			if err != nil {
				t.Fatal(err)
			}
			defer w.close()
			for name, content := range tinyRepo {
				if got := readRepoFile(t, w, name); got != content {
					t.Errorf("%s: %q, want %q", name, got, content)
				}
			}
			res, err := w.sess.Exec(t.Context(), sandbox.Cell{Code: "import os; print(oct(os.stat('/work/repo/scripts/run.sh').st_mode & 0o777), oct(os.stat('/work/repo/calc.py').st_mode & 0o777))"})
			if err != nil || strings.TrimSpace(string(res.Stdout)) != "0o755 0o644" {
				t.Errorf("modes: %q %v, want 0o755 0o644", res.Stdout, err)
			}
			d, err := w.diff(t.Context())
			if err != nil || d != "" {
				t.Fatalf("diff of the untouched repository: %q %v, want empty", d, err)
			}
		})
	}
}

// TestWorkspaceHostileArchives proves each hostile or broken archive is
// refused inside the sandbox with an input error naming repo.archive and
// what is wrong, and that nothing was written on the host at the paths the
// archive aims at.
func TestWorkspaceHostileArchives(t *testing.T) {
	cfg := wsConfig(t)
	cfg.SessionLimits = sandbox.Limits{DiskBytes: 64 << 20}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	marker := "/tmp/crucible-swe-escape-" + hex.EncodeToString(nonce)
	ok := tarMember{hdr: tar.Header{Name: "ok.py"}, content: "x = 1\n"}
	huge := func() []byte { // 200 MiB of zeros, gzip'd to about 200 KiB, past the 64 MiB disk
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		const size = 200 << 20
		tw.WriteHeader(&tar.Header{Name: "huge.bin", Typeflag: tar.TypeReg, Mode: 0o644, Size: size})
		io.CopyN(tw, zeros{}, size)
		tw.Close()
		zw.Close()
		return buf.Bytes()
	}
	valid := buildTar(t, true, ok)
	for _, tc := range []struct {
		name    string
		archive []byte
		rule    string
	}{
		{"absolute path", buildTar(t, true, ok, tarMember{hdr: tar.Header{Name: marker}, content: "escaped"}), "has an absolute path"},
		{"dot dot", buildTar(t, false, ok, tarMember{hdr: tar.Header{Name: "a/../../../../../.." + marker}, content: "escaped"}), "leads out of the repository"},
		{"link out", buildTar(t, true, tarMember{hdr: tar.Header{Name: "out", Typeflag: tar.TypeSymlink, Linkname: "/tmp"}}), "links to '/tmp', outside the repository"},
		{"link out, written through", buildTar(t, true, tarMember{hdr: tar.Header{Name: "out", Typeflag: tar.TypeSymlink, Linkname: filepath.Dir(marker)}},
			tarMember{hdr: tar.Header{Name: "out/" + filepath.Base(marker)}, content: "escaped"}), "outside the repository"},
		{"relative link out", buildTar(t, true, tarMember{hdr: tar.Header{Name: "d/out", Typeflag: tar.TypeSymlink, Linkname: "../../../../tmp"}}), "outside the repository"},
		{"hard link out", buildTar(t, true, tarMember{hdr: tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}}), "outside the repository"},
		{"device", buildTar(t, true, tarMember{hdr: tar.Header{Name: "null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}), "is a device"},
		{"fifo", buildTar(t, true, tarMember{hdr: tar.Header{Name: "pipe", Typeflag: tar.TypeFifo}}), "is a device, a FIFO"},
		{"huge file", huge(), "could not be unpacked as a tar"},
		{"truncated", valid[:len(valid)/2], "could not be unpacked as a tar"},
		{"corrupt gzip", append([]byte{0x1f, 0x8b, 8, 0}, bytes.Repeat([]byte("garbage!"), 100)...), "could not be unpacked as a tar"},
		{"corrupt bundle", []byte("# v2 git bundle\nnot a ref line\n\ngarbage"), "git clone of the bundle failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openWorkspace(t.Context(), cfg, Repo{Archive: tc.archive})
			ie := asInputError(err)
			if ie == nil || ie.Field != "repo.archive" || !strings.Contains(ie.Rule, tc.rule) {
				t.Fatalf("openWorkspace: %v, want an input error on repo.archive saying %q", err, tc.rule)
			}
			t.Logf("refused: %v", err)
			if _, err := os.Lstat(marker); !os.IsNotExist(err) {
				t.Fatalf("the host's %s exists (%v): the archive wrote outside the sandbox", marker, err)
			}
		})
	}
	// A link inside the repository, then a member written through it,
	// lands inside: allowed. One written through a link that leads out
	// is refused before the link is made.
	t.Run("link inside, written through", func(t *testing.T) {
		w, err := openWorkspace(t.Context(), cfg, Repo{Archive: buildTar(t, true,
			tarMember{hdr: tar.Header{Name: "real", Typeflag: tar.TypeDir, Mode: 0o755}},
			tarMember{hdr: tar.Header{Name: "alias", Typeflag: tar.TypeSymlink, Linkname: "real"}},
			tarMember{hdr: tar.Header{Name: "alias/x.py"}, content: "y = 2\n"})})
		if err != nil {
			t.Fatal(err)
		}
		defer w.close()
		if got := readRepoFile(t, w, "real/x.py"); got != "y = 2\n" {
			t.Fatalf("real/x.py: %q", got)
		}
	})
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestWorkspaceDiff proves the diff holds every kind of change against
// the input (a change, a new file, a deleted file, a binary file, a mode
// change, a new link), leaves bytecode and pytest's cache out, and, given
// to Verify, applies to the pristine repository with git apply.
func TestWorkspaceDiff(t *testing.T) {
	cfg := wsConfig(t)
	repo := tinyRepoTarGz(t)
	w, err := openWorkspace(t.Context(), cfg, repo)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	// The agent's edits, as its bash would make them (in its own cell,
	// the default namespace), including a git commit in the repository
	// that must not move the baseline.
	edit := `import os, subprocess
os.chdir("/work/repo")
src = open("calc.py").read()
open("calc.py", "w").write(src.replace("return a - b", "return a + b", 1))
open("new_module.py", "w").write("VALUE = 42\n")
os.remove("README.md")
open("data/blob.bin", "wb").write(bytes(range(256)) * 4)
os.chmod("calc.py", 0o755)
os.symlink("calc.py", "calc_alias.py")
os.makedirs("__pycache__"); open("__pycache__/calc.cpython-311.pyc", "wb").write(b"\x00pyc")
os.makedirs(".pytest_cache"); open(".pytest_cache/x", "w").write("cache")
open("app.log", "a").write("changed\n")
open("new.log", "w").write("a new ignored file\n")
subprocess.run("git init -q && git add -A && git -c user.name=a -c user.email=a@a commit -qm agent", shell=True, check=True)
`
	if res, err := w.sess.Exec(t.Context(), sandbox.Cell{Code: edit}); err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("edit: %v %s %s", err, res.Status, res.Stderr)
	}
	d, err := w.diff(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"diff --git a/calc.py b/calc.py\nold mode 100644\nnew mode 100755\n",
		"+    return a + b\n",
		"diff --git a/new_module.py b/new_module.py\nnew file mode 100644\n",
		"diff --git a/README.md b/README.md\ndeleted file mode 100644\n",
		"diff --git a/data/blob.bin b/data/blob.bin\n",
		"GIT binary patch\n",
		"diff --git a/calc_alias.py b/calc_alias.py\nnew file mode 120000\n",
		"diff --git a/app.log b/app.log\n",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("the diff lacks %q:\n%s", want, d)
		}
	}
	for _, never := range []string{"__pycache__", ".pytest_cache", ".git/", "new.log"} {
		if strings.Contains(d, never) {
			t.Errorf("the diff holds %s:\n%s", never, d)
		}
	}
	// The same diff applied to the pristine repository in a fresh
	// sandbox reproduces the edits.
	rep, err := Verify(t.Context(), cfg, Task{Repo: repo, Prompt: "p", TestCommand: `test "$(cat new_module.py)" = "VALUE = 42" && test ! -e README.md && test -x calc.py && test -L calc_alias.py && python3 -c "import sys; sys.exit(open('data/blob.bin','rb').read() != bytes(range(256))*4)"`}, d)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Applied != "git apply" || rep.Status != sandbox.StatusOK {
		t.Fatalf("verify: applied %q (%s), status %s exit %d: %s", rep.Applied, rep.ApplyError, rep.Status, rep.ExitCode, rep.Output)
	}
	// A change past maxDiffBytes (5 MiB of random bytes: a binary patch
	// about as large) is refused, saying so.
	if res, err := w.sess.Exec(t.Context(), sandbox.Cell{Code: `import os; open("/work/repo/noise.bin", "wb").write(os.urandom(5 << 20))`}); err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("write noise: %v %s", err, res.Stderr)
	}
	if d, err := w.diff(t.Context()); err == nil || !strings.Contains(err.Error(), "more than the 4194304 a change may be") {
		t.Fatalf("diff of 5 MiB of noise: %d bytes, %v; want an error saying it is too big", len(d), err)
	}
}
