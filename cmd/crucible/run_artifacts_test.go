package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// makesArtifacts is a program that creates two files in its working
// directory, one in a subdirectory, and one file of holes over the
// artifact limit (16 MiB), whose content the Result does not hold.
const makesArtifacts = `import os
open("chart.png", "wb").write(b"\x89PNG fake")
os.mkdir("data")
open("data/table.csv", "w").write("a,b\n1,2\n")
with open("holes.bin", "wb") as f: f.truncate(32 << 20)
`

// TestRunArtifacts checks what `crucible run` does with the files a program
// creates: without --out it saves nothing and creates nothing, and the
// summary says what was left and how to save it; with --out it saves them
// under cleaned names and the summary lists them; a file over the artifact
// limit is mentioned, never saved.
func TestRunArtifacts(t *testing.T) {
	testenv.Root(t)
	tests := []struct {
		name    string
		out     string // --out, relative to the working directory; "" for none
		files   []string
		summary []string // each must appear in the summary line
	}{
		{"no --out: mentioned, nothing written", "", nil,
			[]string{"2 artifacts not saved (chart.png, data/table.csv): use --out DIR", "holes.bin not saved: over the artifact limit"}},
		{"--out: saved and listed", "out", []string{"chart.png", "data_table.csv"},
			[]string{"saved out/chart.png, out/data_table.csv", "holes.bin not saved: over the artifact limit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"run", "-c", makesArtifacts}
			if tt.out != "" {
				args = append(args, "--out", tt.out)
			}
			stdout, stderr, code := cli{dir: dir}.run(t, args...)
			if code != 0 || stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 0, no output", code, stdout, stderr)
			}
			summary := strings.TrimSuffix(stderr, "\n")
			if strings.Contains(summary, "\n") || !strings.HasPrefix(summary, "crucible: ok (exit 0)") {
				t.Errorf("stderr %q, want the summary line alone", stderr)
			}
			for _, want := range tt.summary {
				if !strings.Contains(summary, want) {
					t.Errorf("summary %q lacks %q", summary, want)
				}
			}
			var files []string
			err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(filepath.Join(dir, tt.out), p)
					files = append(files, rel)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(files, tt.files) {
				t.Errorf("files written: %q, want %q", files, tt.files)
			}
			if tt.out == "" {
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Errorf("the working directory holds %d entries, want none", len(entries))
				}
			}
			if tt.out != "" {
				if b, _ := os.ReadFile(filepath.Join(dir, tt.out, "chart.png")); string(b) != "\x89PNG fake" {
					t.Errorf("out/chart.png holds %q", b)
				}
			}
		})
	}
}
