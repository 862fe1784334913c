package docker

import (
	"bufio"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// fakeKernel speaks as the kernel does on its four channels: for each
// request line on fd 3 it writes a lot to stdout and a line to stderr,
// then the request back on fd 4 as its reply; SIGINT makes it reply
// "interrupted"; the request "exit" makes it exit with code 3.
const fakeKernel = `import os, signal, sys
rep = os.fdopen(4, "w")
def on_int(*_):
    rep.write("interrupted\n"); rep.flush()
signal.signal(signal.SIGINT, on_int)
rep.write("ready\n"); rep.flush()
for line in os.fdopen(3):
    if line.strip() == "exit":
        sys.exit(3)
    sys.stdout.write("o" * 200000); sys.stdout.flush()
    sys.stderr.write("e\n"); sys.stderr.flush()
    rep.write(line); rep.flush()
`

// TestSessionMux runs the multiplexer on the host with a fake kernel and
// checks its promises: a reply's frames come after every byte of output
// written before it; "!interrupt" reaches the kernel as SIGINT; the
// kernel's exit ends the stream with its wait status.
func TestSessionMux(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "python3 on the host", "install python3")
	}
	dir := t.TempDir()
	mux, kern := filepath.Join(dir, "mux.py"), filepath.Join(dir, "kernel.py")
	if err := os.WriteFile(mux, []byte(muxSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kern, []byte(fakeKernel), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, mux, py, kern)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	r := bufio.NewReader(stdout)
	// next returns the next frame, joining the reply channel's bytes into
	// lines.
	var replyBuf strings.Builder
	digests := 0
	next := func() (byte, string) {
		for {
			var hdr [5]byte
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				t.Fatalf("the stream ended: %v", err)
			}
			payload := make([]byte, binary.BigEndian.Uint32(hdr[1:]))
			if _, err := io.ReadFull(r, payload); err != nil {
				t.Fatal(err)
			}
			if hdr[0] == 'w' {
				digests++ // /work's digest ("" here: the host has no /work)
				continue
			}
			if hdr[0] != 'r' {
				return hdr[0], string(payload)
			}
			replyBuf.Write(payload)
			if s := replyBuf.String(); strings.HasSuffix(s, "\n") {
				replyBuf.Reset()
				return 'r', s
			}
		}
	}
	if k, p := next(); k != 'r' || p != "ready\n" {
		t.Fatalf("first frame %c %q, want the greeting", k, p)
	}
	for _, req := range []string{"one", "two"} {
		io.WriteString(stdin, req+"\n")
		var out, errOut int
		for {
			k, p := next()
			if k == 'o' {
				out += len(p)
				continue
			}
			if k == 'e' {
				errOut += len(p)
				continue
			}
			if k != 'r' || p != req+"\n" {
				t.Fatalf("frame %c %q, want the reply %q", k, p, req)
			}
			break
		}
		if out != 200000 || errOut != 2 {
			t.Errorf("request %s: %d bytes of stdout and %d of stderr before the reply, want 200000 and 2", req, out, errOut)
		}
	}
	if digests != 3 {
		t.Errorf("%d digests of /work, want one before each of the 3 replies", digests)
	}
	io.WriteString(stdin, "!interrupt\n")
	if k, p := next(); k != 'r' || p != "interrupted\n" {
		t.Errorf("after !interrupt: %c %q, want the kernel's SIGINT reply", k, p)
	}
	io.WriteString(stdin, "exit\n")
	if k, p := next(); k != 'x' || p != "768" {
		t.Errorf("after exit: %c %q, want the exit frame with wait status 768 (code 3)", k, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the multiplexer: %v", err)
	}
}
