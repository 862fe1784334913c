package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/crucible-sandbox/crucible"

// TestLightDependencies keeps the SDK light: a program that embeds it must
// not link a database driver, the metrics library, the CLI framework, or
// the server side of Crucible. It asks the go command for the packages
// ./client imports, directly or not (test files excluded), and also
// requires that, besides the standard library, they are only the contract
// (sandbox) and the API's types (api), as DESIGN.md says.
func TestLightDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go") // go test puts GOROOT/bin first in PATH
	if err != nil {
		goTool = "/usr/local/go/bin/go"
	}
	cmd := exec.Command(goTool, "list", "-deps", ".")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps .: %v\n%s", err, stderr)
	}
	deps := strings.Fields(string(out))
	has := func(prefix string) []string {
		var found []string
		for _, d := range deps {
			if d == prefix || strings.HasPrefix(d, prefix+"/") {
				found = append(found, d)
			}
		}
		return found
	}
	if len(has(module+"/client")) == 0 || len(has("net/http")) == 0 {
		t.Fatalf("go list -deps names neither the client nor net/http: the listing is wrong:\n%s", out)
	}

	for _, heavy := range []struct {
		prefix string
		what   string
	}{
		{"github.com/jackc/pgx", "the Postgres driver"},
		{"modernc.org/sqlite", "the SQLite driver"},
		{"github.com/prometheus", "the metrics library"},
		{"github.com/spf13/cobra", "the CLI framework"},
		{module + "/store", "the run store"},
		{module + "/server", "the HTTP server"},
		{module + "/sandbox/linux", "the native runtime"},
		{module + "/policy", "the server's policy"},
		{module + "/cmd", "the command"},
	} {
		t.Run(heavy.what, func(t *testing.T) {
			if found := has(heavy.prefix); len(found) > 0 {
				t.Errorf("the client depends on %s (%s): %v", heavy.what, heavy.prefix, found)
			}
		})
	}

	// Beyond the standard library (whose paths have no dot in their first
	// element), only these.
	allowed := map[string]bool{module + "/client": true, module + "/api": true, module + "/sandbox": true}
	var others []string
	for _, d := range deps {
		first, _, _ := strings.Cut(d, "/")
		if strings.Contains(first, ".") && !allowed[d] {
			others = append(others, d)
		}
	}
	if len(others) > 0 {
		t.Errorf("the client may depend only on the standard library, %s/sandbox and %s/api; it also depends on %v", module, module, others)
	}
}
