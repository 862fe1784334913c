package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// e2bKeyRE is the shape E2B's SDKs check an API key against (unless
// E2B_VALIDATE_API_KEY=false), and the form `crucible key create --e2b`
// promises.
var e2bKeyRE = regexp.MustCompile(`^e2b_[0-9a-f]{64}$`)

// refusedRE matches an SDK error that refuses a request for want of the
// right credentials or of a sandbox the caller may see: not any failure
// (a 501 for a call not served would prove nothing).
var refusedRE = regexp.MustCompile(`^AuthenticationError: |^(SandboxNotFoundError|NotFoundError): |\b(401|403|404)\b|\[(unauthenticated|permission_denied|not_found)\]`)

// e2bServer is a `crucible serve` on loopback with a fresh store, its
// E2B-compatible API at /e2b, and keys for two tenants, alice and bob:
// each an E2B-form key (key create --e2b) and an ordinary one for /v1.
type e2bServer struct {
	*server
	// Clients is tools/e2b-client, where E2B's SDKs and the scripts are.
	Clients string
	// AliceE2B, BobE2B are the tenants' e2b_ keys; AlicePlain, BobPlain
	// their crk_ keys.
	AliceE2B, BobE2B, AlicePlain, BobPlain string
	// Revoked is an e2b_ key of tenant carol, revoked before the server
	// started.
	Revoked string
}

// createKey runs `crucible key create --tenant tenant --json` (with
// --e2b if e2b) on db and returns the key's id and secret.
func createKey(t *testing.T, db, tenant string, e2b bool) (id, secret string) {
	t.Helper()
	args := []string{"key", "create", "--tenant", tenant, "--name", "e2e", "--json", "--db", db}
	if e2b {
		args = append(args, "--e2b")
	}
	var k struct{ ID, Tenant, Secret string }
	out := crucible(t, 0, args...)
	if err := json.Unmarshal([]byte(out), &k); err != nil {
		t.Fatalf("crucible %s: %v; output: %s", strings.Join(args, " "), err, out)
	}
	if k.Tenant != tenant || k.ID == "" {
		t.Fatalf("crucible %s: %+v", strings.Join(args, " "), k)
	}
	if e2b && !e2bKeyRE.MatchString(k.Secret) {
		t.Fatalf("crucible key create --e2b made the secret %q, want the shape E2B's SDKs accept, %s", k.Secret, e2bKeyRE)
	}
	return k.ID, k.Secret
}

