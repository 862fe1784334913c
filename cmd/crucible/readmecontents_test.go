package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestREADMEContents keeps the README's contents list equal to its
// headings: every "##" and "###" heading outside code blocks but the
// contents' own, in order, "###" indented under its "##", each linked to
// its anchor as GitHub makes it. On a mismatch it prints the list to
// paste.
func TestREADMEContents(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	got, want := readmeContents(string(b)), contentsFromHeadings(string(b))
	if got != want {
		t.Errorf("README.md's contents list is not its headings; the list should read:\n\n%s", want)
	}
}

// TestContentsFromHeadings checks the list built from headings, and that
// a contents list that drifted from them is seen.
func TestContentsFromHeadings(t *testing.T) {
	const doc = "# Title\n\n## Contents\n\n- [One](#one)\n\n## One\n\n```sh\n## not a heading\n```\n\n### Run `crucible run`: fast\n\n## One\n"
	want := "- [One](#one)\n  - [Run `crucible run`: fast](#run-crucible-run-fast)\n- [One](#one-1)\n"
	if got := contentsFromHeadings(doc); got != want {
		t.Errorf("contentsFromHeadings:\n%s\nwant:\n%s", got, want)
	}
	if got := readmeContents(doc); got != "- [One](#one)\n" || got == contentsFromHeadings(doc) {
		t.Errorf("readmeContents = %q: the drifted list must differ from the headings' list", got)
	}
}

// readmeContents returns the list under "## Contents": its lines up to
// the first line that is neither a list item nor blank.
func readmeContents(doc string) string {
	_, after, ok := strings.Cut(doc, "\n## Contents\n")
	if !ok {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.Split(after, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimLeft(l, " "), "- "):
			b.WriteString(l + "\n")
		case strings.TrimSpace(l) == "" && b.Len() == 0:
		default:
			return b.String()
		}
	}
	return b.String()
}

// headingLine finds a "##" or "###" heading.
var headingLine = regexp.MustCompile(`^(##|###) (.+)$`)

// contentsFromHeadings returns the contents list of doc's headings.
func contentsFromHeadings(doc string) string {
	var b strings.Builder
	seen := map[string]int{}
	fence := false
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		m := headingLine.FindStringSubmatch(l)
		if fence || m == nil || m[2] == "Contents" {
			continue
		}
		a := githubAnchor(m[2])
		if n, dup := seen[a]; dup {
			seen[a] = n + 1
			a += "-" + strconv.Itoa(n+1)
		} else {
			seen[a] = 0
		}
		if m[1] == "###" {
			b.WriteString("  ")
		}
		b.WriteString("- [" + m[2] + "](#" + a + ")\n")
	}
	return b.String()
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces
// as hyphens, every character but letters, digits, "_" and "-" dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
