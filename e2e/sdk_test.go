package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
)

// sdkTestTimeout bounds one SDK's whole test suite against the server.
const sdkTestTimeout = 10 * time.Minute

// startSDKServer starts what the Python and TypeScript SDKs' tests run
// against: a `crucible serve` on loopback with a fresh store, keys for
// two tenants (team-a, team-b), the host image for runs and datascience
// for sessions and analyses, and, as its model, a local server speaking
// the OpenAI chat-completions wire format (llmtest.OpenAI with
// FromPrompt: no language model can run here, so each test scripts the
// model through its own task or question with [[code]] and [[answer]]
// blocks). It returns the environment the SDKs' tests read:
// CRUCIBLE_URL, CRUCIBLE_API_KEY (team-a) and CRUCIBLE_TEST_OTHER_API_KEY
// (team-b), with the caller's other variables but none of its CRUCIBLE_.
func startSDKServer(t *testing.T) []string {
	t.Helper()
	testenv.Root(t)
	testenv.Image(t, "datascience")
	const modelKey = "sk-scripted-model-for-the-sdks"
	model := llmtest.OpenAI(t, llmtest.Script{Key: modelKey, FromPrompt: true,
		Codes: []string{"print('this task scripts no program')"}, Answer: "this task scripts no answer"})
	t.Setenv("CRUCIBLE_TEST_MODEL_KEY", modelKey)
	db := filepath.Join(t.TempDir(), "runs.db")
	_, teamA := createKey(t, db, "team-a", false)
	_, teamB := createKey(t, db, "team-b", false)
	srv := startServer(t, "server", db, configFlag(t, fmt.Sprintf(
		`{"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"}}`, model.URL+"/v1"))...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CRUCIBLE_") {
			env = append(env, kv)
		}
	}
	return append(env, "CRUCIBLE_URL="+srv.URL, "CRUCIBLE_API_KEY="+teamA, "CRUCIBLE_TEST_OTHER_API_KEY="+teamB,
		"PYTHONDONTWRITEBYTECODE=1")
}

// runSuite runs name, an SDK's test command, in the repository's root
// with env, and returns its output; it fails t when the command could not
// start or ran past sdkTestTimeout (its exit status is the caller's).
func runSuite(t *testing.T, env []string, name string, args ...string) (out []byte, exitErr error) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sdkTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = root, env
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %s ran past %v; its output:\n%s", name, strings.Join(args, " "), sdkTestTimeout, b.Bytes())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return b.Bytes(), err
}

// suiteCase is one test of an SDK's suite as its runner reported it.
type suiteCase struct {
	name    string
	outcome string // "passed", "failed" or "skipped"
	detail  string // the failure's or the skip's message
}

// reportCases makes each case of an SDK's suite a subtest of t, failed
// or passed as the SDK's runner said, and fails t when the suite ran no
// test or skipped one: setup.sh meets every need they have, so a skip
// means a proof did not run. output is the runner's, shown on failure.
func reportCases(t *testing.T, cases []suiteCase, exitErr error, output []byte) {
	t.Helper()
	if len(cases) == 0 || exitErr != nil {
		t.Errorf("the suite ran %d tests (exit: %v); its output:\n%s", len(cases), exitErr, output)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			switch c.outcome {
			case "failed":
				t.Errorf("failed:\n%s", c.detail)
			case "skipped":
				t.Errorf("skipped (every need is met by scripts/setup.sh, so a skip is a failure): %s", c.detail)
			}
		})
	}
}

// junitReport is what runSuite reads of pytest's --junitxml report.
type junitReport struct {
	Cases []struct {
		Class   string `xml:"classname,attr"`
		Name    string `xml:"name,attr"`
		Failure *struct {
			Message string `xml:"message,attr"`
			Text    string `xml:",chardata"`
		} `xml:"failure"`
		Error *struct {
			Message string `xml:"message,attr"`
			Text    string `xml:",chardata"`
		} `xml:"error"`
		Skipped *struct {
			Message string `xml:"message,attr"`
		} `xml:"skipped"`
	} `xml:"testsuite>testcase"`
}

