package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/agent"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestPrintTraceUnsavedArtifacts checks that `crucible agent` names the
// artifacts it cannot save (over the artifact limit, withheld) instead of
// leaving them out without a word, and saves only the others.
func TestPrintTraceUnsavedArtifacts(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	trace := &agent.Trace{ID: "trace-1", Status: agent.StatusAnswered, Answer: "done",
		Artifacts: []sandbox.Artifact{
			{Name: "chart.png", MIME: "image/png", Content: []byte("png")},
			{Name: "big.bin", Size: 1 << 30, ContentOmitted: true},
			{Name: "key.der", ContentOmitted: true, Withheld: "it holds a secret"},
		}}
	var screen bytes.Buffer
	printTrace(newDisplayOn(&screen, &screen, false, false, false, true), trace, out)
	got := screen.String()
	for _, want := range []string{"artifact: " + filepath.Join(out, "chart.png"), "big.bin not saved: over the artifact limit", "key.der not saved: content withheld by redaction"} {
		if !strings.Contains(got, want) {
			t.Errorf("screen lacks %q: %q", want, got)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("%d files in --out, want chart.png alone", len(entries))
	}
}
