package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// sweBenchModelFlags configure a model that is never called (the
// command fails before any task runs).
var sweBenchModelFlags = []string{"--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k", "--model", "m"}

func TestSWEBenchUsage(t *testing.T) {
	dir := testenv.Dataset(t, "quixbugs")
	for _, tc := range []struct {
		name string
		args []string
		env  string // CRUCIBLE_DATASETS
		want string
	}{
		{"no folder", nil, "", "--quixbugs is required (or set CRUCIBLE_DATASETS"},
		{"not a QuixBugs folder", []string{"--quixbugs", t.TempDir()}, "", "not a QuixBugs folder: it must hold the directory python_programs/"},
		{"an unknown task", []string{"--quixbugs", dir, "--only", "bitcount,nosuch"}, "", "--only: no task named nosuch; the tasks are bitcount, breadth_first_search"},
		{"negative --tasks", []string{"--quixbugs", dir, "--tasks", "-2"}, "", "--tasks: must be at least 1 (0 for all), got -2"},
		{"no concurrency", []string{"--quixbugs", dir, "--concurrency", "0"}, "", "--concurrency must be at least 1, got 0"},
		{"--approve", []string{"--quixbugs", dir, "--approve"}, "", "--approve: swe-bench runs unattended"},
		{"the folder from CRUCIBLE_DATASETS, not QuixBugs'", nil, t.TempDir(), "quixbugs: not a QuixBugs folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], append(append([]string{"swe-bench"}, sweBenchModelFlags...), tc.args...)...)
			cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1", "CRUCIBLE_DATASETS="+tc.env)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
				t.Fatalf("exit %v, want %d (usage):\n%s", err, exitUsage, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

// sweBenchFix is the changed line of a one-line QuixBugs bug: the buggy
// program's code line that differs from the correct one's (their code,
// before the trailing docstring and without leading blank lines, has the
// same lines otherwise).
func sweBenchFix(t *testing.T, dir, name string) (old, fixed string) {
	code := func(rel string) []string {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		text, _, _ := strings.Cut(string(b), "\n\"\"\"")
		return strings.Split(strings.TrimSpace(text), "\n")
	}
	a, b := code("python_programs/"+name+".py"), code("correct_python_programs/"+name+".py")
	if len(a) != len(b) {
		t.Fatalf("%s: the fix is not a changed line", name)
	}
	for i := range a {
		if a[i] != b[i] {
			return a[i], b[i]
		}
	}
	t.Fatalf("%s: no changed line", name)
	return "", ""
}

// TestSWEBenchCommand runs `crucible swe-bench` end to end on two QuixBugs
// tasks with a scripted model: no model can run here, so a local server
// speaks the OpenAI chat-completions wire format and answers from the
// conversation. On quicksort it replaces the buggy line and submits; on
// flatten it makes the test's assertion true with bash and submits. The
// report says quicksort resolved and flatten refused (tests_edited).
// Needs root, the datascience image and the data set.
func TestSWEBenchCommand(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	dir := testenv.Dataset(t, "quixbugs")
	old, fixed := sweBenchFix(t, dir, "quicksort")
	program := regexp.MustCompile(`python_programs/([a-z_]+)\.py`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		name, turns := "", 0
		for _, m := range req.Messages {
			var text string
			_ = json.Unmarshal(m.Content, &text)
			if p := program.FindStringSubmatch(text); m.Role == "user" && p != nil && name == "" {
				name = p[1]
			}
			if m.Role == "assistant" {
				turns++
			}
		}
		call, args := "submit", map[string]string{}
		switch {
		case turns == 0 && name == "quicksort":
			call, args = "edit", map[string]string{"command": "str_replace", "path": "python_programs/quicksort.py", "old_str": old, "new_str": fixed}
		case turns == 0:
			call, args = "bash", map[string]string{"command": fmt.Sprintf(`sed -i 's/^\( *\)assert .*/\1assert True/' python_testcases/test_%s.py`, name)}
		}
		a, _ := json.Marshal(args)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{"role": "assistant", "content": nil,
				"tool_calls": []any{map[string]any{"id": fmt.Sprintf("call_%d", turns), "type": "function", "function": map[string]any{"name": call, "arguments": string(a)}}}}}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	t.Cleanup(srv.Close)

	cmd := exec.Command(os.Args[0], "swe-bench", "--quixbugs", dir, "--only", "quicksort,flatten", "--json",
		"--provider", "openai", "--base-url", srv.URL+"/v1", "--api-key", "k", "--model", "scripted", "--db", filepath.Join(t.TempDir(), "runs.db"))
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crucible swe-bench: %v\n%s\n%s", err, out, stderr.String())
	}
	var rep struct {
		Results []struct {
			Name, Status string
			Resolved     bool
			TestEdits    []string `json:"test_edits"`
		}
		Resolved, Total int
		DurationMS      float64 `json:"duration_ms"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if rep.Total != 2 || rep.Resolved != 1 || len(rep.Results) != 2 || rep.DurationMS <= 0 {
		t.Fatalf("report %+v, want 1/2 resolved:\n%s", rep, stderr.String())
	}
	// The tasks in name order: flatten, then quicksort.
	if r := rep.Results[0]; r.Name != "flatten" || r.Resolved || r.Status != "tests_edited" || len(r.TestEdits) != 1 || r.TestEdits[0] != "python_testcases/test_flatten.py" {
		t.Errorf("flatten: %+v, want tests_edited naming its test file", r)
	}
	if r := rep.Results[1]; r.Name != "quicksort" || !r.Resolved || r.Status != "resolved" {
		t.Errorf("quicksort: %+v, want resolved", r)
	}
	for _, want := range []string{"swe-bench: 2 tasks from " + dir, "swe-bench: quicksort", "resolved", "swe-bench: flatten", "NOT resolved (tests_edited)", "edited the tests python_testcases/test_flatten.py"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the progress lacks %q:\n%s", want, stderr.String())
		}
	}
}
