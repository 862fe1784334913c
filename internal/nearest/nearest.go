// Package nearest finds, among known names, the ones nearest a name that
// matches none (a misspelt dataset or file), for an error to suggest.
package nearest

import (
	"path"
	"slices"
	"strconv"
	"strings"
)

// Names returns the names of known nearest name, nearest first (then in
// the order known gives), at most limit: those within a few edits of it
// (letters swapped, missing, extra or wrong; case is not counted), or
// equal to it without their extension ("sales" for "sales.csv"). None
// when nothing is near.
func Names(name string, known []string, limit int) []string {
	type near struct {
		name string
		d, i int
	}
	if name == "" {
		return nil
	}
	var found []near
	for i, k := range known {
		if k == name {
			continue
		}
		if d := distance(name, k); d <= maxDistance(name) {
			found = append(found, near{k, d, i})
		}
	}
	slices.SortFunc(found, func(a, b near) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return a.i - b.i
	})
	var out []string
	for _, n := range found {
		if len(out) == limit {
			break
		}
		if !slices.Contains(out, n.name) {
			out = append(out, n.name)
		}
	}
	return out
}

// Suggest returns " (did you mean A, B or C?)" for names, quoted, or ""
// when there are none: the end of an error that named what it did not
// find.
func Suggest(names []string) string {
	if len(names) == 0 {
		return ""
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return " (did you mean " + q[0] + "?)"
	}
	return " (did you mean " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1] + "?)"
}

// maxDistance is how many edits a name may be from a known one: one for a
// short name, a quarter of its length for a longer one.
func maxDistance(name string) int {
	return max(1, len([]rune(name))/4)
}

// distance is the edit distance of a and b, case not counted, or of
// their stems when one has an extension the other lacks.
func distance(a, b string) int {
	a, b = strings.ToLower(a), strings.ToLower(b)
	d := osa([]rune(a), []rune(b))
	if ext := path.Ext(b); ext != "" && path.Ext(a) == "" {
		d = min(d, osa([]rune(a), []rune(strings.TrimSuffix(b, ext))))
	}
	if ext := path.Ext(a); ext != "" && path.Ext(b) == "" {
		d = min(d, osa([]rune(strings.TrimSuffix(a, ext)), []rune(b)))
	}
	return d
}

// osa is the optimal string alignment distance of a and b: the
// insertions, deletions, substitutions and swaps of two neighbours that
// turn one into the other.
func osa(a, b []rune) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
