package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestPythonSourceNotebookString proves the kernel's text parses and holds
// python_notebook.py, as Python reads its NB_SOURCE literal, byte for byte.
func TestPythonSourceNotebookString(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		testenv.Missing(t, "python3 on the host", "install python3")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "kernel.py")
	if err := os.WriteFile(src, []byte(PythonSource()), 0o644); err != nil {
		t.Fatal(err)
	}
	const check = `import ast, sys
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read())
value = next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "NB_SOURCE")
sys.stdout.write(value)`
	out, err := exec.Command(python, "-c", check, src).Output()
	if err != nil {
		t.Fatalf("python3 could not read the kernel's NB_SOURCE: %v", err)
	}
	if string(out) != notebookSource {
		t.Errorf("NB_SOURCE differs from python_notebook.py (%d bytes read, %d in the file)", len(out), len(notebookSource))
	}
}
