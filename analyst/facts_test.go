package analyst

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// pandasFacts is a cell that computes, with pandas alone from each
// dataset's raw file, what the profiler counts by itself, and prints
// them as one JSON object by DataFrame name. It reads the file as pandas
// does by default (read_csv; json_normalize of the JSON records, one
// level deep, as the profiler documents), not the loaded DataFrame: a
// loader that misread the file fails the comparison. A column the
// profiler says it turned from text into dates is parsed here too
// (stripped, pd.to_datetime in the first of the formats year-month-day,
// day/month/year and month/day/year that parses the most),
// and dates_match says whether the loaded column equals that parse.
// Then duplicated, isna, nunique, and value_counts().nlargest (the top
// values' order, ties included) for each column the profiler promises
// top values for: 1 to 20 distinct values (profile.py's
// LOW_CARDINALITY), or text. A column holding unhashable values (nested
// JSON) is compared as text, as the profiler counts it. %s is a list of
// [name, path, [date columns]].
const pandasFacts = `
import json as _json, pandas as _pd
def _read(path):
    if path.endswith(".csv"):
        return _pd.read_csv(path)
    with open(path) as f:
        text = f.read()
    records = [_json.loads(l) for l in text.splitlines() if l.strip()] if path.endswith(".jsonl") else _json.loads(text)
    return _pd.json_normalize(records, max_level=1)
def _facts(name, path, dates):
    df = _read(path)
    out = {"columns": []}
    for c in dates:
        text = df[c].str.strip()
        df[c] = min((_pd.to_datetime(text, errors="coerce", format=f) for f in ("%%Y-%%m-%%d", "%%d/%%m/%%Y", "%%m/%%d/%%Y")), key=lambda s: s.isna().sum())
    def hashable(s):
        try:
            _pd.factorize(s)
            return s
        except TypeError:
            return s.astype(str).where(s.notna())
    cols = [hashable(df[c]) for c in df.columns]
    out["duplicate_rows"] = int(_pd.concat(cols, axis=1).duplicated().sum())
    for c, s in zip(df.columns, cols):
        n = int(s.nunique())
        f = {"name": str(c), "missing": int(s.isna().sum()), "distinct": n}
        if 0 < n <= 20 or s.dtype == object and n:
            f["top"] = [{"value": str(v), "count": int(k)} for v, k in s.value_counts(sort=False).nlargest(5).items()]
        if c in dates:
            f["dates_match"] = bool(globals()[name][c].equals(s))
        out["columns"].append(f)
    return out
print(_json.dumps({n: _facts(n, p, d) for n, p, d in %s}))
del _facts, _read
`

// tableFacts is what pandasFacts prints for one DataFrame.
type tableFacts struct {
	DuplicateRows int `json:"duplicate_rows"`
	Columns       []struct {
		Name       string       `json:"name"`
		Missing    int          `json:"missing"`
		Distinct   int          `json:"distinct"`
		Top        []ValueCount `json:"top"`
		DatesMatch *bool        `json:"dates_match"`
	} `json:"columns"`
}

// repeatedRows returns a CSV of n rows and cols columns of integers below
// 300, the second half a copy of the first, and how many rows repeat an
// earlier one: with 12 columns the product of their distinct counts is
// over 2**63.
func repeatedRows(n, cols int) (string, int) {
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	for i := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "c%d", i)
	}
	b.WriteByte('\n')
	rows := make([]string, n)
	seen := map[string]bool{}
	dups := 0
	for i := range rows {
		if i >= n/2 {
			rows[i] = rows[i-n/2]
		} else {
			vals := make([]string, cols)
			for j := range vals {
				vals[j] = fmt.Sprint(r.IntN(300))
			}
			rows[i] = strings.Join(vals, ",")
		}
		if seen[rows[i]] {
			dups++
		}
		seen[rows[i]] = true
		b.WriteString(rows[i] + "\n")
	}
	return b.String(), dups
}

// lines joins n lines made by line(i), each ended by a newline.
func lines(n int, line func(i int) string) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(line(i) + "\n")
	}
	return b.String()
}

