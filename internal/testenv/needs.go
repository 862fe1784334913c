package testenv

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/crucible-sandbox/crucible/image"
)

// Image returns the image name built in the default store
// (/var/lib/crucible/images/NAME), or stops tb when it is not built.
func Image(tb testing.TB, name string) *image.Image {
	tb.Helper()
	img, err := image.Open(image.DefaultStore, name)
	switch {
	case errors.Is(err, image.ErrNotFound) || errors.Is(err, fs.ErrPermission):
		Missing(tb, "the "+name+" image built in "+filepath.Join(image.DefaultStore, name)+" ("+err.Error()+")",
			setup+"; it builds the image with `crucible image build`")
	case err != nil: // there, but unreadable: not a need, a fault
		tb.Fatalf("image %s: %v", name, err)
	}
	return img
}

// Chromium returns the headless browser the web UI's tests drive:
// $CRUCIBLE_CHROMIUM, else Debian's /usr/bin/chromium. Without it, it
// stops tb.
func Chromium(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("CRUCIBLE_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		Missing(tb, "a browser to drive at "+p, setup+"; it installs Debian's chromium (or set CRUCIBLE_CHROMIUM)")
	}
	return p
}

// NPMClients returns the absolute path of tools/mcp-client, where the MCP
// TypeScript client, the conformance runner and supergateway are
// installed; it stops tb unless every dependency its package.json names
// is installed in its node_modules.
func NPMClients(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(repoRoot(tb), "tools", "mcp-client")
	npmInstalled(tb, dir, "the MCP clients' npm packages", setup+"; it runs `npm ci --prefix tools/mcp-client`")
	return dir
}

// E2BClients returns the absolute path of tools/e2b-client, where E2B's
// official JavaScript SDKs (e2b, @e2b/code-interpreter) and the scripts
// that drive them against Crucible's E2B-compatible API are; it stops tb
// unless every dependency its package.json names is installed in its
// node_modules.
func E2BClients(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(repoRoot(tb), "tools", "e2b-client")
	npmInstalled(tb, dir, "E2B's SDKs (npm packages)", setup+"; it runs `npm ci --prefix tools/e2b-client`")
	return dir
}

// npmInstalled stops tb (Missing: what, how) unless every dependency the
// package.json of dir names (development ones too) is installed in
// dir/node_modules.
func npmInstalled(tb testing.TB, dir, what, how string) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var pkg struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		tb.Fatalf("%s: %v", filepath.Join(dir, "package.json"), err)
	}
	names := make([]string, 0, len(pkg.Dependencies)+len(pkg.DevDependencies))
	for name := range pkg.Dependencies {
		names = append(names, name)
	}
	for name := range pkg.DevDependencies {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !exists(filepath.Join(dir, "node_modules", name, "package.json"), false) {
			Missing(tb, what+" in "+dir+" ("+name+" is not installed)", how)
		}
	}
}

// Dataset returns the path of rel (such as "humaneval" or
// "dabench/tables/insurance.csv") in the data sets directory:
// $CRUCIBLE_DATASETS, else shared/datasets beside the clone (the
// repository's ../shared/datasets). They are not in the repository, and
// scripts/setup.sh cannot fetch them; without rel there, it stops tb.
func Dataset(tb testing.TB, rel string) string {
	tb.Helper()
	root := os.Getenv("CRUCIBLE_DATASETS")
	how := "CRUCIBLE_DATASETS=" + root + ": point it at the directory that holds the shared data sets"
	if root == "" {
		root = filepath.Join(filepath.Dir(repoRoot(tb)), "shared", "datasets")
		how = "put the shared data sets in " + root + " (shared/datasets beside the clone), or set CRUCIBLE_DATASETS to the directory that holds them"
	}
	p := filepath.Join(root, rel)
	if !exists(p, false) {
		Missing(tb, "the data set file or directory "+p, how)
	}
	return p
}

// Postgres returns the directory of PostgreSQL's server programs (initdb,
// pg_ctl; the newest of /usr/lib/postgresql/*/bin), with which a test
// starts a throwaway cluster of its own; without them it stops tb.
func Postgres(tb testing.TB) string {
	tb.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(bin string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
		return v
	}
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if exists(filepath.Join(d, "initdb"), false) && exists(filepath.Join(d, "pg_ctl"), false) {
			return d
		}
	}
	Missing(tb, "PostgreSQL's initdb and pg_ctl in /usr/lib/postgresql/*/bin", setup+"; it installs Debian's postgresql")
	return ""
}

// Pytest returns Debian's /usr/bin/python3 (never the python3 first on
// PATH, which may be a pyenv shim) once it imports pytest, for the
// Python SDK's tests; it stops tb otherwise.
func Pytest(tb testing.TB) string {
	tb.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import pytest").Run(); err != nil {
		Missing(tb, python+" with pytest ("+err.Error()+")", setup+"; it installs Debian's python3-pytest")
	}
	return python
}

// TypeScriptSDK returns the absolute path of sdk/typescript once its
// development packages (the compiler, the OpenAPI type generator, the
// OpenAI client its tests drive) are installed and the SDK is built into
// dist; it stops tb otherwise.
func TypeScriptSDK(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(repoRoot(tb), "sdk", "typescript")
	how := setup + "; it runs `npm ci --prefix sdk/typescript` and `npm run --prefix sdk/typescript build`"
	npmInstalled(tb, dir, "the TypeScript SDK's development packages", how)
	if !exists(filepath.Join(dir, "dist", "index.js"), false) {
		Missing(tb, "the TypeScript SDK built ("+filepath.Join(dir, "dist", "index.js")+" is not there)", how)
	}
	return dir
}

// NATSServer returns the external NATS JetStream server the cluster's
// tests start on a free loopback port of their own: $CRUCIBLE_NATS_SERVER,
// else Debian's /usr/sbin/nats-server. Without it, it stops tb.
func NATSServer(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("CRUCIBLE_NATS_SERVER")
	if p == "" {
		p = "/usr/sbin/nats-server"
	}
	if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		Missing(tb, "a NATS JetStream server to start at "+p, setup+"; it installs Debian's nats-server (or set CRUCIBLE_NATS_SERVER)")
	}
	return p
}
