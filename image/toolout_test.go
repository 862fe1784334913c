package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestLineWriter(t *testing.T) {
	long := strings.Repeat("x", maxLine+100)
	var many []string
	for i := range tailLines + 3 {
		many = append(many, fmt.Sprint(i))
	}
	tests := []struct {
		name   string
		writes []string
		lines  []string // given to fn, and the tail when it is shorter than tailLines
	}{
		{"lines", []string{"a\nb\n"}, []string{"a", "b"}},
		{"split between writes", []string{"I: Unpa", "cking less...\nE: x"}, []string{"I: Unpacking less...", "E: x"}},
		{"\\r ends a line; empty lines are skipped", []string{"50%\r100%\r\n\n\nok\n"}, []string{"50%", "100%", "ok"}},
		{"a long line is cut", []string{long[:300], long[300:] + "\nnext\n"}, []string{long[:maxLine] + "...", "next"}},
		{"no output", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			w := &lineWriter{fn: func(s string) { got = append(got, s) }}
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			tail := w.close()
			if !reflect.DeepEqual(got, tt.lines) || !reflect.DeepEqual(tail, tt.lines) {
				t.Errorf("lines %q, tail %q, want %q", got, tail, tt.lines)
			}
		})
	}
	t.Run("the tail keeps the last lines", func(t *testing.T) {
		w := &lineWriter{fn: func(string) {}}
		_, _ = io.WriteString(w, strings.Join(many, "\n"))
		if tail := w.close(); !reflect.DeepEqual(tail, many[3:]) {
			t.Errorf("tail %q, want %q", tail, many[3:])
		}
	})
}

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.log")
	content := strings.Repeat(strings.Repeat("y", 99)+"\n", 2*maxLogTail/100) + "dpkg: error processing package x\n"
	if err := os.WriteFile(big, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got := logTail(big)
	if len(got) != tailLines || got[len(got)-1] != "dpkg: error processing package x" {
		t.Errorf("tail of a big log: %q", got)
	}
	if got := logTail(filepath.Join(dir, "missing.log")); got != nil {
		t.Errorf("tail of a missing log: %q", got)
	}
}

// TestRunStepFails: a failing tool is a *ToolError that says the step, the
// exit status and the tool's last lines, and its output still reports
// progress; a debootstrap that points to its log gets the log's end.
func TestRunStepFails(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a private mount namespace needs root")
	}
	dir := t.TempDir()
	logFile := filepath.Join(dir, "debootstrap.log")
	if err := os.WriteFile(logFile, []byte("dpkg: error processing archive libc6.deb (--install):\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		script string
		want   string // the whole error, after withLogTail
	}{
		{"its last lines", `echo "I: Retrieving InRelease "; echo "E: Couldn't find these debs: nosuchpkg" >&2; exit 1`,
			"s failed (exit status 1); its last lines:\n  I: Retrieving InRelease \n  E: Couldn't find these debs: nosuchpkg"},
		{"silent", `exit 3`, "s failed (exit status 3) and printed nothing"},
		{"its log's end", fmt.Sprintf(`echo "W: See %s for details"; exit 1`, logFile),
			"s failed (exit status 1); its last lines:\n  W: See " + logFile + " for details\n  debootstrap.log ends:\n  dpkg: error processing archive libc6.deb (--install):"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var reports []Progress
			err := runStep(context.Background(), io.Discard, func(p Progress) { reports = append(reports, p) }, "s", []string{"sh", "-c", tt.script})
			err = withLogTail(err, logFile)
			var te *ToolError
			var exit *exec.ExitError
			if !errors.As(err, &te) || !errors.As(err, &exit) {
				t.Fatalf("error %#v, want a *ToolError of an *exec.ExitError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tt.want)
			}
			if len(reports) == 0 || reports[0] != (Progress{Step: "s"}) {
				t.Errorf("reports %+v, want the step's start first", reports)
			}
		})
	}
}
