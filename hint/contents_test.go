package hint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

func TestScan(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	tree(t, root,
		"usr/lib/python3/dist-packages/pkg/__init__.py",
		"usr/lib/python3/dist-packages/mod.py",
		"usr/lib/python3/dist-packages/ext.cpython-311-x86_64-linux-gnu.so",
		"usr/lib/python3/dist-packages/README.txt",
		"usr/lib/python3.11/json/__init__.py",
		"usr/local/lib/python3.11/dist-packages/local/",
		"usr/share/nodejs/lodash/",
		"usr/share/nodejs/single.js",
		"usr/share/nodejs/@scope/pkg/",
		"usr/lib/x86_64-linux-gnu/nodejs/native/")
	tree(t, elsewhere, "hidden/")
	// A link to a package counts by its name, and is not followed; a
	// linked directory of packages is not read: in an image, a link
	// means the image's path, not the host's.
	if err := os.Symlink("/nonexistent", filepath.Join(root, "usr/lib/python3/dist-packages/linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "usr/local/lib/python3.11/site-packages")); err != nil {
		t.Fatal(err)
	}
	c := scan(root)
	tests := []struct {
		lang   sandbox.Language
		module string
		want   bool
	}{
		{sandbox.Python, "pkg", true},
		{sandbox.Python, "mod", true},
		{sandbox.Python, "ext", true},
		{sandbox.Python, "json", true},
		{sandbox.Python, "local", true},
		{sandbox.Python, "linked", true},
		{sandbox.Python, "hidden", false},
		{sandbox.Python, "README", false},
		{sandbox.Python, "lodash", false},
		{sandbox.JavaScript, "lodash", true},
		{sandbox.JavaScript, "single", true},
		{sandbox.JavaScript, "@scope/pkg", true},
		{sandbox.JavaScript, "native", true},
		{sandbox.JavaScript, "pkg", false},
	}
	for _, tt := range tests {
		if got := c.has(tt.lang, tt.module); got != tt.want {
			t.Errorf("has(%s, %q) = %v, want %v", tt.lang, tt.module, got, tt.want)
		}
	}
}

func TestScanBudget(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, "a", "b", "c")
	s := &scanner{budget: 2}
	var names []string
	for range 2 {
		for _, e := range s.read(dir) {
			names = append(names, e.Name())
		}
	}
	if len(names) != 2 || s.budget != 0 {
		t.Errorf("read %q, budget left %d; want 2 entries and none left", names, s.budget)
	}
}

// TestHintSeesRebuiltImage: an image rebuilt with a module the program
// missed is named once its digest changes.
func TestHintSeesRebuiltImage(t *testing.T) {
	store := t.TempDir()
	builtImage(t, store, "web")
	h := New(Config{RootFS: t.TempDir(), Store: store})
	missing := &sandbox.ExecError{Type: "ModuleNotFoundError", Message: "No module named 'requests'"}
	before := h.Hint(sandbox.Python, "", sandbox.Limits{}, missing)
	if err := os.RemoveAll(filepath.Join(store, "web")); err != nil {
		t.Fatal(err)
	}
	builtImage(t, store, "web", "usr/lib/python3/dist-packages/requests/")
	after := h.Hint(sandbox.Python, "", sandbox.Limits{}, missing)
	if want := "The web image has it: --image web."; strings.Contains(before, want) || !strings.HasSuffix(after, want) {
		t.Errorf("hint before the rebuild %q, after %q; want only the second to end %q", before, after, want)
	}
}
