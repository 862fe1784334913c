package analyst

import (
	"context"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestAskAfterMemoryRestart: the model's code runs the analysis's
// interpreter out of memory; the session restarts it and the analyst
// loads the datasets and its helpers again, so that the model, told so,
// goes on with df and crucible_clean as before and answers.
func TestAskAfterMemoryRestart(t *testing.T) {
	a, err := Open(context.Background(), newRuntime(t), sandbox.SessionRequest{Limits: sandbox.Limits{MemoryBytes: 400 * sandbox.MiB}},
		[]Dataset{{Name: "small.csv", Content: []byte("a,b\n1,2\n3,4\n5,6\n")}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = a.Close() })
	m := newScriptedModel(t,
		run("mine = 1\nchunks = []\nwhile True:\n    chunks.append(bytes(1 << 20))"),
		seeing(func(t testing.TB, req modelRequest) {
			contains(t, "tool result after the restart", req.last().Text, "memory_limit", "restarted", "loaded again")
		}, run("print(df.shape, callable(crucible_clean), 'mine' in globals())")),
		finalAnswer("3 rows."))
	ans := ask(t, a, m, "How many rows?", AskOptions{})
	if !ans.Answered() || strings.TrimSpace(ans.Output) != "(3, 2) True False" {
		t.Fatalf("status %s (%s), output %q; want an answer from df after the restart", ans.Status, ans.Reason, ans.Output)
	}
}
