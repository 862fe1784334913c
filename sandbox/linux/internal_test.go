package linux

import (
	"context"
	"errors"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/lang"
	"github.com/crucible-sandbox/crucible/sandbox/linux/sandboxinit"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOutputCap(t *testing.T) {
	tests := []struct {
		name      string
		limit     int64
		out, err  string
		truncated bool
	}{
		{"under", 10, "abc", "de", false},
		{"exact", 5, "abc", "de", false},
		{"over", 4, "abc", "de", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hit := 0
			c := &outputCap{remaining: tt.limit, onLimit: func() { hit++ }}
			var o, e capturedStream
			c.drain(strings.NewReader(tt.out), sandbox.StreamStdout, &o)
			c.drain(strings.NewReader(tt.err), sandbox.StreamStderr, &e)
			total := int64(o.buf.Len() + e.buf.Len())
			if tt.truncated != (o.truncated || e.truncated) || (hit == 1) != tt.truncated {
				t.Fatalf("truncated=%v/%v hit=%d", o.truncated, e.truncated, hit)
			}
			if total > tt.limit {
				t.Fatalf("kept %d bytes over a limit of %d", total, tt.limit)
			}
		})
	}
}

func TestImageLayout(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"usr/bin", "etc", "home/alice", "proc", "var"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("usr/bin", filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	root, err := imageLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]sandboxinit.RootEntry{}
	for _, e := range root {
		got[e.Target] = e
	}
	if got["/bin"].Link != "usr/bin" || got["/usr"].Source != filepath.Join(dir, "usr") || got["/etc"].Source == "" {
		t.Fatalf("layout %+v", root)
	}
	for _, hidden := range []string{"/home", "/proc"} {
		if _, ok := got[hidden]; ok {
			t.Errorf("%s must not be bound from an image", hidden)
		}
	}
	if e := got["/home/user"]; e.Link != "/work" || e.Source != "" {
		t.Errorf("/home/user must be a link to /work, got %+v", e)
	}
	if _, err := imageLayout(filepath.Join(dir, "etc")); err == nil {
		t.Error("a directory without /usr accepted as a root filesystem")
	}
}

func TestHostLayoutHidesSecrets(t *testing.T) {
	root, err := hostLayout()
	if err != nil {
		t.Fatal(err)
	}
	linked := false
	for _, e := range root {
		if e == homeLink() {
			linked = true
			continue // a link to the sandbox's own /work, nothing of the host's /home
		}
		for _, bad := range []string{"/home", "/root", "/run", "/var", "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh"} {
			if e.Target == bad || strings.HasPrefix(e.Target, bad+"/") {
				t.Errorf("host layout exposes %s", e.Target)
			}
		}
	}
	if !linked {
		t.Errorf("the host layout has no %s linked to %s", lang.HomeUser, lang.WorkDir)
	}
}

// The host writes a warm sandbox's program where the sandbox side mounts
// the code directory: the two constants must agree.
func TestCodeDirAgrees(t *testing.T) {
	if lang.CodeDir != sandboxinit.CodeDir {
		t.Fatalf("lang.CodeDir %q != sandboxinit.CodeDir %q", lang.CodeDir, sandboxinit.CodeDir)
	}
}

// TestZygoteLearnsRunPages proves that a zygote of the data-science image
// learns, before its first fork, the pages of its memory the run's own
// path writes (python_kernel.py's learn_run_pages: the request's
// decoding, the program's start, the threads' shutdown, the preload's
// atexit handlers, the exit), which every fork then copies while it waits
// for its run: a hundred pages and more.
func TestZygoteLearnsRunPages(t *testing.T) {
	img := testenv.Image(t, "datascience")
	testenv.Root(t)
	rt, err := New(Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest, Warm: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var p *sandboxProc
	for deadline := time.Now().Add(2 * time.Minute); p == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no zygote slot became ready: %+v", rt.WarmStats())
		}
		if rt.WarmStats().Ready > 0 {
			p = takeFrom(context.Background(), rt.zygotes)
		}
	}
	defer func() { // as a run would, with an anomaly: the slot is retired
		f := p.zygote.next
		p.zygote.next = nil
		f.close()
		rt.recycleZygote(p, f.cg, errors.New("taken by a test"))
	}()
	if p.kernel.prefaulted < 100 {
		t.Errorf("the zygote learned %d pages of the run's path, want at least 100", p.kernel.prefaulted)
	}
}
