package main

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
)

// The scripted model's code and answer for the tour's analyst step: the
// README shows them as the model's part of the output.
const (
	tourModelCode   = "revenue = df.groupby(\"month\", sort=False)[\"revenue\"].sum()\nprint(revenue)"
	tourModelAnswer = "June, with 5200.0; its two rows are the same, which the profile warns of (1 duplicate rows)."
)

// updateTour makes TestREADMETour write each command's real output into
// README.md in place of the shown one (the port shown as 8080), for a
// change that meant to change an output: review the diff, then commit it.
var updateTour = flag.Bool("tour.update", false, "TestREADMETour: write the real outputs into README.md")

// tourSteps are what the tour must show, each found in one of its
// commands: the run → session → analyst with a model → web UI → MCP of
// the README's promise. A tour that lost a step fails here, not silently.
var tourSteps = []string{"bin/crucible run ", "bin/crucible session", "bin/crucible analyst ", "bin/crucible serve ", "/v1/analyses", "/mcp"}

// TestREADMETour runs the README's tour (parseTour) and checks that each
// command prints the output the README shows, normalised only in
// durations, peak memory, IDs and ports (normaliseTour; the port of the
// server the tour starts is shown as 8080). It runs in a directory of its
// own where bin/crucible is this test binary as the CLI (TestMain) and
// examples/ and tools/ are the repository's, with the local socket of
// TestMain; each command runs in `bash -c`, after the tour's earlier
// export commands, with stdout and stderr together as a terminal shows
// them.
//
// What the tour cannot have here is stood in for, as in the other CLI
// tests: the model is llmtest.OpenAI, the scripted server speaking the
// real OpenAI wire format (native tool calls) that serve_agents_test.go
// and serve_analyses_test.go use, reached through OPENAI_BASE_URL, the
// one variable the test adds to the environment (the README's serve.json
// names no base_url, so the server's model takes it too). The tour's
// `crucible serve ... &` is started with `--addr 127.0.0.1:0 --db` a
// temporary database added at its end (the later flag wins), so that it
// takes a free port and not the host's run store, whose API keys would
// change its answers; it is stopped with SIGTERM at the end. Its log is
// not compared whole: it carries times; each line the README shows under the command
// (the web UI's address) must be one of its lines, the port written as
// 8080; the commands after it check it works.
// The MCP step runs the real TypeScript SDK client of tools/mcp-client.
func TestREADMETour(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	tools := testenv.NPMClients(t)
	for _, bin := range []string{"bash", "curl", "jq", "node"} {
		if _, err := exec.LookPath(bin); err != nil {
			testenv.Missing(t, bin+", which the README's tour runs", "run scripts/setup.sh as root, as scripts/test.sh does; it installs it")
		}
	}
	root := filepath.Dir(filepath.Dir(tools))
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	items, err := parseTour(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	checkTourSteps(t, items)

	dir := tourDir(t, root)
	model := llmtest.OpenAI(t, llmtest.Script{Codes: []string{tourModelCode}, Answer: tourModelAnswer})
	env := tourEnv("OPENAI_BASE_URL=" + model.URL + "/v1")
	var exports []string
	port := ""
	outputs := map[int][]string{}
	for _, it := range items {
		if it.file != "" {
			if err := os.WriteFile(filepath.Join(dir, it.file), []byte(it.content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		command := it.command
		if port != "" {
			command = tourHost.ReplaceAllString(command, "${1}:"+port)
		}
		script := strings.Join(append(exports, command), "\n")
		if it.background {
			port = startTourServer(t, dir, env, it, strings.Join(exports, "\n"))
			continue
		}
		if strings.HasPrefix(command, "export ") {
			exports = append(exports, command)
		}
		got := runTourCommand(t, dir, env, script)
		if port != "" {
			got = strings.ReplaceAll(got, "127.0.0.1:"+port, "127.0.0.1:8080")
		}
		if *updateTour {
			outputs[it.line] = trimBlankTail(strings.Split(got, "\n"))
		} else if diff := compareTour(it.want, strings.Split(got, "\n")); diff != "" {
			t.Errorf("README line %d: $ %s\n%s\nthe whole output:\n%s", it.line, it.command, diff, got)
		}
	}
	if *updateTour {
		if err := os.WriteFile(filepath.Join(root, "README.md"), []byte(rewriteTour(string(readme), outputs)), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("README.md: the outputs of %d commands written; review them with git diff", len(outputs))
	}
}

// tourHost finds the server's address in a command, as the README writes
// it (port 8080 of loopback).
var tourHost = regexp.MustCompile(`\b(localhost|127\.0\.0\.1):8080\b`)

// checkTourSteps fails t unless every step of tourSteps is in a command.
func checkTourSteps(t *testing.T, items []tourItem) {
	t.Helper()
	for _, step := range tourSteps {
		found := false
		for _, it := range items {
			found = found || strings.Contains(it.command, step)
		}
		if !found {
			t.Errorf("the README's tour has no command with %q: a step of the tour is missing", step)
		}
	}
}

// tourDir makes the tour's working directory: bin/crucible runs this
// test binary as the CLI, examples and tools are the repository's.
func tourDir(t *testing.T, root string) string {
	t.Helper()
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\nCRUCIBLE_TEST_MAIN=1 exec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "crucible"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"examples", "tools"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tourEnv is this process's environment without a model's settings (the
// tour sets its own), plus extra.
func tourEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "OPENAI_") || strings.HasPrefix(name, "ANTHROPIC_") ||
			name == "CRUCIBLE_MODEL" || name == "CRUCIBLE_PROVIDER" || name == "CRUCIBLE_TEST_MAIN" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// runTourCommand runs script in dir with bash and returns what it
// printed on stdout and stderr together.
func runTourCommand(t *testing.T, dir string, env []string, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s: did not end within 3 minutes:\n%s", script, out)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", script, err)
	}
	return string(out)
}

// startTourServer starts the tour's background command, which must be a
// crucible serve, on a free port with a database of its own, waits until
// it answers, and returns its port; it is stopped when t ends.
func startTourServer(t *testing.T, dir string, env []string, it tourItem, exports string) string {
	t.Helper()
	if !strings.HasPrefix(it.command, "bin/crucible serve ") {
		t.Fatalf("README line %d: the tour's background command must be bin/crucible serve, got %q", it.line, it.command)
	}
	script := exports + "\nexec " + it.command + " --addr 127.0.0.1:0 --db " + filepath.Join(t.TempDir(), "runs.db")
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir, cmd.Env = dir, env
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			t.Logf("the tour's crucible serve's log:\n%s", logs.String())
		}
	})
	deadline := time.After(3 * time.Minute)
	for {
		if m := servedAddr.FindStringSubmatch(logs.String()); m != nil {
			if resp, err := http.Get("http://" + m[1] + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					_, port, _ := strings.Cut(m[1], ":")
					checkServeShown(t, it, logs, port)
					return port
				}
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("README line %d: $ %s exited (%v):\n%s", it.line, it.command, err, logs.String())
		case <-deadline:
			t.Fatalf("README line %d: $ %s did not answer within 3 minutes:\n%s", it.line, it.command, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkServeShown fails the tour unless every line the README shows under
// its background serve command is a line of the server's log by the time
// the server answers (the log's port written as the README's 8080).
func checkServeShown(t *testing.T, it tourItem, logs *syncBuffer, port string) {
	t.Helper()
	lines := strings.Split(strings.ReplaceAll(logs.String(), ":"+port+"/", ":8080/"), "\n")
	for _, want := range it.want {
		if !slices.Contains(lines, want) {
			t.Errorf("README line %d: $ %s: the README shows %q, which is not a line of its log:\n%s", it.line, it.command, want, logs.String())
		}
	}
}
