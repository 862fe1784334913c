package linux_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// TestContextsRichResults proves a named context (Cell.Context) gives
// what the default gives in the data-science image: a DataFrame as the
// last expression (its repr and HTML table), display(), an open figure
// returned as a PNG, a "%time" magic acting on the context's variables;
// and that the same names in another context are left alone.
func TestContextsRichResults(t *testing.T) {
	img := testenv.Image(t, "datascience")
	// Importing pandas and matplotlib takes seconds on a loaded host.
	s := newSession(t, newRuntime(t, imageOptions(img)), sandbox.Limits{WallTimeMS: 60_000})
	wantOK(t, execCell(t, s, sandbox.Cell{Context: "other", Code: "df = 'untouched'"}))
	res := execCell(t, s, sandbox.Cell{Context: "rich", Code: `import pandas as pd, matplotlib.pyplot as plt
df = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})
display(df['a'])
plt.plot(df['a'])
df`})
	wantOK(t, res)
	if !strings.Contains(res.Value, "a  b") || !strings.Contains(res.ValueHTML, "<table") {
		t.Errorf("the DataFrame as the last expression: value %q, HTML %q", res.Value, res.ValueHTML)
	}
	if len(res.Displays) != 1 || res.Displays[0].MIME != "text/html" {
		t.Errorf("displays %+v, want the Series as one HTML table", res.Displays)
	}
	if !slices.ContainsFunc(res.Artifacts, func(a sandbox.Artifact) bool { return a.Name == "figure-1.png" && a.MIME == "image/png" }) {
		t.Errorf("no figure-1.png among the artifacts %v", res.Artifacts)
	}
	res = execCell(t, s, sandbox.Cell{Context: "rich", Code: "%time n = len(df)\nn"})
	wantOK(t, res)
	if res.Value != "2" || !strings.Contains(string(res.Stdout), "Wall time") {
		t.Errorf("%%time in the context: want 2 and the times, got %s", describe(res))
	}
	if res := execCell(t, s, sandbox.Cell{Context: "other", Code: "df, 'n' in globals()"}); res.Value != "('untouched', False)" {
		t.Errorf("context other after context rich: %s", describe(res))
	}
}

// TestContextsPolicy proves the code policy checks a cell in a named
// context as in the default: a blocked import runs nothing of the cell,
// whose context keeps its variables. (The conformance suite cannot say
// so of every runtime: a cell's Rules are set by the service, and do not
// cross the remote client.)
func TestContextsPolicy(t *testing.T) {
	s := newSession(t, newRuntime(t, linux.Options{}), sandbox.Limits{})
	wantOK(t, execCell(t, s, sandbox.Cell{Context: "a", Code: "x = 'a'"}))
	rules := &sandbox.CodeRules{Mode: sandbox.PolicyBlock, Preset: "test", Modules: []string{"socket"}}
	res := execCell(t, s, sandbox.Cell{Context: "a", Code: "import socket\nx = 'changed'", Rules: rules})
	if res.Status != sandbox.StatusBlocked || len(res.Findings) == 0 {
		t.Fatalf("a blocked import in context a: want status blocked with findings, got %s", describe(res))
	}
	res = execCell(t, s, sandbox.Cell{Context: "a", Code: "x"})
	wantOK(t, res)
	if res.Value != "'a'" {
		t.Errorf("context a after the blocked cell: x = %s, want 'a'", res.Value)
	}
}
