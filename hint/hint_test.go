package hint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// tree creates the files (a name ending in "/" a directory) under dir.
func tree(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// builtImage adds an image called name to store, its root filesystem
// holding files.
func builtImage(t *testing.T, store, name string, files ...string) string {
	t.Helper()
	root := filepath.Join(store, name, "rootfs")
	tree(t, root, append(files, "usr/")...)
	// The digest changes with the files, as a rebuilt image's does.
	b, err := json.Marshal(image.Image{Name: name, RootFS: root, Digest: fmt.Sprintf("%s %q", name, files)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(store, name, "image.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestHint(t *testing.T) {
	store := t.TempDir()
	dsRoot := builtImage(t, store, "datascience",
		"usr/lib/python3/dist-packages/numpy/__init__.py",
		"usr/lib/python3/dist-packages/six.py",
		"usr/lib/python3.11/lib-dynload/_ssl.cpython-311-x86_64-linux-gnu.so",
		"usr/share/nodejs/acorn/package.json",
		"usr/share/nodejs/@types/node/index.d.ts")
	builtImage(t, store, "web",
		"usr/lib/python3/dist-packages/requests/__init__.py",
		"usr/local/lib/python3.11/dist-packages/yaml/",
		"usr/lib/python3/dist-packages/_brotli.cpython-311-x86_64-linux-gnu.so",
		"usr/share/nodejs/lodash/",
		"usr/lib/x86_64-linux-gnu/nodejs/@scope/pkg/")
	builtImage(t, store, "web2", "usr/lib/python3/dist-packages/requests/", "usr/share/nodejs/lodash/")
	builtImage(t, store, "web3", "usr/lib/python3/dist-packages/requests/")
	builtImage(t, store, "web4", "usr/lib/python3/dist-packages/requests/")
	builtImage(t, store, "web5", "usr/lib/python3/dist-packages/requests/")
	// A directory that is not an image, and a build in progress.
	tree(t, store, "junk/", ".datascience-build/rootfs/usr/lib/python3/dist-packages/nowhere/")
	other := t.TempDir()
	tree(t, other, "usr/lib/python3/dist-packages/requests/")

	inDS := Config{RootFS: dsRoot, Image: "datascience", Store: store}
	inOther := Config{RootFS: other, Store: store}
	py := func(typ, msg string) *sandbox.ExecError { return &sandbox.ExecError{Type: typ, Message: msg} }
	gaierror := py("socket.gaierror", "[Errno -3] Temporary failure in name resolution")
	tests := []struct {
		name    string
		cfg     Config
		lang    sandbox.Language
		network string
		err     *sandbox.ExecError
		want    string
	}{
		{"dns lookup", inDS, sandbox.Python, "", gaierror, offlineHint},
		{"dns lookup, network none", inDS, sandbox.Python, sandbox.NetworkNone, gaierror, offlineHint},
		{"dns lookup with a network", inDS, sandbox.Python, "allowlist", gaierror, ""},
		{"no error", inDS, sandbox.Python, "", nil, ""},
		{"module in other images", inDS, sandbox.Python, "", py("ModuleNotFoundError", "No module named 'requests'"),
			`Python module "requests" is not installed in the datascience image, and the sandbox cannot install packages (it has no network). The web, web2, web3 and 2 more images have it: --image web.`},
		{"module with a network", inDS, sandbox.Python, "allowlist", py("ModuleNotFoundError", "No module named 'yaml'"),
			`Python module "yaml" is not installed in the datascience image. The web image has it: --image web.`},
		{"extension module in another image", inDS, sandbox.Python, "", py("ModuleNotFoundError", "No module named '_brotli'"),
			`Python module "_brotli" is not installed in the datascience image, and the sandbox cannot install packages (it has no network). The web image has it: --image web.`},
		{"module nowhere", inDS, sandbox.Python, "", py("ModuleNotFoundError", "No module named 'torch'"),
			`Python module "torch" is not installed in the datascience image, and the sandbox cannot install packages (it has no network). No other image in the store has it: use the libraries installed.`},
		{"module of a build in progress", inDS, sandbox.Python, "", py("ModuleNotFoundError", "No module named 'nowhere'"),
			`Python module "nowhere" is not installed in the datascience image, and the sandbox cannot install packages (it has no network). No other image in the store has it: use the libraries installed.`},
		{"module here: a submodule is missing", inDS, sandbox.Python, "", py("ModuleNotFoundError", "No module named 'numpy.nope'"), ""},
		{"module here: the program raised it", inDS, sandbox.Python, "", py("ModuleNotFoundError", "No module named 'six'"), ""},
		{"extension module here", inDS, sandbox.Python, "", py("ModuleNotFoundError", "No module named '_ssl'"), ""},
		{"another root, module here", inOther, sandbox.Python, "", py("ModuleNotFoundError", "No module named 'requests'"), ""},
		{"another root, module in images", inOther, sandbox.Python, "", py("ModuleNotFoundError", "No module named 'numpy'"),
			`Python module "numpy" is not installed in this root filesystem, and the sandbox cannot install packages (it has no network). The datascience image has it: --image datascience.`},
		{"no store", Config{RootFS: other}, sandbox.Python, "", py("ModuleNotFoundError", "No module named 'numpy'"),
			`Python module "numpy" is not installed in this root filesystem, and the sandbox cannot install packages (it has no network): use the libraries installed.`},
		{"hostile module name", inDS, sandbox.Python, "", py("ModuleNotFoundError", "No module named '../../etc'"), ""},
		{"node package in other images", inDS, sandbox.JavaScript, "", &sandbox.ExecError{Type: "Error", Message: "Cannot find module 'lodash/fp'\nRequire stack:\n- /code/main.js"},
			`Node.js package "lodash" is not installed in the datascience image, and the sandbox cannot install packages (it has no network). The web and web2 images have it: --image web.`},
		{"scoped node package", inDS, sandbox.JavaScript, "", &sandbox.ExecError{Type: "Error", Message: "Cannot find module '@scope/pkg'"},
			`Node.js package "@scope/pkg" is not installed in the datascience image, and the sandbox cannot install packages (it has no network). The web image has it: --image web.`},
		{"node package here", inDS, sandbox.JavaScript, "", &sandbox.ExecError{Type: "Error", Message: "Cannot find module 'acorn'"}, ""},
		{"scoped node package here", inDS, sandbox.JavaScript, "", &sandbox.ExecError{Type: "Error", Message: "Cannot find module '@types/node'"}, ""},
		{"python module is no node package", inDS, sandbox.JavaScript, "", &sandbox.ExecError{Type: "Error", Message: "Cannot find module 'requests'"},
			`Node.js package "requests" is not installed in the datascience image, and the sandbox cannot install packages (it has no network). No other image in the store has it: use the libraries installed.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.cfg).Hint(tt.lang, tt.network, sandbox.Limits{}, tt.err); got != tt.want {
				t.Errorf("hint:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// TestHintHost names the host's system directories, where the sandbox
// runs without an image, and never offers them as an image.
func TestHintHost(t *testing.T) {
	store := t.TempDir()
	builtImage(t, store, "web", "usr/lib/python3/dist-packages/crucible_test_only_module/")
	got := New(Config{Store: store}).Hint(sandbox.Python, "", sandbox.Limits{}, &sandbox.ExecError{Type: "ModuleNotFoundError", Message: "No module named 'crucible_test_only_module'"})
	want := `Python module "crucible_test_only_module" is not installed in the host's system directories, and the sandbox cannot install packages (it has no network). The web image has it: --image web.`
	if got != want {
		t.Errorf("hint:\n got %q\nwant %q", got, want)
	}
}

// TestHintSaysTheFix: the network-off hint names the way to allow a host
// on the command line (--allow) and through the API (network.allow, and
// the server's allow_network); the process-limit hint names the limit and
// the way to raise it (--pids, limits.processes).
func TestHintSaysTheFix(t *testing.T) {
	h := New(Config{RootFS: t.TempDir()})
	eagain := "[Errno 11] Resource temporarily unavailable"
	tests := []struct {
		name string
		lang sandbox.Language
		lim  sandbox.Limits
		err  *sandbox.ExecError
		want []string // every one in the hint; none: no hint
	}{
		{"offline", sandbox.Python, sandbox.Limits{}, &sandbox.ExecError{Type: "socket.gaierror", Message: "[Errno -3] Temporary failure in name resolution"},
			[]string{"crucible run --allow HOST[:PORT]", `"network": {"allow": ["HOST[:PORT]"]}`, `"allow_network"`, "crucible run --file NAME=PATH"}},
		{"python fork", sandbox.Python, sandbox.Limits{Processes: 4}, &sandbox.ExecError{Type: "BlockingIOError", Message: eagain,
			Traceback: "Traceback (most recent call last):\n  File \"/code/main.py\", line 3, in <module>\n    if os.fork()==0:\n       ^^^^^^^^^\nBlockingIOError: " + eagain},
			[]string{"process limit (4 at once;", "crucible run --pids N", `"limits": {"processes": N}`}},
		{"python subprocess", sandbox.Python, sandbox.Limits{Processes: 64}, &sandbox.ExecError{Type: "BlockingIOError", Message: eagain,
			Traceback: "  File \"/usr/lib/python3.11/subprocess.py\", line 1834, in _execute_child\n    self.pid = _fork_exec(\n"},
			[]string{"process limit (64 at once;", "--pids N"}},
		{"python thread", sandbox.Python, sandbox.Limits{}, &sandbox.ExecError{Type: "RuntimeError", Message: "can't start new thread"},
			[]string{"process limit (its limit;", "--pids N"}},
		{"python non-blocking socket", sandbox.Python, sandbox.Limits{Processes: 64}, &sandbox.ExecError{Type: "BlockingIOError", Message: eagain,
			Traceback: "  File \"/code/main.py\", line 4, in <module>\n    s.recv(10)\n"}, nil},
		{"node spawn", sandbox.JavaScript, sandbox.Limits{Processes: 8}, &sandbox.ExecError{Type: "Error", Message: "spawn sleep EAGAIN"},
			[]string{"process limit (8 at once;", "--pids N"}},
		{"node spawnSync", sandbox.JavaScript, sandbox.Limits{Processes: 8}, &sandbox.ExecError{Type: "Error", Message: "spawnSync /bin/sh EAGAIN"},
			[]string{"process limit (8 at once;"}},
		{"node other EAGAIN", sandbox.JavaScript, sandbox.Limits{Processes: 8}, &sandbox.ExecError{Type: "Error", Message: "read EAGAIN"}, nil},
		{"bash fork", sandbox.Bash, sandbox.Limits{Processes: 4}, &sandbox.ExecError{Type: "fork", Message: "Resource temporarily unavailable"},
			[]string{"process limit (4 at once;", "crucible run --pids N"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := h.Hint(tt.lang, sandbox.NetworkNone, tt.lim, tt.err)
			if len(tt.want) == 0 && got != "" {
				t.Errorf("hint %q, want none", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("hint %q lacks %q", got, w)
				}
			}
		})
	}
}
