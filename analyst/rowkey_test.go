package analyst

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// rowKeyCell loads profile.py as a module in a session (moduleCode) and prints, for
// each case of %s (a list of [rows, [[codes, distinct], ...]]), the
// duplicate rows RowKey counts when those columns fold into it. A column
// here is what RowKey reads of a Factorized: its codes (-1 for missing),
// its distinct count, its missing count.
const rowKeyCell = `import json
import numpy as np
def _load():
%s
    return m
m = _load()
class Column:
    def __init__(self, codes, distinct):
        self.codes = np.array(codes, dtype=np.int64)
        self.uniques, self.missing = range(distinct), int((self.codes < 0).sum())
out = []
for rows, columns in %s:
    key = m.RowKey(rows)
    for codes, distinct in columns:
        key.fold(Column(codes, distinct))
    out.append(key.duplicates())
print(json.dumps(out))
`

// TestRowKeyCountsExactly runs RowKey, the profiler's key of duplicate
// rows, in a real session of the data-science image, over columns whose
// distinct counts are given: two columns of 2**40 distinct values each
// overflow int64, and their codes are chosen so that the folded keys of
// two different rows would wrap to the same int64 unless the key is
// renumbered before the overflow.
func TestRowKeyCountsExactly(t *testing.T) {
	type column struct {
		codes    []int64
		distinct int64
	}
	const big, shift = 1 << 40, 1 << 24
	cases := []struct {
		name    string
		rows    int
		columns []column
		want    int
	}{
		{"wrapping keys of different rows", 3, []column{{[]int64{5, 5 + shift, 5}, big}, {[]int64{shift + 7, 7, shift + 7}, big}}, 1},
		{"all equal", 3, []column{{[]int64{0, 0, 0}, 1}, {[]int64{0, 0, 0}, 1}}, 2},
		{"missing is not a value", 2, []column{{[]int64{-1, 0}, 1}, {[]int64{0, -1}, 1}}, 0},
		{"missing equals missing", 3, []column{{[]int64{-1, -1, 0}, 1}, {[]int64{1, 1, 0}, 2}}, 1},
		{"a key column with one missing value", 3, []column{{[]int64{0, 0, 0}, 1}, {[]int64{0, -1, 1}, 2}}, 0},
		{"no rows", 0, []column{{[]int64{}, 0}}, 0},
	}
	var in []any
	for _, c := range cases {
		var cols []any
		for _, col := range c.columns {
			cols = append(cols, []any{col.codes, col.distinct})
		}
		in = append(in, []any{c.rows, cols})
	}
	src, err := moduleCode("crucible_profile", profilerSource)
	if err != nil {
		t.Fatal(err)
	}
	list, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	rt := newRuntime(t)
	ctx := context.Background()
	s, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Exec(ctx, sandbox.Cell{Code: fmt.Sprintf(rowKeyCell, src, list)})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("cell: %v %s %+v %s", err, res.Status, res.Error, res.Stderr)
	}
	var got []int
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(res.Stdout))), &got); err != nil || len(got) != len(cases) {
		t.Fatalf("the cell printed %q (%v)", res.Stdout, err)
	}
	for i, c := range cases {
		if got[i] != c.want {
			t.Errorf("%s: %d duplicate rows, want %d", c.name, got[i], c.want)
		}
	}
}
