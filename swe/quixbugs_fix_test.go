package swe_test

// The right fix of a QuixBugs program, as the scripted fixer submits it:
// computed from the data set's correct program, never written down here.
// The buggy and correct files differ in their code by a line or two and
// in a trailing docstring (the correct ones hold alternative versions in
// it), so the code is compared, not the files.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// strReplace is one edit: old, which occurs exactly once in the file,
// becomes new.
type strReplace struct{ Old, New string }

// codeLines are a program's lines before its trailing docstring (the
// first line starting with `"""`), without the blank lines at either end;
// first is the index of the first kept line in the file.
func codeLines(src string) (lines []string, first int) {
	all := strings.Split(src, "\n")
	end := len(all)
	for i, l := range all {
		if strings.HasPrefix(l, `"""`) {
			end = i
			break
		}
	}
	for first < end && strings.TrimSpace(all[first]) == "" {
		first++
	}
	for end > first && strings.TrimSpace(all[end-1]) == "" {
		end--
	}
	return all[first:end], first
}

// hunk is a run of differing lines: a[A0:A1] became b[B0:B1].
type hunk struct{ A0, A1, B0, B1 int }

// lineHunks is the line diff of a and b (a longest common subsequence),
// as hunks in order.
func lineHunks(a, b []string) []hunk {
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var hs []hunk
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if i < len(a) && j < len(b) && a[i] == b[j] {
			i, j = i+1, j+1
			continue
		}
		h := hunk{A0: i, B0: j}
		for (i < len(a) || j < len(b)) && !(i < len(a) && j < len(b) && a[i] == b[j]) {
			if j == len(b) || (i < len(a) && lcs[i+1][j] >= lcs[i][j+1]) {
				i++
			} else {
				j++
			}
		}
		h.A1, h.B1 = i, j
		hs = append(hs, h)
	}
	return hs
}

// uniqueEdit makes the edit of hunk h of the file whose lines are all (the
// hunk's indexes are within lines[first:]): the hunk's lines, widened by
// the lines around them until they occur once in the file (an inserted
// line needs at least one).
func uniqueEdit(file string, all []string, first int, h hunk, b []string) (strReplace, error) {
	lo, hi := first+h.A0, first+h.A1 // in all
	for {
		if hi > lo {
			old := strings.Join(all[lo:hi], "\n")
			if strings.Count(file, old) == 1 {
				repl := slices.Concat(all[lo:first+h.A0], b[h.B0:h.B1], all[first+h.A1:hi])
				return strReplace{Old: old, New: strings.Join(repl, "\n")}, nil
			}
		}
		switch {
		case lo > 0:
			lo--
		case hi < len(all):
			hi++
		default:
			return strReplace{}, fmt.Errorf("no unique context for lines %d-%d", first+h.A0+1, first+h.A1)
		}
	}
}

// quixBugsFix is the right fix of program name in the QuixBugs folder
// dir: one edit per differing hunk of code between the buggy and the
// correct program, in order.
func quixBugsFix(dir, name string) ([]strReplace, error) {
	buggy, err := os.ReadFile(filepath.Join(dir, "python_programs", name+".py"))
	if err != nil {
		return nil, err
	}
	correct, err := os.ReadFile(filepath.Join(dir, "correct_python_programs", name+".py"))
	if err != nil {
		return nil, err
	}
	a, first := codeLines(string(buggy))
	b, _ := codeLines(string(correct))
	hs := lineHunks(a, b)
	if len(hs) == 0 {
		return nil, fmt.Errorf("%s: the buggy and correct code are the same", name)
	}
	all := strings.Split(string(buggy), "\n")
	var edits []strReplace
	for _, h := range hs {
		e, err := uniqueEdit(string(buggy), all, first, h, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		edits = append(edits, e)
	}
	return edits, nil
}

// applyEdits applies edits to src as the edit tool would, each old
// string exactly once.
func applyEdits(src string, edits []strReplace) (string, error) {
	for _, e := range edits {
		if n := strings.Count(src, e.Old); n != 1 {
			return "", fmt.Errorf("%q occurs %d times", e.Old, n)
		}
		src = strings.Replace(src, e.Old, e.New, 1)
	}
	return src, nil
}

func TestLineHunks(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []string
		want []hunk
	}{
		{"same", []string{"x", "y"}, []string{"x", "y"}, nil},
		{"one line changed", []string{"a", "b", "c"}, []string{"a", "B", "c"}, []hunk{{1, 2, 1, 2}}},
		{"a line inserted", []string{"a", "c"}, []string{"a", "b", "c"}, []hunk{{1, 1, 1, 2}}},
		{"a line deleted", []string{"a", "b", "c"}, []string{"a", "c"}, []hunk{{1, 2, 1, 1}}},
		{"two hunks", []string{"a", "b", "c", "d"}, []string{"A", "b", "c", "D"}, []hunk{{0, 1, 0, 1}, {3, 4, 3, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lineHunks(tc.a, tc.b); !slices.Equal(got, tc.want) {
				t.Errorf("lineHunks = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUniqueEdit(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		b          []string
		h          hunk
		want       strReplace
	}{
		{"unique line", "def f():\n    return 1\n", []string{"def f():", "    return 2"}, hunk{1, 2, 1, 2},
			strReplace{"    return 1", "    return 2"}},
		{"repeated line takes the line before", "def f():\n    return []\ndef g():\n    return []\n",
			[]string{"def f():", "    return []", "def g():", "    return [1]"}, hunk{3, 4, 3, 4},
			strReplace{"def g():\n    return []", "def g():\n    return [1]"}},
		{"insertion after a line", "a\nc\n", []string{"a", "b", "c"}, hunk{1, 1, 1, 2}, strReplace{"a", "a\nb"}},
		{"insertion at the top", "a\nc\n", []string{"z", "a", "c"}, hunk{0, 0, 0, 1}, strReplace{"a", "z\na"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := strings.Split(tc.file, "\n")
			got, err := uniqueEdit(tc.file, all, 0, tc.h, tc.b)
			if err != nil || got != tc.want {
				t.Errorf("uniqueEdit = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestQuixBugsFixes checks the fixer's fixes: each makes the buggy
// program's code the correct program's.
func TestQuixBugsFixes(t *testing.T) {
	dir := quixBugsDir(t)
	for _, name := range quixBugsNames(t, dir) {
		edits, err := quixBugsFix(dir, name)
		if err != nil {
			t.Fatal(err)
		}
		buggy, _ := os.ReadFile(filepath.Join(dir, "python_programs", name+".py"))
		correct, _ := os.ReadFile(filepath.Join(dir, "correct_python_programs", name+".py"))
		fixed, err := applyEdits(string(buggy), edits)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, _ := codeLines(fixed)
		want, _ := codeLines(string(correct))
		if !slices.Equal(got, want) {
			t.Errorf("%s: the fixed code differs from the correct one:\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if len(edits) > 2 {
			t.Errorf("%s: %d edits; QuixBugs' fixes are one line (two hunks at most)", name, len(edits))
		}
	}
}
