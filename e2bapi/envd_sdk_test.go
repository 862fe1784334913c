package e2bapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestEnvdSDK runs the node scripts of tools/e2b-client/tests with E2B's
// official SDK (npm e2b, pinned by the package-lock) against the envd
// services of a real session.
func TestEnvdSDK(t *testing.T) {
	dir := e2bClients(t)
	for _, script := range []string{"commands.mjs", "filesystem.mjs"} {
		t.Run(script, func(t *testing.T) {
			// The sandbox's environment, as commands.mjs creates it
			// (the stand-in does not read the create request).
			f := newEnvdFixture(t, nil, map[string]string{"SANDBOX_VAR": "from-sandbox"})
			srv := httptest.NewServer(controlPlaneStandIn(t, f))
			t.Cleanup(srv.Close)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", filepath.Join("tests", script))
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "E2B_API_URL="+srv.URL, "E2B_SANDBOX_URL="+srv.URL, "E2B_API_KEY=e2b_0123456789abcdef")
			out, err := cmd.CombinedOutput()
			t.Logf("%s:\n%s", script, out)
			if err != nil {
				t.Fatalf("node %s: %v", script, err)
			}
			if !strings.Contains(string(out), "ok ") || strings.Contains(string(out), "FAIL") {
				t.Fatalf("node %s did not pass every check", script)
			}
		})
	}
}

// controlPlaneStandIn is a TEST FIXTURE, not the control plane (that is
// the rest of package e2bapi): it creates nothing, and answers the SDK's
// create (POST /v2/sandboxes, which e2b 2.51.0 calls, and POST /sandboxes)
// with f's one sandbox and its kill (DELETE /sandboxes/{id}) with 204, so
// that Sandbox.create() reaches the envd services under test, which serve
// everything else.
func controlPlaneStandIn(t *testing.T, f *envdFixture) http.Handler {
	envd := newEnvdRPC(f.lookup)
	id := f.sb.ss.ID()
	mux := http.NewServeMux()
	create := func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("X-Api-Key"), "e2b_") {
			http.Error(w, `{"code":401,"message":"X-API-Key missing"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"sandboxID": id, "templateID": "base", "clientID": "x", "envdVersion": "0.5.7", "envdAccessToken": envdTestToken})
	}
	mux.HandleFunc("POST /v2/sandboxes", create)
	mux.HandleFunc("POST /sandboxes", create)
	mux.HandleFunc("DELETE /sandboxes/{id}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != id {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.Handle("/", envd)
	return mux
}

// e2bClients returns tools/e2b-client, where E2B's SDKs are installed; it
// stops t unless node and every package its package.json names are there.
func e2bClients(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "tools", "e2b-client")
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node, to run E2B's JavaScript SDK", "install nodejs, as scripts/setup.sh does")
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	for name := range pkg.Dependencies {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", name, "package.json")); err != nil {
			testenv.Missing(t, "E2B's npm SDKs in "+dir+" ("+name+" is not installed)",
				"run `npm ci --prefix tools/e2b-client --no-audit --no-fund`, as scripts/setup.sh does")
		}
	}
	return dir
}
