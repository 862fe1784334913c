package service

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the import path every package of Crucible's starts with.
const module = "github.com/crucible-sandbox/crucible/"

// transportRule is what a transport may import of Crucible's, besides
// service and api: the packages everyone may, and for some, a package in
// some of its files only.
type transportRule struct {
	dir     string              // from the module's root
	may     []string            // in any file
	inFiles map[string][]string // package → the files that may import it
}

// The rule (DESIGN: transports speak to service and api only, never to
// the packages below them), each exception with its reason:
//   - every transport may use sandbox, the contract its requests and
//     results are made of, and swe, whose Task, Repo, Result, TestReport
//     and statuses the api's swe runs are made of (and swe.FromDir packs
//     the CLI's directory); never swe.Run or swe.Verify: a swe run goes
//     through service (TestTransportsRunNoSWE);
//   - server serves the other transports on its mux (mcpserver, webui),
//     and authenticates API keys with the key store the command line
//     hands it (store, in auth.go and server.go only);
//   - cmd/crucible is also the composition root: it constructs the
//     native runtime (sandbox/linux) and the docker and gvisor runtimes
//     (sandbox/docker, which also imports images into Docker and answers
//     crucible doctor), images (image), the run and key
//     stores (store), model providers (llm), the redactor and the code
//     policy presets of a config (policy, policy/codecheck), error hints
//     (hint), suggests the files nearest a misspelt one (internal/nearest,
//     a leaf that imports nothing of Crucible's), joins a cluster of
//     nodes and hands the server its forwarder (cluster: a node's registry,
//     catalog and forwarding, whose hooks service and server take as
//     interfaces and funcs), and serves the HTTP and MCP transports
//     (server, mcpserver),
//     and marks the descriptors it inherited close-on-exec as it starts
//     (sandbox/linux/cloexec, in runtime_native_linux.go, Linux's alone), and `crucible bench api`
//     times the bare interpreter a sandbox runs, by its path
//     (sandbox/lang, in bench_bare.go, and bench runtimes in
//     bench_runtimes_rows.go),
//     or talks to a remote server (client). It does not reach into agent
//     or analyst types to handle a request: `crucible analyst` goes
//     through service like every transport. Not yet: `crucible agent`
//     runs agent.Run over the service's sessions, `crucible eval` the
//     eval harness, and `crucible swe-bench` swe.Bench over the service's
//     sessions (an agent run's ID from agent), which service does not
//     wrap (the files below).
var transportRules = []transportRule{
	{dir: "server", may: []string{"mcpserver", "webui", "e2bapi", "internal/jsonbody"}, inFiles: map[string][]string{"store": {"auth.go", "server.go"}}},
	{dir: "mcpserver"},
	{dir: "e2bapi", may: []string{"internal/jsonbody"}},
	{dir: "webui"},
	{dir: "cmd/crucible", may: []string{"sandbox/linux", "sandbox/docker", "image", "store", "llm", "policy", "policy/codecheck", "hint", "internal/nearest", "client", "cluster", "server", "mcpserver"},
		inFiles: map[string][]string{"agent": {"agent.go", "agentsetup.go", "swebench.go"}, "eval": {"eval.go"}, "sandbox/linux/cloexec": {"runtime_native_linux.go"}, "sandbox/lang": {"bench_bare.go", "bench_runtimes_rows.go"}}},
}

// TestTransportsSpeakToServiceOnly fails when a transport's code (not its
// tests) imports a package of Crucible's the rule above does not allow,
// naming the file.
func TestTransportsSpeakToServiceOnly(t *testing.T) {
	ctx := build.Default
	ctx.BuildTags = append(ctx.BuildTags, "crucible_initexe")
	for _, r := range transportRules {
		pkg, err := ctx.ImportDir(filepath.Join("..", r.dir), 0)
		if err != nil {
			t.Fatalf("%s: %v", r.dir, err)
		}
		if len(pkg.GoFiles) == 0 {
			t.Fatalf("%s: no Go files read", r.dir)
		}
		for path, at := range pkg.ImportPos {
			rel, ours := strings.CutPrefix(path, module)
			if !ours || rel == "service" || rel == "api" || rel == "sandbox" || rel == "swe" || slices.Contains(r.may, rel) {
				continue
			}
			for _, pos := range at {
				if file := filepath.Base(pos.Filename); !slices.Contains(r.inFiles[rel], file) {
					t.Errorf("%s/%s imports %s: a transport speaks to service and api only (see transportRules)", r.dir, file, rel)
				}
			}
		}
	}
}

// TestTransportsRunNoSWE fails when a transport's code (not its tests)
// calls swe.Run or swe.Verify itself rather than through service, which
// gives a swe run its tenant, admission, records, redaction and policy.
func TestTransportsRunNoSWE(t *testing.T) {
	for _, r := range transportRules {
		files, err := filepath.Glob(filepath.Join("..", r.dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", r.dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, call := range []string{"swe.Run(", "swe.Verify("} {
				if strings.Contains(string(b), call) {
					t.Errorf("%s calls %s: a swe run goes through service", f, call)
				}
			}
		}
	}
}
