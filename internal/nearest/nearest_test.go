package nearest

import (
	"slices"
	"testing"
)

func TestNames(t *testing.T) {
	known := []string{"sales.csv", "salaries.csv", "titanic.csv", "Insurance.xlsx", "a.csv", "b.csv"}
	tests := []struct {
		name string
		want []string
	}{
		{"salse.csv", []string{"sales.csv"}},           // two letters swapped
		{"sales.cvs", []string{"sales.csv"}},           // in the extension
		{"SALES.CSV", []string{"sales.csv"}},           // case
		{"titanic", []string{"titanic.csv"}},           // no extension
		{"insurance.xlsx", []string{"Insurance.xlsx"}}, // case
		{"c.csv", []string{"a.csv", "b.csv"}},          // as near: in the order known
		{"weather.csv", nil},                           // nothing near
		{"sale.csv", []string{"sales.csv"}},            // a letter missing
		{"sales.csv", nil},                             // itself is not suggested, salaries.csv is too far
		{"", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Names(tt.name, known, 3); !slices.Equal(got, tt.want) {
				t.Errorf("Names(%q) = %q, want %q", tt.name, got, tt.want)
			}
		})
	}
	if got := Names("x.csv", []string{"a.csv", "b.csv", "c.csv", "d.csv"}, 2); len(got) != 2 {
		t.Errorf("limit 2: got %q", got)
	}
}

func TestSuggest(t *testing.T) {
	for _, tt := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"a.csv"}, ` (did you mean "a.csv"?)`},
		{[]string{"a.csv", "b.csv"}, ` (did you mean "a.csv" or "b.csv"?)`},
		{[]string{"a", "b", "c"}, ` (did you mean "a", "b" or "c"?)`},
	} {
		if got := Suggest(tt.names); got != tt.want {
			t.Errorf("Suggest(%q) = %q, want %q", tt.names, got, tt.want)
		}
	}
}
