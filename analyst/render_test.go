package analyst

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// wideProfile is a profile of one table of n columns, every column with
// statistics, top values and a warning, and a second, small table.
func wideProfile(n int) *Profile {
	f := func(v float64) *float64 { return &v }
	wide := Table{Name: "wide", Dataset: "wide.csv", Format: "csv", Rows: 1000, Columns: n, Reading: map[string]string{"delimiter": ","}}
	row := make([]string, n)
	for i := range n {
		c := Column{Name: fmt.Sprintf("measurement_%03d", i), DType: "float64", Distinct: 900, Missing: 3,
			Summary: &Summary{Mean: f(1.5), Std: f(0.25), Min: f(0), P25: f(1), Median: f(1.5), P75: f(2), Max: f(3)}}
		if i%2 == 1 {
			c.DType, c.Summary, c.Top = "object", nil, []ValueCount{{"alpha", 500}, {"beta", 300}}
			c.Warnings = []string{"leading or trailing spaces in 4 values"}
		}
		wide.ColumnProfiles = append(wide.ColumnProfiles, c)
		row[i] = "1.5"
	}
	wide.Sample = [][]string{row, row}
	small := Table{Name: "small", Dataset: "small.csv", Format: "csv", Rows: 2, Columns: 1,
		ColumnProfiles: []Column{{Name: "x", DType: "int64", Distinct: 2}}, Sample: [][]string{{"1"}, {"2"}}}
	return &Profile{Tables: []Table{wide, small}}
}

// TestForModelBudget: a 500-column table fits every budget, says how many
// columns it left out and of which dtypes, and keeps the other table.
func TestForModelBudget(t *testing.T) {
	p := wideProfile(500)
	for _, tc := range []struct {
		budget      int
		wantColumns bool // the whole of the wide table's columns
	}{
		{2_000, false},
		{DefaultModelBudget, false},
		{0, false}, // DefaultModelBudget
		{1_000_000, true},
	} {
		t.Run(fmt.Sprint(tc.budget), func(t *testing.T) {
			out := p.ForModel(tc.budget)
			limit := tc.budget
			if limit == 0 {
				limit = DefaultModelBudget
			}
			if n := utf8.RuneCountInString(out); n > limit {
				t.Errorf("%d characters, over the budget of %d", n, limit)
			}
			for _, want := range []string{"DataFrame wide from wide.csv", "DataFrame small from small.csv", `"x": int64`} {
				if !strings.Contains(out, want) {
					t.Errorf("lacks %q:\n%s", want, out)
				}
			}
			cut := strings.Contains(out, "more columns not shown (")
			if cut == tc.wantColumns || strings.Contains(out, `"measurement_499"`) != tc.wantColumns {
				t.Errorf("columns left out: %v, want %v:\n%s", cut, !tc.wantColumns, out)
			}
			if cut && !strings.Contains(out, "float64") {
				t.Errorf("the note on the columns left out names no dtypes:\n%s", out)
			}
		})
	}
}

// TestForModelTinyBudget: a budget too small for the headers is cut and
// says so.
func TestForModelTinyBudget(t *testing.T) {
	out := wideProfile(500).ForModel(100)
	if utf8.RuneCountInString(out) > 100 || !strings.HasSuffix(out, "[profile cut to fit its budget]") {
		t.Errorf("%d characters: %q", utf8.RuneCountInString(out), out)
	}
}

// TestTextIsWhole: the user's rendering holds every column and warning.
func TestTextIsWhole(t *testing.T) {
	text := wideProfile(500).Text()
	if strings.Count(text, `"measurement_`) != 500+0 || strings.Count(text, "warning: leading") != 250 || strings.Contains(text, "not shown") {
		t.Errorf("the text does not hold every column once and every warning")
	}
}