// TestPythonSDK runs the Python SDK's tests (sdk/python/tests, pytest
// with Debian's python3) against a real server (startSDKServer): runs,
// a stream resumed after a cut connection, sessions with files, an
// analysis with a chart, an agent run with an approval, errors naming
// fields, a wrong key, two tenants, the tool for models. Each pytest case
// is a subtest.
func TestPythonSDK(t *testing.T) {
	python := testenv.Pytest(t)
	env := startSDKServer(t)
	report := filepath.Join(t.TempDir(), "junit.xml")
	out, exitErr := runSuite(t, env, python, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
		"--junitxml", report, "sdk/python/tests")
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("pytest wrote no report (%v); its output:\n%s", err, out)
	}
	var r junitReport
	if err := xml.Unmarshal(b, &r); err != nil {
		t.Fatalf("pytest's report: %v", err)
	}
	var cases []suiteCase
	for _, c := range r.Cases {
		sc := suiteCase{name: strings.TrimPrefix(strings.TrimPrefix(c.Class, "sdk.python."), "tests.") + "." + c.Name, outcome: "passed"}
		switch {
		case c.Failure != nil:
			sc.outcome, sc.detail = "failed", c.Failure.Message+"\n"+c.Failure.Text
		case c.Error != nil:
			sc.outcome, sc.detail = "failed", c.Error.Message+"\n"+c.Error.Text
		case c.Skipped != nil:
			sc.outcome, sc.detail = "skipped", c.Skipped.Message
		}
		cases = append(cases, sc)
	}
	reportCases(t, cases, exitErr, out)
}

// tapResultRE matches a top-level result line of Node's TAP reporter:
// "ok 3 - name", "not ok 4 - name", with "# SKIP reason" for a skip.
var tapResultRE = regexp.MustCompile(`^(ok|not ok) \d+ - (.*?)(?: # (?i:SKIP)\b ?(.*))?$`)

// TestTypeScriptSDK runs the TypeScript SDK's tests (sdk/typescript/test,
// Node's test runner, on the SDK built into dist) against a real server
// (startSDKServer): what TestPythonSDK proves for Python, and the check
// that the types generated from the OpenAPI document did not drift. Each
// top-level test file's test is a subtest.
func TestTypeScriptSDK(t *testing.T) {
	dir := testenv.TypeScriptSDK(t)
	env := startSDKServer(t)
	files, err := filepath.Glob(filepath.Join(dir, "test", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s (%v)", filepath.Join(dir, "test"), err)
	}
	var cases []suiteCase
	var failed []error
	var outs []byte
	for _, file := range files { // one at a time, so that each case is named by its file
		out, exitErr := runSuite(t, env, "node", "--test", "--test-reporter=tap", file)
		outs = append(outs, out...)
		if exitErr != nil {
			failed = append(failed, fmt.Errorf("%s: %w", filepath.Base(file), exitErr))
		}
		cases = append(cases, tapCases(strings.TrimSuffix(filepath.Base(file), ".test.mjs"), out)...)
	}
	reportCases(t, cases, errors.Join(failed...), outs)
}

// tapCases reads the top-level results of Node's TAP reporter in out,
// each named file/name, with a failure's indented details.
func tapCases(file string, out []byte) []suiteCase {
	var cases []suiteCase
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := tapResultRE.FindStringSubmatch(line); m != nil {
			c := suiteCase{name: file + "/" + m[2], outcome: "passed"}
			switch {
			case m[1] == "not ok":
				c.outcome = "failed"
			case strings.Contains(strings.ToUpper(line), "# SKIP"):
				c.outcome, c.detail = "skipped", m[3]
			}
			cases = append(cases, c)
			continue
		}
		if n := len(cases); n > 0 && cases[n-1].outcome == "failed" && strings.HasPrefix(line, "  ") {
			cases[n-1].detail += line + "\n"
		}
	}
	return cases
}

// TestSDKQuickStarts runs the README's quick start of each SDK (the
// ```python block under "### Python", the ```js block under "###
// TypeScript") against a real server (startSDKServer) with only the
// environment set, and checks that it prints the output the README
// shows.
func TestSDKQuickStarts(t *testing.T) {
	python := testenv.Pytest(t)
	ts := testenv.TypeScriptSDK(t)
	env := startSDKServer(t)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The package resolves by its name from a project that installed it:
	// node_modules/@crucible-sandbox/sdk, here a link to the checkout's.
	project := t.TempDir()
	if err := os.MkdirAll(filepath.Join(project, "node_modules", "@crucible-sandbox"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ts, filepath.Join(project, "node_modules", "@crucible-sandbox", "sdk")); err != nil {
		t.Fatal(err)
	}
	for _, qs := range []struct {
		heading, lang, dir string
		cmd                []string
		env                []string
	}{
		{"### Python", "python", project, []string{python, "-"}, []string{"PYTHONPATH=" + filepath.Join(root, "sdk", "python")}},
		{"### TypeScript", "js", project, []string{"node", "--input-type=module"}, nil},
	} {
		t.Run(qs.lang, func(t *testing.T) {
			code, want := readmeExample(t, qs.heading, qs.lang)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, qs.cmd[0], qs.cmd[1:]...)
			cmd.Dir, cmd.Env, cmd.Stdin = qs.dir, append(env, qs.env...), strings.NewReader(code)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("the README's quick start: %v\nstderr:\n%s", err, stderr.Bytes())
			}
			if string(out) != want {
				t.Errorf("the README's quick start printed:\n%q\nthe README shows:\n%q", out, want)
			}
		})
	}
}
