package linux

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// hostDir opens dir as a working directory, as openWorkDir opens a
// sandbox's.
func hostDir(t *testing.T, dir string) *workDir {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := &workDir{fd: fd}
	t.Cleanup(w.close)
	return w
}

// holes creates path as size bytes of holes, as ftruncate makes them.
func holes(path string, size int64) error {
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return err
	}
	return os.Truncate(path, size)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestArtifactBudget checks what the host reads of each kind of file a
// program leaves: content only within the content budget, a digest of a
// larger file only when the program wrote all of it (no holes) and the
// read budget allows, nothing of a file of holes, never a special file.
func TestArtifactBudget(t *testing.T) {
	dense := bytes.Repeat([]byte("x"), 3000)
	for _, tc := range []struct {
		name     string
		make     func(path string) error
		budget   artifactBudget
		want     sandbox.Artifact // Name is filled in; no artifact if Size is -1
		wantRead int64            // bytes taken from the read budget
	}{
		{"small file returned", func(p string) error { return os.WriteFile(p, []byte("hello"), 0o644) },
			artifactBudget{content: 1024, read: 4096},
			sandbox.Artifact{MIME: "application/octet-stream", Size: 5, SHA256: digest([]byte("hello")), Content: []byte("hello")}, 5},
		{"written file over the content budget: digest only", func(p string) error { return os.WriteFile(p, dense, 0o644) },
			artifactBudget{content: 2048, read: 4096},
			sandbox.Artifact{MIME: "application/octet-stream", Size: 3000, SHA256: digest(dense), ContentOmitted: true}, 3000},
		{"written file over the read budget: size only", func(p string) error { return os.WriteFile(p, dense, 0o644) },
			artifactBudget{content: 2048, read: 2999},
			sandbox.Artifact{MIME: "application/octet-stream", Size: 3000, ContentOmitted: true}, 0},
		{"holes over the content budget: size only", func(p string) error { return holes(p, 64<<20) },
			artifactBudget{content: 2048, read: 128 << 20},
			sandbox.Artifact{MIME: "application/octet-stream", Size: 64 << 20, ContentOmitted: true}, 0},
		{"holes within the content budget: returned", func(p string) error { return holes(p, 1000) },
			artifactBudget{content: 2048, read: 4096},
			sandbox.Artifact{MIME: "application/octet-stream", Size: 1000, SHA256: digest(make([]byte, 1000)), Content: make([]byte, 1000)}, 1000},
		{"FIFO skipped", func(p string) error { return syscall.Mkfifo(p, 0o644) },
			artifactBudget{content: 2048, read: 4096}, sandbox.Artifact{Size: -1}, 0},
		{"socket skipped", func(p string) error { _, err := net.Listen("unix", p); return err },
			artifactBudget{content: 2048, read: 4096}, sandbox.Artifact{Size: -1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.bin")
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			budget := tc.budget
			got, err := hostDir(t, dir).artifacts(context.Background(), artifactFilter{}, &budget)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.Size == -1 {
				if len(got) != 0 {
					t.Errorf("artifacts %+v, want none", got)
				}
				return
			}
			want := tc.want
			want.Name = "f.bin"
			if len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(want) {
				t.Errorf("artifacts %+v\nwant [%+v]", got, want)
			}
			if read := tc.budget.read - budget.read; read != tc.wantRead {
				t.Errorf("read %d bytes, want %d", read, tc.wantRead)
			}
		})
	}
}

// TestArtifactsCancelled proves collection stops as soon as its context
// is done: cancelled while the third file is looked at, it returns the
// two found before it and the context's error.
func TestArtifactsCancelled(t *testing.T) {
	dir := t.TempDir()
	for i := range 10 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := 0
	cancelAtThird := artifactFilter{skip: func(entry) bool {
		if seen++; seen == 3 {
			cancel()
		}
		return false
	}}
	got, err := hostDir(t, dir).artifacts(ctx, cancelAtThird, &artifactBudget{content: 1 << 20, read: 1 << 20})
	if err != context.Canceled || len(got) != 2 {
		t.Errorf("artifacts cancelled at the third file: %d found, error %v; want 2 and context.Canceled", len(got), err)
	}
}

// TestRunCancelledWhileCollecting proves a run honours its context while
// the host collects its artifacts: cancelled as collection begins (the
// program has written 32 MiB), Run returns at once with status killed, the
// program's own exit code and a reason saying the artifacts are
// incomplete, and no artifact was read.
func TestRunCancelledWhileCollecting(t *testing.T) {
	testenv.Root(t)
	rt, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testHookCollecting = cancel
	defer func() { testHookCollecting = nil }()
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python,
		Code: "for i in range(4):\n    open(f'f{i}', 'wb').write(b'x' * (8 << 20))"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != sandbox.StatusKilled || res.ExitCode != 0 || !strings.Contains(res.Reason, "artifacts are incomplete") || len(res.Artifacts) != 0 {
		t.Errorf("run cancelled while collecting: status %s, exit %d, reason %q, %d artifacts; want killed, 0, the artifacts said incomplete, none",
			res.Status, res.ExitCode, res.Reason, len(res.Artifacts))
	}
}

// TestRunCancelledWhileBooting proves a run cancelled while its sandbox's
// kernel starts ends as killed, not as a platform failure (the conformance
// suite's Cancel once saw status internal, "context canceled", there).
func TestRunCancelledWhileBooting(t *testing.T) {
	testenv.Root(t)
	rt, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	testHookBooting = cancel
	defer func() { testHookBooting = nil }()
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: "print('ran')"})
	if err != nil {
		t.Fatalf("Run cancelled while booting: %v, want no error", err)
	}
	if res.Status != sandbox.StatusKilled || !strings.Contains(res.Reason, "cancelled") || len(res.Stdout) != 0 {
		t.Errorf("run cancelled while booting: status %s, reason %q, stdout %q; want killed, cancelled, nothing", res.Status, res.Reason, res.Stdout)
	}
}
