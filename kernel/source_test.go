package kernel

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestPythonSourceStrings proves the kernel's text parses and holds
// python_notebook.py and python_ipython.py, as the kernel reads their
// NB_SOURCE and IPY_SOURCE literals (the latter packed), byte for byte.
func TestPythonSourceStrings(t *testing.T) {
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
value = next(n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == sys.argv[2])
if sys.argv[2] == "IPY_SOURCE":  # packed, as NbIPythonLoader reads it
    import binascii, zlib
    value = zlib.decompress(binascii.a2b_base64(value)).decode("utf-8")
sys.stdout.write(value)`
	for _, tc := range []struct{ name, file, want string }{
		{"NB_SOURCE", "python_notebook.py", notebookSource},
		{"IPY_SOURCE", "python_ipython.py", ipythonSource},
	} {
		out, err := exec.Command(python, "-c", check, src, tc.name).Output()
		if err != nil {
			t.Fatalf("python3 could not read the kernel's %s: %v", tc.name, err)
		}
		if string(out) != tc.want {
			t.Errorf("%s differs from %s (%d bytes read, %d in the file)", tc.name, tc.file, len(out), len(tc.want))
		}
	}
}
