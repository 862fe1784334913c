package e2bapi_test

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
)

// TestSDKInterpreter: through E2B's official code-interpreter SDK
// (interpreter.mjs): the seed's flow gives the DataFrame's shape on
// stdout and the chart as a real PNG result (and a chart saved to a file
// as one, the file's content); output streams as the cell
// runs; an error keeps its class, message and traceback; variables
// persist; a DataFrame's table comes as HTML; a cell past the SDK's
// timeout ends the call and the sandbox goes on; a language other than
// Python and per-cell envs are refused with the field named; code
// contexts keep variables apart, restart empties one, removal forgets it.
func TestSDKInterpreter(t *testing.T) {
	ts := newTestServer(t, nil)
	var got struct {
		Seed struct {
			Stdout         string
			Error          any
			PNGs           []string
			ExecutionCount int
		}
		Saved struct {
			PNGs       int
			SameAsFile bool
		}
		Streamed struct {
			Stdout, Stderr string
			Arrivals       []struct {
				Line string
				At   int64
			}
		}
		Error struct{ Name, Value, Traceback string }
		Value struct {
			Text  string
			Count int
		}
		Table                                                                    struct{ Text, HTML string }
		Timeout                                                                  thrown
		AfterTimeout                                                             string
		Language, Envs                                                           struct{ Name, Value string }
		InContext, DefaultSeesY, ContextSeesX, AfterRestart, DefaultAfterRestart string
		RemovedRun                                                               thrown
		Contexts, ContextsAfter                                                  []string
		UnknownContext, AfterKill                                                thrown
	}
	runSDK(t, ts, "interpreter.mjs", ts.newKey("acme"), &got)

	if got.Seed.Stdout != "(4, 2)\n" || got.Seed.Error != nil || len(got.Seed.PNGs) != 1 || got.Seed.ExecutionCount != 1 {
		t.Errorf("the seed's flow: %+v; want the shape (4, 2), no error, one PNG, execution 1", got.Seed)
	} else if png, err := base64.StdEncoding.DecodeString(got.Seed.PNGs[0]); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 1000 {
		t.Errorf("the chart is no PNG: %d bytes, %v", len(png), err)
	}
	if got.Saved.PNGs != 1 || !got.Saved.SameAsFile {
		t.Errorf("a chart saved with savefig: %+v; want one PNG result, the file's content", got.Saved)
	}
	if a := got.Streamed.Arrivals; got.Streamed.Stdout != "0\n1\n2\n" || got.Streamed.Stderr != "warn\n" || len(a) < 2 || a[len(a)-1].At-a[0].At < 600 {
		t.Errorf("streamed: %+v; want 0 1 2 arriving over 0.8 s, and warn on stderr", got.Streamed)
	}
	if e := got.Error; e.Name != "ZeroDivisionError" || e.Value != "division by zero" || !strings.Contains(e.Traceback, "line 2, in f") || !strings.Contains(e.Traceback, "ZeroDivisionError: division by zero") {
		t.Errorf("error: %+v; want ZeroDivisionError with a traceback through f", e)
	}
	if got.Value.Text != "5" {
		t.Errorf("x after x = 5: %+v", got.Value)
	}
	if !strings.Contains(got.Table.HTML, "<table") || !strings.Contains(got.Table.HTML, "north") || !strings.Contains(got.Table.Text, "north") {
		t.Errorf("a DataFrame's result: %+v; want its text and an HTML table", got.Table)
	}
	if got.Timeout.Name != "TimeoutError" || !strings.Contains(got.Timeout.Message, "Execution timed out") || got.AfterTimeout != "alive\n" {
		t.Errorf("a cell past timeoutMs: %+v, then %q; want a TimeoutError and the sandbox alive", got.Timeout, got.AfterTimeout)
	}
	if got.Language.Name != "InvalidArgumentError" || !strings.Contains(got.Language.Value, "language") || !strings.Contains(got.Language.Value, "python") {
		t.Errorf("language r: %+v", got.Language)
	}
	if got.Envs.Name != "InvalidArgumentError" || !strings.Contains(got.Envs.Value, "env_vars") {
		t.Errorf("envs: %+v", got.Envs)
	}
	if len(got.Contexts) != 2 || got.Contexts[0] != "default" || !slices.Equal(got.ContextsAfter, []string{"default"}) {
		t.Errorf("contexts: %v, after removing one %v", got.Contexts, got.ContextsAfter)
	}
	if got.InContext != "'in ctx'" || got.DefaultSeesY != "NameError" || got.ContextSeesX != "NameError" {
		t.Errorf("contexts: y in its context %q, from the default %q, x from the context %q; want 'in ctx', NameError, NameError",
			got.InContext, got.DefaultSeesY, got.ContextSeesX)
	}
	if got.AfterRestart != "NameError" || got.DefaultAfterRestart != "5" {
		t.Errorf("after a restart of the context: y there %q, x in the default %q; want NameError and 5 (the default untouched)", got.AfterRestart, got.DefaultAfterRestart)
	}
	if got.RemovedRun.Name != "NotFoundError" {
		t.Errorf("runCode in a removed context: %+v", got.RemovedRun)
	}
	if got.UnknownContext.Name != "NotFoundError" {
		t.Errorf("an unknown context: %+v", got.UnknownContext)
	}
	if got.AfterKill.Name != "TimeoutError" {
		t.Errorf("runCode after kill: %+v; want the SDK's TimeoutError (502: the sandbox is gone)", got.AfterKill)
	}
}