// startE2BServer makes the keys, starts the server (extra are more serve
// flags) and returns it; it stops t unless root, the data-science image
// and E2B's SDKs are there (a failure under CI).
func startE2BServer(t *testing.T, extra ...string) *e2bServer {
	t.Helper()
	testenv.Root(t)
	clients := testenv.E2BClients(t)
	testenv.Image(t, "datascience")
	if _, err := exec.LookPath("node"); err != nil {
		testenv.Missing(t, "node on PATH", "run scripts/setup.sh as root; it installs Debian's nodejs")
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	e := &e2bServer{Clients: clients}
	_, e.AliceE2B = createKey(t, db, "alice", true)
	_, e.BobE2B = createKey(t, db, "bob", true)
	_, e.AlicePlain = createKey(t, db, "alice", false)
	_, e.BobPlain = createKey(t, db, "bob", false)
	var carol string
	carol, e.Revoked = createKey(t, db, "carol", true)
	crucible(t, 0, "key", "revoke", carol, "--db", db)
	e.server = startServer(t, "server", db, extra...)
	return e
}

// e2bEnv is the environment of a script run against e: the two URLs
// E2B's SDKs read and key, then more as NAME=value.
func (e *e2bServer) e2bEnv(key string, more ...string) []string {
	var env []string
	for _, kv := range os.Environ() { // none of the caller's E2B settings
		if !strings.HasPrefix(kv, "E2B_") {
			env = append(env, kv)
		}
	}
	env = append(env, "E2B_API_URL="+e.URL+"/e2b", "E2B_SANDBOX_URL="+e.URL+"/e2b", "E2B_API_KEY="+key)
	return append(env, more...)
}

// runScript runs `node script` (a path in e.Clients, such as
// tests/e2e/seed_flow.mjs) there with env and decodes the
// JSON object it prints last into out; it fails t if the script threw,
// printed no JSON or ran past timeout.
func (e *e2bServer) runScript(t *testing.T, script string, env []string, timeout time.Duration, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Dir = e.Clients
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	last := lines[len(lines)-1]
	var status struct {
		OK     bool            `json:"ok"`
		Thrown json.RawMessage `json:"thrown"`
	}
	if jerr := json.Unmarshal([]byte(last), &status); jerr != nil {
		t.Fatalf("node %s (%v, after %v) printed no JSON last (%v)\nstdout:\n%s\nstderr:\n%s",
			script, err, time.Since(start).Round(time.Millisecond), jerr, clip(stdout.Bytes()), clip(stderr.Bytes()))
	}
	if !status.OK || err != nil {
		t.Fatalf("node %s failed (%v, after %v): it threw %s\nstderr:\n%s", script, err, time.Since(start).Round(time.Millisecond), status.Thrown, clip(stderr.Bytes()))
	}
	if err := json.Unmarshal([]byte(last), out); err != nil {
		t.Fatalf("node %s: decoding %s: %v", script, clip([]byte(last)), err)
	}
	t.Logf("node %s: %v", script, time.Since(start).Round(time.Millisecond))
}

// jsThrown is what a script reports of an attempt: whether it threw, and
// the SDK's error class and message.
type jsThrown struct {
	Threw   bool   `json:"threw"`
	Name    string `json:"name"`
	Class   string `json:"class"`
	Message string `json:"message"`
}

func (j jsThrown) String() string {
	if !j.Threw {
		return "no error"
	}
	return fmt.Sprintf("%s (%s): %s", j.Class, j.Name, j.Message)
}

// jsExecution is lib.mjs's execSummary of an SDK Execution.
type jsExecution struct {
	Stdout string  `json:"stdout"`
	Stderr string  `json:"stderr"`
	Text   *string `json:"text"`
	Error  *struct {
		Name      string `json:"name"`
		Value     string `json:"value"`
		Traceback string `json:"traceback"`
	} `json:"error"`
	Results []struct {
		Formats      []string `json:"formats"`
		IsMainResult bool     `json:"isMainResult"`
		Text         *string  `json:"text"`
		PNG          *string  `json:"png"`
	} `json:"results"`
}

// text is the execution's main text, "" for none.
func (x jsExecution) text() string {
	if x.Text == nil {
		return ""
	}
	return *x.Text
}

// errName is the execution's error name, "" for none.
func (x jsExecution) errName() string {
	if x.Error == nil {
		return ""
	}
	return x.Error.Name
}

// checkPNG checks that b64, a result's png as E2B's SDKs give it
// (base64), decodes to a PNG image of at least 100×100 pixels.
func checkPNG(t *testing.T, what, b64 string) {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Errorf("%s: the png is not base64: %v", what, err)
		return
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s: %d bytes without PNG's signature: %q", what, len(b), clip(b[:min(len(b), 16)]))
		return
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Errorf("%s: %d bytes with PNG's signature that do not decode: %v", what, len(b), err)
		return
	}
	if r := img.Bounds(); r.Dx() < 100 || r.Dy() < 100 {
		t.Errorf("%s: a %d×%d image, want a chart of at least 100×100", what, r.Dx(), r.Dy())
	}
}

// openSessions returns the sessions the tenant of the ordinary key has
// open, through /v1: an E2B sandbox is a Crucible session.
func (e *e2bServer) openSessions(t *testing.T, key string) []api.SessionInfo {
	t.Helper()
	c, err := client.New(e.URL, client.WithAPIKey(key), client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	list, err := c.ListSessions(context.Background())
	if err != nil {
		t.Fatalf("GET /v1/sessions: %v", err)
	}
	return list
}

// docsExample returns the seed's code in README.md (the ```js block
// under "### The seed's code") and the output shown after it.
func docsExample(t *testing.T) (code, output string) {
	t.Helper()
	return readmeExample(t, "### The seed's code", "js")
}

// readmeExample returns the first ```lang block of README.md after the
// line heading, and the ```text block after it: an example and the
// output the README shows for it.
func readmeExample(t *testing.T, heading, lang string) (code, output string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading)
	block := regexp.MustCompile("(?s)```" + regexp.QuoteMeta(lang) + "\n(.*?)```.*?```text\n(.*?)```")
	m := block.FindStringSubmatch(rest)
	if !ok || m == nil {
		t.Fatalf("README.md has no ```%s block and ```text output under %q", lang, heading)
	}
	return m[1], m[2]
}
