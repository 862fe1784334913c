package linux_test

import (
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// TestWarmTraceback proves an uncaught exception prints the same
// traceback in a warm run as in a cold one: the program's frames only,
// none of the kernel that started it.
func TestWarmTraceback(t *testing.T) {
	cold := newRuntime(t, linux.Options{})
	warm := newRuntime(t, linux.Options{Warm: 1})
	for _, tc := range []struct{ name, code string }{
		{"raise", "raise ValueError('bad')"},
		{"in a function", "def f():\n    return 1 / 0\n\nf()"},
		{"missing module", "import no_such_module"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := sandbox.Request{Language: sandbox.Python, Code: tc.code}
			c := runProgram(t, cold, req)
			awaitWarm(t, warm)
			w := runProgram(t, warm, req)
			if string(w.Stderr) != string(c.Stderr) {
				t.Errorf("stderr\ncold: %q\nwarm: %q", c.Stderr, w.Stderr)
			}
		})
	}
}