// TestProfileFactsMatchPandas profiles awkward tables in a real session
// of the data-science image and checks every fact the profiler counts by
// itself (missing and distinct values, top values and their order,
// duplicate rows, dates parsed from text) against pandas' own functions
// over the raw files, which pandas reads itself in a cell of its own
// (pandasFacts), and fails where the profiler gives no top values that
// it promises. The tables hold ties among top values, missing values in
// repeated rows, -0.0 and 0.0, 1 and 1.0 and True, a key column with one missing value, columns whose distinct
// counts multiply past 2**63, nested JSON (also where the sample does not
// see it), and dates with spaces or day first. A table whose duplicate
// count is known also checks it (-1: pandas only).
func TestProfileFactsMatchPandas(t *testing.T) {
	rt := newRuntime(t)
	overflow, overflowDups := repeatedRows(3000, 12)
	nestedLate := lines(3500, func(i int) string {
		if i == 3000 { // past the first 1,000 values the sample of a short column takes
			return fmt.Sprintf(`{"id": %d, "tags": ["a", "b"]}`, i%50)
		}
		return fmt.Sprintf(`{"id": %d, "tags": "t%d"}`, i%50, i%4)
	})
	nested := "[" + strings.TrimSuffix(lines(300, func(i int) string {
		return fmt.Sprintf(`{"id": %d, "tags": ["a", "%d"], "meta": {"k": %d}},`, i%50, i%3, i%2)
	}), ",\n") + "]"
	mixed := "[" + strings.Repeat(`{"m": 1}, {"m": 1.0}, {"m": true}, {"m": "1"}, {"m": null}, {"m": "x"}, {"m": 2}, {"m": 2}, {"m": "x"}, {"m": false}, {"m": 0}, `, 3) + `{"m": 0}]`
	cases := []struct {
		file    string
		content string
		dups    int
	}{
		{"ties.csv", "k,v\n" + lines(14, func(i int) string { return fmt.Sprintf("%c,%d", "cbacbaddeeffgg"[i], i%3) }), 3},
		{"missing dups.csv", "a,b,c\n1,,x\n1,,x\n,2,\n,2,\n,2,y\n3,3,z\n", 2},
		{"zeros.csv", "f,g\n0.0,1\n-0.0,1.0\n0.0,2\n-0.0,2\n", -1},
		{"one missing key.csv", "a,b\n1,x\n,y\n2,y\n", 0},
		{"two missing.csv", "a,b\n1,x\n,y\n,y\n2,z\n", 1},
		{"overflow.csv", overflow, overflowDups},
		{"nested.json", nested, 150},
		{"nested late.jsonl", nestedLate, 3500 - 101},
		{"mixed.json", mixed, -1},
		{"spaced dates.csv", "when,n\n" + lines(40, func(i int) string { return fmt.Sprintf(" 2024-01-%02d,%d", 1+i%28, i%5) }) + "2024-02-30,9\n", -1},
		{"day first.csv", "d,n\n" + lines(60, func(i int) string { return fmt.Sprintf("%02d/%02d/2023,%d", 1+i%28, 1+i%12, i%2) }), -1},
	}
	var datasets []Dataset
	for _, c := range cases {
		datasets = append(datasets, Dataset{Name: c.file, Content: []byte(c.content)})
	}
	a := openAnalysis(t, rt, datasets...)
	// The cell gets each frame's name and file, and the columns the
	// profiler turned into dates: it parses those itself.
	var frames []any
	for i, f := range a.Frames {
		dates := []string{}
		for _, col := range a.Profile.Tables[i].ColumnProfiles {
			if col.Inferred == "date from text" {
				dates = append(dates, col.Name)
			}
		}
		frames = append(frames, []any{f.Name, f.Path, dates})
	}
	list, err := json.Marshal(frames)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Session.Exec(context.Background(), sandbox.Cell{Code: fmt.Sprintf(pandasFacts, list)})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("the pandas cell: %v %s %+v %s", err, res.Status, res.Error, res.Stderr)
	}
	var want map[string]tableFacts
	if err := json.Unmarshal(res.Stdout, &want); err != nil {
		t.Fatalf("the pandas cell printed %q: %v", res.Stdout, err)
	}
	for i, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			tb, w := a.Profile.Tables[i], want[a.Frames[i].Name]
			if tb.Error != "" || len(tb.ColumnProfiles) != tb.Columns || len(w.Columns) != tb.Columns {
				t.Fatalf("error %q, %d columns, %d profiles, %d from pandas; warnings %q", tb.Error, tb.Columns, len(tb.ColumnProfiles), len(w.Columns), tb.Warnings)
			}
			if tb.DuplicateRows != w.DuplicateRows || c.dups >= 0 && tb.DuplicateRows != c.dups {
				t.Errorf("%d duplicate rows; pandas counts %d, the test %d", tb.DuplicateRows, w.DuplicateRows, c.dups)
			}
			for j, col := range tb.ColumnProfiles {
				wc := w.Columns[j]
				if col.Name != wc.Name || col.Missing != wc.Missing || col.Distinct != wc.Distinct {
					t.Errorf("column %q: %d missing, %d distinct; pandas, from the file, column %q: %d, %d", col.Name, col.Missing, col.Distinct, wc.Name, wc.Missing, wc.Distinct)
				}
				if (len(col.Top) > 0 || len(wc.Top) > 0) && !reflect.DeepEqual(col.Top, wc.Top) {
					t.Errorf("column %q: top %v; pandas, from the file, %v", col.Name, col.Top, wc.Top)
				}
				if col.Inferred == "date from text" && (wc.DatesMatch == nil || !*wc.DatesMatch) {
					t.Errorf("column %q: the dates are not pd.to_datetime of the text", col.Name)
				}
			}
		})
	}
}
