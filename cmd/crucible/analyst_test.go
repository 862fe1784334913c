package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/creack/pty"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// Proves how `crucible analyst` sorts its arguments: files (and --data)
// are datasets, the rest questions in order; a directory, a name that
// looks like a data file but is none (named, with the data files nearest
// it), and no dataset at all are refused.
func TestSplitAnalystArgs(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "sales.csv")
	if err := os.WriteFile(csv, []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		data, args      []string
		paths, question []string
		err             string
	}{
		{"file then questions", nil, []string{csv, "mean of a?", "and b?"}, []string{csv}, []string{"mean of a?", "and b?"}, ""},
		{"questions before the file", nil, []string{"mean of a?", csv}, []string{csv}, []string{"mean of a?"}, ""},
		{"--data", []string{csv}, []string{"mean of a?"}, []string{csv}, []string{"mean of a?"}, ""},
		{"profile only", nil, []string{csv}, []string{csv}, nil, ""},
		{"blank question dropped", nil, []string{csv, "  "}, []string{csv}, nil, ""},
		{"a mistyped file", nil, []string{csv, "sales2.csv"}, nil, nil, "sales2.csv: no such file"},
		{"a misspelt file, the nearest named", nil, []string{filepath.Join(dir, "salse.csv"), "mean of a?"}, nil, nil,
			filepath.Join(dir, "salse.csv") + `: no such file (did you mean "` + csv + `"?) (a question would not look like a file name)`},
		{"a misspelt file, nothing near", nil, []string{filepath.Join(dir, "weather.csv")}, nil, nil,
			filepath.Join(dir, "weather.csv") + ": no such file (a question would not look like a file name)"},
		{"a question ending like a file", nil, []string{csv, "what is in sales.csv"}, []string{csv}, []string{"what is in sales.csv"}, ""},
		{"a directory", nil, []string{dir}, nil, nil, "is a directory"},
		{"no dataset", nil, []string{"mean of a?"}, nil, nil, "no dataset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths, questions, err := splitAnalystArgs(tc.data, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(paths, tc.paths) || !slices.Equal(questions, tc.question) {
				t.Errorf("= %q, %q, %v; want %q, %q", paths, questions, err, tc.paths, tc.question)
			}
		})
	}
}

