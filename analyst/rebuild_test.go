package analyst

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestRebuild replays cells into a new analysis's session: the helpers
// are defined first (a cell may use them), the cells run in order (a
// later one uses an earlier one's variable), the answers become the
// conversation the model is reminded of; a cell that fails stops the
// rebuild with an error naming it, the cells after it not run.
func TestRebuild(t *testing.T) {
	rt := newRuntime(t)
	data := []Dataset{{Name: "small.csv", Content: []byte("a,b\n1,2\n3,4\n5,6\n")}}
	earlier := []*Answer{{Question: "Keep a above 1.", Status: agent.StatusAnswered, Text: "2 rows.", Code: "big = df[df.a > 1]"}}
	tests := []struct {
		name    string
		cells   []string
		wantErr *RebuildError // nil: rebuilt
		check   string        // run after a rebuild; must print "ok"
	}{
		{"state rebuilt", []string{"big = df[df.a > 1]", "n = len(big)", "cleaned = callable(crucible_clean)"},
			nil, "print('ok' if n == 2 and cleaned else (n, cleaned))"},
		{"no cells", nil, nil, "print('ok' if callable(show_table) and len(df) == 3 else 'no')"},
		{"a cell fails", []string{"x = 1", "y = undefined_name", "z = 3"},
			&RebuildError{Cell: 2, Cells: 3, Status: sandbox.StatusError, Reason: "NameError: name 'undefined_name' is not defined"},
			"print('ok' if 'x' in globals() and 'z' not in globals() else 'no')"},
		{"a cell times out", []string{"import time\ntime.sleep(600)"},
			&RebuildError{Cell: 1, Cells: 1, Status: sandbox.StatusTimeout}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			limits := sandbox.Limits{}
			if tc.wantErr != nil && tc.wantErr.Status == sandbox.StatusTimeout {
				limits.WallTimeMS = 3000
			}
			a, err := Open(ctx, rt, sandbox.SessionRequest{Limits: limits}, data)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { _ = a.Close() })
			err = a.Rebuild(ctx, tc.cells, earlier)
			var re *RebuildError
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Rebuild: %v", err)
			case tc.wantErr != nil && !errors.As(err, &re):
				t.Fatalf("Rebuild: %v; want a *RebuildError", err)
			case tc.wantErr != nil:
				if re.Cell != tc.wantErr.Cell || re.Cells != tc.wantErr.Cells || re.Status != tc.wantErr.Status || !strings.Contains(re.Reason, tc.wantErr.Reason) {
					t.Errorf("Rebuild: %+v; want %+v", *re, *tc.wantErr)
				}
				if len(a.Conversation()) != 0 {
					t.Errorf("a failed rebuild remembered the conversation")
				}
			default:
				if conv := a.Conversation(); len(conv) != 1 || conv[0].Question != earlier[0].Question {
					t.Errorf("the conversation after the rebuild: %v; want the earlier answer", conv)
				}
				if h := a.history(); len(h) != 2 || !strings.Contains(h[1].Content, "big = df[df.a > 1]") {
					t.Errorf("the model's history after the rebuild: %v; want the earlier question and its code", h)
				}
			}
			if tc.check == "" {
				return
			}
			res, err := a.Session.Exec(ctx, sandbox.Cell{Code: tc.check})
			if err != nil || strings.TrimSpace(string(res.Stdout)) != "ok" {
				t.Errorf("after the rebuild %q printed %q (%s, %v); want ok", tc.check, res.Stdout, res.Status, err)
			}
		})
	}
}
