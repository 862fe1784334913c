package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// hostileOutput is a program that attacks the operator's terminal: it sets
// the clipboard (OSC 52), prints a fake summary line, conceals what follows
// (ESC[8m), moves the cursor up and erases lines, overwrites a line with a
// lone \r, reverses the text direction (U+202E) and sends C1 CSI, as
// U+009B and as the raw byte 0x9b.
const hostileOutput = `import sys
sys.stdout.write("\x1b]52;c;cm0gLXJmIH4=\x07")
sys.stdout.write("crucible: ok (exit 0) · wall 1 ms\n\x1b[8m")
sys.stdout.write("progress 100%\rFAKE")
sys.stdout.write("\u202eevil\u202c\x9b2J")
sys.stdout.flush(); sys.stdout.buffer.write(b"\x9b31m")
sys.stderr.write("\x1b[1A\x1b[2K\x1bP+q\x1b\\\x08\x08\x08\x1b[8m")
sys.stdout.flush(); sys.stderr.flush()
`

// hostileArtifacts is a session cell that creates files named to attack
// the host: control characters and escapes, leading dots and dashes, a
// name colliding with a symlink the test planted in --out, and a name
// near NAME_MAX.
const hostileArtifacts = `open("a\nb\x1b[31m.txt", "w").write("x")
open(".bashrc", "w").write("x")
open("-rf", "w").write("x")
open("planted", "w").write("pwned")
open("\u202egnp.exe", "w").write("x")
open("x" * 250 + ".txt", "w").write("x")
`

// ttyRun runs the crucible command with stdout and stderr on a
// pseudo-terminal and stdin from the given text; it returns everything the
// terminal received and the exit code.
func ttyRun(t *testing.T, stdin string, args ...string) (string, int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1", "NO_COLOR=") // an empty NO_COLOR is unset
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var out bytes.Buffer
	_, err = io.Copy(&out, ptmx) // ends with EIO once the command has closed the terminal
	if err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return out.String(), cmd.ProcessState.ExitCode()
}

// ownStyle is the styling the CLI itself puts around its status lines on a
// terminal; it is the only escape sequence allowed on the screen.
var ownStyle = strings.NewReplacer(styleOn, "", styleOff, "")

// checkInert fails unless screen, minus the CLI's own styling, holds no
// control character but \n, \t and the \r\n the terminal makes of \n, no
// raw 8-bit byte (a C1 control such as 0x9b) and no bidirectional control.
func checkInert(t *testing.T, screen string) {
	t.Helper()
	plain := strings.ReplaceAll(ownStyle.Replace(screen), "\r\n", "\n")
	for i := 0; i < len(plain); {
		r, size := utf8.DecodeRuneInString(plain[i:])
		bad := r == utf8.RuneError && size == 1 || unicode.IsControl(r) && r != '\n' && r != '\t' || unicode.Is(unicode.Bidi_Control, r)
		if bad {
			t.Errorf("the terminal received %q at byte %d: %q", plain[i:i+size], i, plain[max(0, i-20):min(len(plain), i+20)])
		}
		i += size
	}
}

func TestHostileOutputOnTerminal(t *testing.T) {
	testenv.Root(t)
	screen, code := ttyRun(t, "", "run", "--lang", "python", "-c", hostileOutput+"sys.exit(3)\n")
	t.Logf("screen: %q", screen)
	if code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	checkInert(t, screen)
	lines := strings.Split(strings.TrimRight(ownStyle.Replace(screen), "\r\n"), "\r\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "crucible: error (exit 3)") {
		t.Errorf("the last line on the terminal is %q, want the real summary on a line of its own", last)
	}
	if !strings.Contains(screen, styleOn+"crucible: error (exit 3)") {
		t.Errorf("the real summary is not styled as the CLI's own: %q", screen)
	}
	for _, visible := range []string{`\x1b]52;c;`, `\x1b[8m`, `progress 100%\rFAKE`, `\u202eevil`, `\u009b2J`, `\x9b31m`} {
		if !strings.Contains(screen, visible) {
			t.Errorf("the neutralised output lacks %q", visible)
		}
	}
}

func TestHostileArtifactNamesOnTerminal(t *testing.T) {
	testenv.Root(t)
	out := t.TempDir()
	target := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(target, []byte("host data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(out, "planted")); err != nil {
		t.Fatal(err)
	}
	screen, _ := ttyRun(t, hostileArtifacts, "session", "--out", out)
	t.Logf("screen: %q", screen)
	checkInert(t, screen)
	if b, _ := os.ReadFile(target); string(b) != "host data" {
		t.Errorf("the host file behind the symlink in --out now holds %q", b)
	}
	var names []string
	err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != out {
			rel, _ := filepath.Rel(out, p)
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("files in --out: %q", names)
	if len(names) != 7 { // the planted symlink and the six artifacts
		t.Errorf("%d entries in --out, want 7: %q", len(names), names)
	}
	for _, n := range names {
		if n != "planted" && cleanName(n) != n {
			t.Errorf("host file name %q is not clean (clean: %q)", n, cleanName(n))
		}
	}
}
