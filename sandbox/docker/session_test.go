//go:build crucible_docker

package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestSessionCells runs a session of several cells through each runtime:
// variables persist from one cell to the next, the last expression is the
// value, output is the cell's own, an exception is the cell's error, files
// written by a cell are read back by the host and the other way round.
func TestSessionCells(t *testing.T) {
	for _, r := range runtimes {
		t.Run(r.name, func(t *testing.T) {
			rt := newRuntime(t, r.oci)
			defer rt.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			start := time.Now()
			ses, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python,
				Files: []sandbox.File{{Name: "in/data.txt", Content: sandbox.Data("given")}}})
			if err != nil {
				t.Fatalf("NewSession: %v", err)
			}
			defer ses.Close()
			t.Logf("session started in %s", time.Since(start).Round(time.Millisecond))
			for _, tc := range []struct {
				code, value, stdout string
				status              sandbox.Status
			}{
				{"x = 41\nprint('set')", "", "set\n", sandbox.StatusOK},
				{"x + 1", "42", "", sandbox.StatusOK},
				{"import sys\nprint('out'); print('err', file=sys.stderr)\nopen('made.txt', 'w').write('by the cell')\nopen('in/data.txt').read()", "'given'", "out\n", sandbox.StatusOK},
				{"y = 1\nraise ValueError('bad')", "", "", sandbox.StatusError},
				{"x, y", "(41, 1)", "", sandbox.StatusOK},
			} {
				start := time.Now()
				res, err := ses.Exec(ctx, sandbox.Cell{Code: tc.code})
				t.Logf("cell %q in %s: %s value %q stdout %q stderr %q reason %q", tc.code, time.Since(start).Round(time.Millisecond), res.Status, res.Value, res.Stdout, res.Stderr, res.Reason)
				if err != nil {
					t.Fatalf("Exec: %v", err)
				}
				if res.Status != tc.status || res.Value != tc.value || string(res.Stdout) != tc.stdout {
					t.Errorf("cell %q: status %s value %q stdout %q, want %s %q %q", tc.code, res.Status, res.Value, res.Stdout, tc.status, tc.value, tc.stdout)
				}
				if tc.status == sandbox.StatusError && (res.Error == nil || res.Error.Type != "ValueError" || res.Error.Line != 2) {
					t.Errorf("error %+v, want ValueError at line 2", res.Error)
				}
			}
			got, err := ses.ReadFile(ctx, "made.txt")
			if err != nil || string(got) != "by the cell" {
				t.Errorf("ReadFile(made.txt) = %q, %v", got, err)
			}
			if err := ses.WriteFile(ctx, "sub/host.txt", []byte("from the host")); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			res, err := ses.Exec(ctx, sandbox.Cell{Code: "import os\nopen('sub/host.txt').read(), os.stat('sub').st_uid == os.getuid()"})
			if err != nil || res.Value != "('from the host', True)" {
				t.Errorf("the cell reads the host's file: %v %s %q", err, res.Status, res.Value)
			}
			files, err := ses.ListFiles(ctx)
			if err != nil {
				t.Fatalf("ListFiles: %v", err)
			}
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
			}
			if strings.Join(names, " ") != "in in/data.txt made.txt sub sub/host.txt" {
				t.Errorf("ListFiles: %v", names)
			}
		})
	}
}
