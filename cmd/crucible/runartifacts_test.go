package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestSaveArtifacts checks what the summary of `crucible run` says of the
// artifacts, and what is saved: only content the host has, only in --out;
// names a program chose are shown cut and quoted when they would act on a
// terminal or break the line, and long lists are cut.
func TestSaveArtifacts(t *testing.T) {
	file := func(name string) sandbox.Artifact {
		return sandbox.Artifact{Name: name, MIME: "text/plain", Content: []byte(name)}
	}
	var seven []sandbox.Artifact
	for i := range 7 {
		seven = append(seven, file(fmt.Sprintf("f%d.txt", i)))
	}
	tests := []struct {
		name  string
		arts  []sandbox.Artifact
		out   string // --out under the test's directory; "" for none
		note  string // %s is the test's directory
		saved []string
		err   bool
	}{
		{"none", nil, "out", "", nil, false},
		{"no --out", []sandbox.Artifact{file("a.png"), file("b/c.csv")}, "",
			" · 2 artifacts not saved (a.png, b/c.csv): use --out DIR", nil, false},
		{"one, no --out", []sandbox.Artifact{file("a.png")}, "", " · 1 artifact not saved (a.png): use --out DIR", nil, false},
		{"--out", []sandbox.Artifact{file("a.png"), file("b/c.csv")}, "out",
			" · saved %s/out/a.png, %s/out/b_c.csv", []string{"a.png", "b_c.csv"}, false},
		{"omitted and withheld: never saved",
			[]sandbox.Artifact{{Name: "big.bin", Size: 1 << 30, ContentOmitted: true},
				{Name: "key.der", ContentOmitted: true, Withheld: "it holds a secret"}}, "out",
			" · big.bin not saved: over the artifact limit · key.der not saved: content withheld by redaction", nil, false},
		{"hostile names: quoted, cut", []sandbox.Artifact{file("a\n\x1b[2Kcrucible: ok"), file("\u202egnp.exe"), file(strings.Repeat("x", 100))}, "",
			` · 3 artifacts not saved ("a\n\x1b[2Kcrucible: ok", "\u202egnp.exe", ` + strings.Repeat("x", 60) + "…): use --out DIR", nil, false},
		{"many: the list is cut", seven, "",
			" · 7 artifacts not saved (f0.txt, f1.txt, f2.txt, f3.txt, f4.txt, and 2 more): use --out DIR", nil, false},
		{"--out is a file: not saved, the error said", []sandbox.Artifact{file("a.png")}, "afile",
			" · a.png not saved: mkdir %s/afile: not a directory", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			if err := os.WriteFile(filepath.Join(base, "afile"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			dir := ""
			if tt.out != "" {
				dir = filepath.Join(base, tt.out)
			}
			r := saveArtifacts(tt.arts, dir)
			want := strings.ReplaceAll(tt.note, "%s", base)
			if got := r.note(); got != want {
				t.Errorf("note:\n got %q\nwant %q", got, want)
			}
			if (r.err != nil) != tt.err {
				t.Errorf("err = %v, want an error: %v", r.err, tt.err)
			}
			entries, _ := os.ReadDir(filepath.Join(base, "out"))
			var saved []string
			for _, e := range entries {
				saved = append(saved, e.Name())
				if b, _ := os.ReadFile(filepath.Join(base, "out", e.Name())); len(b) == 0 {
					t.Errorf("%s is empty", e.Name())
				}
			}
			if strings.Join(saved, "|") != strings.Join(tt.saved, "|") {
				t.Errorf("saved %q, want %q", saved, tt.saved)
			}
		})
	}
}
