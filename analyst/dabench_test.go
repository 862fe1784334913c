package analyst

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestDabenchTablesProfile opens one analysis holding every table of the
// dabench data set, in a real session of the data-science image: each
// must load and profile without error, with rows, columns and a profile
// per column.
func TestDabenchTablesProfile(t *testing.T) {
	dir := testenv.Dataset(t, "dabench/tables")
	paths, err := filepath.Glob(filepath.Join(dir, "*.csv"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no tables in %s (%v)", dir, err)
	}
	var datasets []Dataset
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		datasets = append(datasets, Dataset{Name: filepath.Base(p), Content: b})
	}
	a := openAnalysis(t, newRuntime(t), datasets...)
	for _, tb := range a.Profile.Tables {
		t.Run(tb.Dataset, func(t *testing.T) {
			if tb.Error != "" || tb.Rows == 0 || tb.Columns == 0 || len(tb.ColumnProfiles) != tb.Columns {
				t.Errorf("table %s: error %q, %d rows, %d columns, %d column profiles", tb.Name, tb.Error, tb.Rows, tb.Columns, len(tb.ColumnProfiles))
			}
			t.Logf("%s: %s, %dx%d, warnings %q", tb.Name, tb.Format, tb.Rows, tb.Columns, tb.Warnings)
		})
	}
}

// TestDabenchDateColumns profiles DABench's two tables with dates written
// as text, in a real session of the data-science image: the JPL Horizons
// export's "Calendar Date (TDB)" (" A.D. 1999-Feb-05 00:58:29.0000") and
// the weather's ISO times with a zone. Each is a date column from its
// first date, and crucible_clean parses every value of it to the same
// instant as the profile (its cleaned file read back equals the loaded
// column).
func TestDabenchDateColumns(t *testing.T) {
	dir := testenv.Dataset(t, "dabench/tables")
	var datasets []Dataset
	for _, name := range []string{"DES=+2006261.csv", "weather_train.csv"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		datasets = append(datasets, Dataset{Name: name, Content: b})
	}
	a := openAnalysis(t, newRuntime(t), datasets...)
	if err := a.loadHelpers(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		column, dtype, min string
	}{
		{"Calendar Date (TDB)", "datetime64[ns]", "1999-02-05 00:58:29"},
		{"time", "datetime64[ns, UTC]", "2017-01-01 00:00:00+00:00"},
	} {
		tb := a.Profile.Tables[i]
		t.Run(tb.Dataset, func(t *testing.T) {
			c := column(t, tb, tc.column)
			if c.DType != tc.dtype || c.Inferred != "date from text" || c.Summary == nil || c.Summary.MinText != tc.min || len(c.Warnings) > 0 {
				t.Errorf("%s: dtype %s, inferred %q, summary %+v, warnings %q; want %s from %s", tc.column, c.DType, c.Inferred, c.Summary, c.Warnings, tc.dtype, tc.min)
			}
			var got struct {
				Dates DateParse `json:"dates"`
				Same  bool      `json:"same"`
			}
			cellJSON(t, a, fmt.Sprintf(`import json, pandas as pd
s = crucible_clean(%[1]q, out="clean.csv", dedupe=False)
back = pd.to_datetime(pd.read_csv("clean.csv")[%[2]q], utc=%[3]v)
print(json.dumps({"dates": s["dates"][%[2]q], "same": bool(back.equals(%[1]s[%[2]q]))}))`, tb.Name, tc.column, map[bool]string{true: "True", false: "False"}[strings.Contains(tc.dtype, "UTC")]), &got)
			if got.Dates.Parsed != tb.Rows || got.Dates.Failed != 0 || !got.Same {
				t.Errorf("crucible_clean: %+v, the same dates as the profile: %v; want %d parsed", got.Dates, got.Same, tb.Rows)
			}
		})
	}
}