// scriptedAnalystModel is a local server speaking the OpenAI
// chat-completions wire format, standing in for a model (none can run
// here). The verifier (told apart by its system prompt) accepts; the
// coder, in text mode, gets replies in order: for each question a fenced
// program, then, once it ran, its final answer.
func scriptedAnalystModel(t *testing.T, replies ...string) *httptest.Server {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		reply := `{"ok": true, "reason": "the output answers the question"}`
		if !strings.HasPrefix(req.Messages[0].Content, "You check an agent's work") {
			mu.Lock()
			if len(replies) == 0 {
				mu.Unlock()
				t.Errorf("scripted model: a coder request past the script")
				http.Error(w, "not in the script", http.StatusBadRequest)
				return
			}
			reply, replies = replies[0], replies[1:]
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "scripted",
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": reply}}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// fenced is a program as the scripted coder sends it.
func fenced(code string) string { return "```python\n" + code + "\n```" }

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// analystCmd is `crucible analyst args...` run from this test binary in
// dir, with no model configured in the environment.
func analystCmd(t *testing.T, dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"analyst", "--db", filepath.Join(t.TempDir(), "runs.db")}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CRUCIBLE_TEST_MAIN=1", "OPENAI_API_KEY=", "ANTHROPIC_API_KEY=", "CRUCIBLE_MODEL=", "OPENAI_BASE_URL=")
	return cmd
}

// modelFlags points `crucible analyst` at a scripted model in text mode.
func modelFlags(srv *httptest.Server) []string {
	return []string{"--provider", "openai", "--base-url", srv.URL + "/v1", "--api-key", "test", "--model", "scripted", "--text-mode"}
}

const peopleCSV = "name,joined,city\n Alice ,2024-01-05,Paris\nBob,05/02/2024,  Lyon\n Alice ,2024-01-05,Paris\nAlice,Jan 5 2024,Paris\nCarol,2024-13-45,Nice\nDan,,Nice\nEve,17/03/2024,Nice\n"

// With no question, `crucible analyst FILE` prints the profile and exits
// 0, no model configured and none needed.
func TestAnalystProfileOnly(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	cmd := analystCmd(t, t.TempDir(), testenv.Dataset(t, "dabench/tables/insurance.csv"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crucible analyst: %v\n%s%s", err, out, stderr.String())
	}
	for _, want := range []string{"DataFrame insurance (also df) from insurance.csv (csv", "1338 rows x 7 columns", `"age": int64`, "first 5 rows:"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(stderr.String(), "model") {
		t.Errorf("stderr mentions a model:\n%s", stderr.String())
	}
}

// Three questions in one session, through the binary: DABench's mean age
// in the format it asks for, a chart of a variable the first defined (a
// follow-up), and the cleaning of a messy CSV. The answers, code and
// output are printed after the profile; the chart (with its labels) and
// the cleaned file are saved in --out; the exit status is 0.
func TestAnalystQuestions(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "people.csv"), []byte(peopleCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	model := scriptedAnalystModel(t,
		fenced("mean_age = round(insurance['age'].mean(), 2)\nprint(mean_age)"), "FINAL ANSWER: @mean_age[39.21]",
		fenced("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\ninsurance.groupby('region')['charges'].mean().plot.bar(ax=ax)\nax.axhline(mean_age)\nax.set_title('Mean charges by region')\nax.set_xlabel('region')\nax.set_ylabel('mean charges')\nprint('plotted')"),
		"FINAL ANSWER: the southeast's charges are the highest",
		fenced("print(crucible_clean('people', out='people_clean.csv'))"), "FINAL ANSWER: 7 rows in, 5 out",
	)
	out := filepath.Join(dir, "out")
	args := append(modelFlags(model), "--out", out, testenv.Dataset(t, "dabench/tables/insurance.csv"), "people.csv",
		"Calculate the mean age. @mean_age[value] rounded to two decimals.", "Plot the mean charges by region.", "Normalise people.csv: trim whitespace, standardise dates, remove duplicates.")
	cmd := analystCmd(t, dir, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("crucible analyst: %v\n%s\n%s", err, stdout, stderr.String())
	}
	for _, want := range []string{
		"DataFrame insurance from insurance.csv", "DataFrame people from people.csv",
		"answer:\n@mean_age[39.21]", "output:\n39.21\n",
		`chart "Mean charges by region" (x: region, y: mean charges): ` + filepath.Join(out, "figure-1.png") + " (image/png)",
		"file: " + filepath.Join(out, "people_clean.csv"),
		"cleaning data/people.csv → people_clean.csv: 7 rows in, 5 out, 2 duplicates removed",
		"values changed: city 1, joined 3, name 2", "dates joined: 5 parsed, 1 failed (83.3% parsed)",
		`warning: row 5, joined: "2024-13-45" not a date`,
	} {
		if !strings.Contains(string(stdout), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"question 1: Calculate the mean age.", "question 3: Normalise"} {
		if !strings.Contains(string(stdout), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{"analyst: attempt 1 · running the code", "analyst: attempt 1 · status ok"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if b, err := os.ReadFile(filepath.Join(out, "people_clean.csv")); err != nil || !strings.HasPrefix(string(b), "name,joined,city\nAlice,2024-01-05,Paris\n") {
		t.Errorf("people_clean.csv: %q, %v", b, err)
	}
}

// Without --out, `crucible analyst` writes nothing: its working directory
// stays empty, and the chart an answer drew is named as not saved, saying
// how to save it. Standard output alone reads as the conversation: the
// profile, then each question followed by its answer, in order.
func TestAnalystNoOutWritesNothing(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	dir := t.TempDir()
	model := scriptedAnalystModel(t,
		fenced("import matplotlib.pyplot as plt\nplt.hist(df['age'])\nplt.title('Ages')\nprint('drawn')"), "FINAL ANSWER: most people are young",
		fenced("print(len(df))"), "FINAL ANSWER: 1338 rows",
	)
	args := append(modelFlags(model), testenv.Dataset(t, "dabench/tables/insurance.csv"), "Plot the ages.", "How many rows?")
	cmd := analystCmd(t, dir, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("crucible analyst: %v\n%s\n%s", err, stdout, stderr.String())
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("the working directory holds %v (%v), want nothing written without --out", entries, err)
	}
	if want := `chart "Ages" figure-1.png not saved: no --out DIR given`; !strings.Contains(string(stdout), want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout)
	}
	at := 0
	for _, want := range []string{"1338 rows x 7 columns", "\nquestion 1: Plot the ages.\n", "answer:\nmost people are young", "\nquestion 2: How many rows?\n", "answer:\n1338 rows"} {
		i := strings.Index(string(stdout[at:]), want)
		if i < 0 {
			t.Fatalf("stdout lacks %q after byte %d, in this order:\n%s", want, at, stdout)
		}
		at += i + len(want)
	}
}

// --json prints the transcript as one JSON object: the profile, and per
// question its status, answer, code, output, tables and the paths of its
// saved charts; a question left unanswered (its only attempt failed) is
// in it too, and makes the exit status 1.
func TestAnalystJSONTranscript(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	dir := t.TempDir()
	model := scriptedAnalystModel(t,
		fenced("show_table(df.groupby('smoker')['charges'].mean().round(2), 'by smoker')\nimport matplotlib.pyplot as plt\nplt.hist(df['age'])\nplt.title('Ages')\nplt.xlabel('age')\nplt.ylabel('people')\nprint('done')"),
		"FINAL ANSWER: smokers pay more",
		fenced("print(undefined_name)"),
	)
	out := filepath.Join(dir, "out")
	args := append(modelFlags(model), "--json", "--max-retries", "0", "--out", out, "--data", testenv.Dataset(t, "dabench/tables/insurance.csv"), "Do smokers pay more?", "Something that fails")
	cmd := analystCmd(t, dir, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("crucible analyst: %v, want exit status 1\n%s\n%s", err, stdout, stderr.String())
	}
	var tr struct {
		Profile struct {
			Tables []struct{ Name string }
		}
		Answers []struct {
			Question, Status, Text, Code, Output string
			Tables                               []struct {
				Name    string
				Columns []string
				Rows    [][]any
				HTML    string
			}
			Charts []struct{ Name, Path, Title string }
		}
	}
	if err := json.Unmarshal(stdout, &tr); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if len(tr.Profile.Tables) != 1 || tr.Profile.Tables[0].Name != "insurance" || len(tr.Answers) != 2 {
		t.Fatalf("transcript: %s", stdout)
	}
	a := tr.Answers[0]
	if a.Status != "answered" || a.Text != "smokers pay more" || !strings.HasPrefix(a.Code, "show_table(") || a.Output != "done\n" {
		t.Errorf("first answer: %+v", a)
	}
	if len(a.Tables) != 1 || a.Tables[0].Name != "by smoker" || !slices.Equal(a.Tables[0].Columns, []string{"smoker", "charges"}) || len(a.Tables[0].Rows) != 2 || !strings.Contains(a.Tables[0].HTML, "<table") {
		t.Errorf("first answer's tables: %+v", a.Tables)
	}
	if len(a.Charts) != 1 || a.Charts[0].Title != "Ages" || a.Charts[0].Path != filepath.Join(out, "figure-1.png") || !fileExists(a.Charts[0].Path) {
		t.Errorf("first answer's charts: %+v", a.Charts)
	}
	if b := tr.Answers[1]; b.Status != "budget_exhausted" || b.Question != "Something that fails" {
		t.Errorf("second answer: %+v", b)
	}
}

// On a terminal with no question, `crucible analyst` prints the profile
// and reads questions typed one per line, each answered in the same
// session (the second uses the first's variable), until Ctrl-D: exit 0.
func TestAnalystInteractive(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	model := scriptedAnalystModel(t,
		fenced("mean_age = round(df['age'].mean(), 2)\nprint(mean_age)"), "FINAL ANSWER: @mean_age[39.21]",
		fenced("print(mean_age + 1)"), "FINAL ANSWER: 40.21",
	)
	args := append([]string{"analyst", "--db", filepath.Join(t.TempDir(), "runs.db"), "--out", t.TempDir()}, modelFlags(model)...)
	cmd := crucibleCommand(append(args, testenv.Dataset(t, "dabench/tables/insurance.csv"))...)
	ptmx, err := pty.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	s := &ptySession{cmd: cmd, tty: ptmx, screen: collect(ptmx)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		ptmx.Close()
	})
	s.screen.waitFor(t, "1338 rows x 7 columns")
	s.screen.waitFor(t, "question?")
	s.typeLine(t, "What is the mean age? @mean_age[value]")
	s.screen.waitFor(t, "answer:\r\n@mean_age[39.21]")
	s.screen.waitFor(t, "trace agt_")
	s.typeLine(t, "And plus one?")
	s.screen.waitFor(t, "output:\r\n40.21")
	s.screen.waitFor(t, "question?")
	if _, err := ptmx.Write([]byte{4}); err != nil { // Ctrl-D: end of input
		t.Fatal(err)
	}
	if code := s.exitCode(t); code != 0 {
		t.Errorf("exit code %d, want 0: %q", code, s.screen)
	}
}

// TestAnalystImageWithoutPandas: `crucible analyst --image host`, whose
// interpreter cannot import numpy, is refused as bad input (exit 2)
// naming the image and how to build one that has it, not a failure of
// the platform (exit 70).
func TestAnalystImageWithoutPandas(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "sales.csv"), []byte("a,b\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := analystCmd(t, dir, "--image", "host", "sales.csv")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(stderr.String(), "image: must have the Python modules numpy and pandas") || !strings.Contains(stderr.String(), "crucible image build") {
		t.Errorf("exit %d, stderr %q; want 2 and the image refused with how to build one", code, stderr.String())
	}
}
