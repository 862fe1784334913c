package image_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/crucible-sandbox/crucible/image"
	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// This test is outside package image because it needs root, and the one
// way to say so, package testenv, imports package image.

// TestRunStepFails: a failing tool is a *ToolError that says the step, the
// exit status and the tool's last lines, and its output still reports
// progress; a debootstrap that points to its log gets the log's end.
func TestRunStepFails(t *testing.T) {
	testenv.Root(t) // runStep gives the tool a private mount namespace
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
			var reports []image.Progress
			err := image.RunStep(context.Background(), io.Discard, func(p image.Progress) { reports = append(reports, p) }, "s", []string{"sh", "-c", tt.script})
			err = image.WithLogTail(err, logFile)
			var te *image.ToolError
			var exit *exec.ExitError
			if !errors.As(err, &te) || !errors.As(err, &exit) {
				t.Fatalf("error %#v, want a *image.ToolError of an *exec.ExitError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tt.want)
			}
			if len(reports) == 0 || reports[0] != (image.Progress{Step: "s"}) {
				t.Errorf("reports %+v, want the step's start first", reports)
			}
		})
	}
}
