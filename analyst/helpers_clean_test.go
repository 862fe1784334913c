package analyst

import (
	"context"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Proves crucible_clean's options and its errors, run as cells in a real
// session of the data-science image with the helpers defined: each case
// prints a few fields of the summary (or the error) and the cleaned file.
func TestCrucibleCleanOptions(t *testing.T) {
	messy := "id,when,note\n1, 2024-01-05 ,x\n2,05/01/2024,y\n1, 2024-01-05 ,x\n3,soon,z\n"
	a := openAnalysis(t, newRuntime(t), Dataset{Name: "m.csv", Content: []byte(messy)})
	ctx := context.Background()
	if err := a.loadHelpers(ctx); err != nil {
		t.Fatal(err)
	}
	show := "\nprint(s['rows_in'], s['rows_out'], s['duplicates_removed'], sorted(s['changed'].items()), sorted(s['dates']), s['warnings_total'])\nprint(open(s['output']).read(), end='')"
	for _, tc := range []struct {
		name, code, want string
	}{
		{"defaults", "s = crucible_clean('m')" + show,
			"4 3 1 [('when', 3)] ['when'] 1\nid,when,note\n1,2024-01-05,x\n2,2024-05-01,y\n3,soon,z\n"},
		{"day first", "s = crucible_clean('m', dayfirst=True, out='d.csv')" + show,
			"4 3 1 [('when', 3)] ['when'] 1\nid,when,note\n1,2024-01-05,x\n2,2024-01-05,y\n3,soon,z\n"},
		{"no dates, no dedupe", "s = crucible_clean('data/m.csv', dates=None, dedupe=False, out='n.csv')" + show,
			"4 4 0 [('when', 2)] [] 0\nid,when,note\n1,2024-01-05,x\n2,05/01/2024,y\n1,2024-01-05,x\n3,soon,z\n"},
		{"a DataFrame, dates named", "import pandas as pd\ns = crucible_clean(pd.DataFrame({'d': ['2024-02-03', 'bad'], 'k': ['a ', 'a ']}), dates='d', out='f.csv')" + show,
			"2 2 0 [('k', 2)] ['d'] 1\nd,k\n2024-02-03,a\nbad,a\n"},
		{"out under data/", "crucible_clean('m', out='data/x.csv')", "ValueError: out must not be under data/"},
		{"unknown dataset", "crucible_clean('nope')", "ValueError: no dataset 'nope': the DataFrames are m"},
		{"misspelt dataset", "crucible_clean('m.cvs')", "ValueError: no dataset 'm.cvs' (did you mean 'm.csv'?): the DataFrames are m"},
		{"misspelt frame", "crucible_clean('mm')", "ValueError: no dataset 'mm' (did you mean 'm'?): the DataFrames are m"},
		{"unknown date column", "crucible_clean('m', dates=['day'])", "ValueError: no column 'day'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := a.Session.Exec(ctx, sandbox.Cell{Code: tc.code})
			if err != nil {
				t.Fatal(err)
			}
			got := string(res.Stdout)
			if res.Error != nil {
				got = res.Error.Type + ": " + res.Error.Message
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}
