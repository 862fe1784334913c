package service_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// echoHinter's hint repeats what it was given: the language, the network
// policy and the error's message.
type echoHinter struct{}

func (echoHinter) Hint(l sandbox.Language, network string, _ sandbox.Limits, e *sandbox.ExecError) string {
	return "hint for " + string(l) + "/" + network + ": " + e.Message
}

// TestHintsOnEveryPath: runs (waited for, streamed) and session cells,
// of the API and of an agent, carry the hint of their error, in the answer
// and in the record, made from the redacted error; without a Hinter, the
// runtime's own hint (leakyRuntime's) is kept, redacted.
func TestHintsOnEveryPath(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	red, err := policy.NewRedactor(policy.RedactConfig{Secrets: []string{leakedSecret}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(service.Config{Runtime: leakyRuntime{}, Store: st, Redactor: red, Hints: echoHinter{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Shutdown(ctx)
	// A run's network policy is passed as sandbox.Network.String gives it
	// ("none" by default); a session has none.
	const runHint, cellHint = "hint for python/none: [REDACTED:secret]", "hint for python/none: [REDACTED:secret]"
	req := py("x")
	paths := []struct {
		name string
		want string
		run  func(t *testing.T) sandbox.Result
	}{
		{"run", runHint, func(t *testing.T) sandbox.Result {
			resp, err := svc.Run(ctx, "t", req, service.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return resp.Result
		}},
		{"streamed run", runHint, func(t *testing.T) sandbox.Result {
			var res sandbox.Result
			err := svc.Stream(ctx, "t", req, service.RunOptions{}, func(e service.Event) bool {
				if e.Kind == service.EventResult {
					res = e.Result.Result
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}},
		{"session cell", cellHint, func(t *testing.T) sandbox.Result {
			ss, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{Language: sandbox.Python}, service.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return execCell(t, ss)
		}},
		{"agent cell", cellHint, func(t *testing.T) sandbox.Result {
			ss, err := svc.SessionRuntime("t", "agent_1").NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
			if err != nil {
				t.Fatal(err)
			}
			return execCell(t, ss)
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			res := p.run(t)
			if res.Error == nil || res.Error.Hint != p.want {
				t.Errorf("error %+v, want the hint %q", res.Error, p.want)
			}
		})
	}
	runs, _, err := svc.List(ctx, "t", store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 4 {
		t.Fatalf("%d records, want 4", len(runs))
	}
	for _, r := range runs {
		if r.Error == nil || !strings.HasPrefix(r.Error.Hint, "hint for python/") || strings.Contains(r.Error.Hint, leakedSecret) {
			t.Errorf("record %s: error %+v, want a hint made from the redacted error", r.ID, r.Error)
		}
	}

	plain, err := service.New(service.Config{Runtime: leakyRuntime{}, Redactor: red, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Shutdown(ctx)
	resp, err := plain.Run(ctx, "t", req, service.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "hint [REDACTED:secret]"; resp.Error == nil || resp.Error.Hint != want {
		t.Errorf("without a Hinter: error %+v, want the runtime's own hint, redacted: %q", resp.Error, want)
	}
}

// execCell runs a cell in ss.
func execCell(t *testing.T, ss sandbox.Session) sandbox.Result {
	t.Helper()
	res, err := ss.Exec(context.Background(), sandbox.Cell{Code: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
