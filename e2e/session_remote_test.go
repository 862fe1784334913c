package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/sandboxtest"
)

// TestRemoteSession drives a session of a `crucible serve` process through
// the SDK as a sandbox.SessionRuntime, as the agent would: variables and
// files persist from cell to cell, output streams, a cell cut short by its
// timeout or its caller leaves the session usable, a second client
// reattaches to the session by its ID alone, and once it is closed every
// handle's calls fail with sandbox.ErrSessionClosed and its processes are
// gone from the host.
func TestRemoteSession(t *testing.T) {
	srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"))
	var rt sandbox.SessionRuntime = srv.Client
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Refused before anything starts, as the contract's InputError.
	_, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Bash})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || ie.Field != "language" {
		t.Fatalf("NewSession in bash: %v, want a *sandbox.InputError for field language", err)
	}

	// The marker, in the session's environment, finds its processes.
	mark := make([]byte, 8)
	_, _ = rand.Read(mark)
	marker := "e2e-session-" + hex.EncodeToString(mark)
	sess, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python,
		Files: []sandbox.File{{Name: "seed.txt", Content: sandbox.Data("40")}},
		Env:   map[string]string{"E2E_SESSION_MARK": marker}})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = sess.Close()
		}
	})
	if _, ok := sess.(*client.Session); !ok || sess.ID() == "" {
		t.Fatalf("NewSession returned %T with ID %q, want a *client.Session with an ID", sess, sess.ID())
	}
	if ps := markedProcesses(srv.PID(), marker); len(ps) == 0 {
		t.Errorf("no process below the server carries the session's marker: the final check would prove nothing")
	}

	exec := func(t *testing.T, s sandbox.Session, cell sandbox.Cell) sandbox.Result {
		t.Helper()
		res, err := s.Exec(ctx, cell)
		if err != nil {
			t.Fatalf("Exec(%q): %v", cell.Code, err)
		}
		return res
	}

	t.Run("cells", func(t *testing.T) {
		for _, tc := range []struct {
			code   string
			status sandbox.Status
			value  string
			stdout string
			errTyp string
		}{
			{code: "x = int(open('seed.txt').read()) + 1", status: sandbox.StatusOK},
			{code: "x + 1", status: sandbox.StatusOK, value: "42"},
			{code: "print('x is', x)", status: sandbox.StatusOK, stdout: "x is 41\n"},
			{code: "undefined_name", status: sandbox.StatusError, errTyp: "NameError"},
			{code: "x", status: sandbox.StatusOK, value: "41"}, // a failed cell keeps the namespace
		} {
			res := exec(t, sess, sandbox.Cell{Code: tc.code})
			var typ string
			if res.Error != nil {
				typ = res.Error.Type
			}
			if res.Status != tc.status || res.Value != tc.value || string(res.Stdout) != tc.stdout || typ != tc.errTyp {
				t.Errorf("Exec(%q): status %s value %q stdout %q error %q; want %s %q %q %q (stderr %q)",
					tc.code, res.Status, res.Value, res.Stdout, typ, tc.status, tc.value, tc.stdout, tc.errTyp, res.Stderr)
			}
		}
	})

	t.Run("streamed cell", func(t *testing.T) {
		rec := &sandboxtest.OutputRecorder{}
		res := exec(t, sess, sandbox.Cell{Code: "import sys, time\nprint('a', flush=True)\ntime.sleep(0.3)\nprint('b', file=sys.stderr)\nx",
			OnOutput: rec.Record})
		rec.Returned()
		if res.Status != sandbox.StatusOK || string(res.Stdout) != "a\n" || string(res.Stderr) != "b\n" || res.Value != "41" {
			t.Errorf("streamed cell: status %s stdout %q stderr %q value %q", res.Status, res.Stdout, res.Stderr, res.Value)
		}
		rec.Check(t, res)
	})

	t.Run("files", func(t *testing.T) {
		content := []byte("bytes\x00\xff not UTF-8")
		if err := sess.WriteFile(ctx, "data/in.bin", content); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		if res := exec(t, sess, sandbox.Cell{Code: "open('out.txt', 'w').write(str(len(open('data/in.bin', 'rb').read())))"}); res.Status != sandbox.StatusOK {
			t.Fatalf("a cell reading the file: status %s stderr %q", res.Status, res.Stderr)
		}
		for name, want := range map[string][]byte{"data/in.bin": content, "out.txt": fmt.Appendf(nil, "%d", len(content)), "seed.txt": []byte("40")} {
			if got, err := sess.ReadFile(ctx, name); err != nil || !bytes.Equal(got, want) {
				t.Errorf("ReadFile(%s) = %q, %v; want %q", name, got, err, want)
			}
		}
		files, err := sess.ListFiles(ctx)
		if err != nil {
			t.Fatalf("ListFiles: %v", err)
		}
		sizes := map[string]int64{}
		for _, f := range files {
			if !f.Dir {
				sizes[f.Name] = f.Size
			}
		}
		if sizes["data/in.bin"] != int64(len(content)) || sizes["out.txt"] != 2 || sizes["seed.txt"] != 2 {
			t.Errorf("ListFiles = %+v", files)
		}
		if _, err := sess.ReadFile(ctx, "missing.txt"); !errors.Is(err, fs.ErrNotExist) || !client.IsNotFound(err) {
			t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist and IsNotFound", err)
		}
		if err := sess.WriteFile(ctx, "../escape.txt", []byte("x")); err == nil {
			t.Errorf("WriteFile(../escape.txt) succeeded")
		}
	})

	t.Run("cells cut short", func(t *testing.T) {
		// By its own timeout: interrupted, the session kept.
		res := exec(t, sess, sandbox.Cell{Code: "import time\ny = 1\ntime.sleep(30)", TimeoutMS: 500})
		if res.Status != sandbox.StatusTimeout {
			t.Errorf("a cell past its timeout: status %s (reason %q), want timeout", res.Status, res.Reason)
		}
		// By its caller: Exec returns at once with StatusKilled; the
		// server interrupts the cell and the next one waits for that.
		cctx, ccancel := context.WithCancel(ctx)
		time.AfterFunc(500*time.Millisecond, ccancel)
		start := time.Now()
		res, err := sess.Exec(cctx, sandbox.Cell{Code: "import time\nz = 2\ntime.sleep(30)"})
		if err != nil || res.Status != sandbox.StatusKilled {
			t.Errorf("a cancelled cell: status %s (reason %q), err %v; want killed and no error", res.Status, res.Reason, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Exec returned %s after its start, its context was cancelled after 500ms", d)
		}
		if res := exec(t, sess, sandbox.Cell{Code: "(x, y, z)"}); res.Status != sandbox.StatusOK || res.Value != "(41, 1, 2)" {
			t.Errorf("after the interrupted cells: status %s value %q stderr %q, want (41, 1, 2)", res.Status, res.Value, res.Stderr)
		}
	})

	// Another client (a process that restarted, say) reattaches by ID.
	other, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	again := other.AttachSession(sess.ID())
	t.Run("reattach", func(t *testing.T) {
		if res := exec(t, again, sandbox.Cell{Code: "x * 2"}); res.Status != sandbox.StatusOK || res.Value != "82" {
			t.Errorf("Exec through the reattached handle: status %s value %q", res.Status, res.Value)
		}
		if got, err := again.ReadFile(ctx, "out.txt"); err != nil || len(got) == 0 {
			t.Errorf("ReadFile through the reattached handle: %q, %v", got, err)
		}
		if _, err := other.AttachSession("no-such-session").Exec(ctx, sandbox.Cell{Code: "1"}); !client.IsNotFound(err) {
			t.Errorf("Exec in an unknown session: %v, want IsNotFound", err)
		}
	})

	t.Run("closed", func(t *testing.T) {
		if err := again.Close(); err != nil { // through the other handle
			t.Fatalf("Close: %v", err)
		}
		closed = true
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"Exec", func() error { _, err := sess.Exec(ctx, sandbox.Cell{Code: "x"}); return err }},
			{"Exec, reattached", func() error { _, err := again.Exec(ctx, sandbox.Cell{Code: "x"}); return err }},
			{"WriteFile", func() error { return sess.WriteFile(ctx, "a.txt", []byte("a")) }},
			{"ReadFile", func() error { _, err := sess.ReadFile(ctx, "out.txt"); return err }},
			{"ListFiles", func() error { _, err := sess.ListFiles(ctx); return err }},
			{"Close again", sess.Close},
		} {
			if err := tc.call(); !errors.Is(err, sandbox.ErrSessionClosed) {
				t.Errorf("%s after Close: %v, want sandbox.ErrSessionClosed", tc.name, err)
			}
		}
		if !poll(5*time.Second, func() bool { return len(markedProcesses(srv.PID(), marker)) == 0 }) {
			t.Errorf("processes of the closed session still run: %v", markedProcesses(srv.PID(), marker))
		}
	})
}

// markedProcesses returns the processes below pid whose environment holds
// marker.
func markedProcesses(pid int, marker string) []proc {
	var out []proc
	for _, p := range descendants(pid) {
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
		if bytes.Contains(env, []byte(marker)) && running(p) {
			out = append(out, p)
		}
	}
	return out
}
