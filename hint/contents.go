package hint

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// The directories, relative to a root filesystem, where the interpreters
// of a Debian image find what a program imports (sys.path of python3,
// and require's global paths of Debian's and the upstream nodejs; the
// sandbox's own /code and /work hold only the request's).
var (
	pythonDirs = []string{
		"usr/lib/python3.*", "usr/lib/python3.*/lib-dynload",
		"usr/lib/python3/dist-packages", "usr/lib/python3.*/dist-packages",
		"usr/local/lib/python3.*/dist-packages", "usr/local/lib/python3.*/site-packages",
	}
	nodeDirs = []string{"usr/share/nodejs", "usr/lib/*/nodejs", "usr/local/lib/nodejs", "usr/lib/node", "node_modules"}
)

// maxEntries bounds the directory entries a scan of one root filesystem
// reads.
const maxEntries = 100_000

// contents are the top-level Python modules and the Node.js packages a
// root filesystem holds, by name.
type contents struct {
	python, node map[string]bool
}

// has reports whether c holds module for language l.
func (c *contents) has(l sandbox.Language, module string) bool {
	if l == sandbox.JavaScript {
		return c.node[module]
	}
	return c.python[module]
}

// scan lists what root holds. It reads directories only, and follows no
// symbolic link in them: a root that is not the host's may link to
// absolute paths, which mean its own. An unreadable directory holds
// nothing.
func scan(root string) *contents {
	s := &scanner{budget: maxEntries}
	c := &contents{python: map[string]bool{}, node: map[string]bool{}}
	for _, d := range s.dirs(root, pythonDirs) {
		for _, e := range s.read(d) {
			if m := pythonModule(e); m != "" {
				c.python[m] = true
			}
		}
	}
	for _, d := range s.dirs(root, nodeDirs) {
		for _, e := range s.read(d) {
			name := e.Name()
			if strings.HasPrefix(name, "@") && e.IsDir() {
				for _, p := range s.read(filepath.Join(d, name)) {
					c.node[name+"/"+p.Name()] = true
				}
				continue
			}
			c.node[strings.TrimSuffix(name, filepath.Ext(name))] = true
		}
	}
	return c
}

// pythonModule returns the module that the directory entry e is (a
// package, a .py file, an extension module), or "".
func pythonModule(e os.DirEntry) string {
	name := e.Name()
	if !e.Type().IsRegular() {
		return name // a package, or a link to one
	}
	if strings.HasSuffix(name, ".py") {
		return strings.TrimSuffix(name, ".py")
	}
	if strings.HasSuffix(name, ".so") {
		m, _, _ := strings.Cut(name, ".") // _ssl.cpython-311-x86_64-linux-gnu.so
		return m
	}
	return ""
}

// scanner reads directories within a budget of entries.
type scanner struct {
	budget int
}

// dirs returns the directories of root the patterns match: real
// directories, not links.
func (s *scanner) dirs(root string, patterns []string) []string {
	var dirs []string
	for _, p := range patterns {
		matches, _ := filepath.Glob(filepath.Join(root, p))
		for _, m := range matches {
			if fi, err := os.Lstat(m); err == nil && fi.IsDir() {
				dirs = append(dirs, m)
			}
		}
	}
	return dirs
}

// read returns the entries of dir, as many as the budget allows.
func (s *scanner) read(dir string) []os.DirEntry {
	if s.budget <= 0 {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	entries, _ := f.ReadDir(s.budget)
	s.budget -= len(entries)
	return entries
}
