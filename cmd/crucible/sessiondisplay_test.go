package main

import (
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestSessionDisplays proves `crucible session` shows a cell's displays
// by their text, after the output the cell wrote (a display is in the
// cell's result, which comes at its end), and runs its "!" lines.
func TestSessionDisplays(t *testing.T) {
	testenv.Root(t)
	cmd := crucibleCommand("session", "--out", t.TempDir())
	cmd.Stdin = strings.NewReader("class Note:\n    def _repr_markdown_(self):\n        return '**note**'\n" +
		"    def __repr__(self):\n        return 'Note()'\ndisplay(Note())\n!echo from the shell\n# %%\n%pwd\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	text := string(out)
	if i, j := strings.Index(text, "from the shell\n"), strings.Index(text, "Note()\n"); i < 0 || j < i {
		t.Errorf("want the shell line's output, then the display's text: %s", out)
	}
	if !strings.Contains(text, "Out[2]: '/work'") {
		t.Errorf("%%pwd's value not shown: %s", out)
	}
}
