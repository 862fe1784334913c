package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// echoStdin is a program that prints its standard input back, between
// brackets.
const echoStdin = `import sys; print("[" + sys.stdin.read() + "]")`

// TestRunStdin checks where `crucible run` takes the program's standard
// input from: a pipe or file on its own standard input when the program
// comes from -c or FILE, --stdin FILE, --stdin -; and that /dev/null
// works, that too much input is refused naming --stdin and the rule, and
// that "run -" cannot also give its standard input to the program.
func TestRunStdin(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "echo.py")
	input := filepath.Join(dir, "input.txt")
	huge := filepath.Join(dir, "huge")
	for name, content := range map[string]string{prog: echoStdin, input: "from a file"} {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, sandbox.MaxStdinBytes+1); err != nil { // sparse: costs no disk
		t.Fatal(err)
	}
	hugeStdin := func(t *testing.T) io.Reader {
		f, err := os.Open(huge)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	piped := func(s string) func(*testing.T) io.Reader {
		return func(*testing.T) io.Reader { return strings.NewReader(s) }
	}
	tests := []struct {
		name   string
		stdin  func(*testing.T) io.Reader // nil: /dev/null
		args   []string
		code   int
		stdout string
		stderr []string // each must appear
	}{
		{"-c: piped stdin is the program's", piped("hi\n"), []string{"-c", echoStdin}, 0, "[hi\n]\n", nil},
		{"FILE: piped stdin is the program's", piped("hi"), []string{prog}, 0, "[hi]\n", nil},
		{"--stdin - is standard input", piped("dash"), []string{"--stdin", "-", "-c", echoStdin}, 0, "[dash]\n", nil},
		{"--stdin FILE wins over a pipe", piped("ignored"), []string{"--stdin", input, prog}, 0, "[from a file]\n", nil},
		{"/dev/null: empty input", nil, []string{"-c", echoStdin}, 0, "[]\n", nil},
		{"run -: the program, not its input", piped(echoStdin), []string{"-"}, 0, "[]\n", nil},
		{"run - with --stdin -: refused", piped(echoStdin), []string{"--stdin", "-", "-"}, exitUsage, "",
			[]string{"--stdin -", "the program"}},
		{"piped stdin over the limit: refused", hugeStdin, []string{"-c", echoStdin}, exitUsage, "",
			[]string{"--stdin", "at most 64 MiB"}},
		{"--stdin FILE over the limit: refused", nil, []string{"--stdin", huge, "-c", echoStdin}, exitUsage, "",
			[]string{"--stdin", "at most 64 MiB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cli{}
			if tt.stdin != nil {
				c.stdin = tt.stdin(t)
			}
			stdout, stderr, code := c.run(t, append([]string{"run"}, tt.args...)...)
			if code != tt.code || stdout != tt.stdout {
				t.Errorf("exit %d, stdout %q; want exit %d, stdout %q (stderr %q)", code, stdout, tt.code, tt.stdout, stderr)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q lacks %q", stderr, want)
				}
			}
		})
	}
}
