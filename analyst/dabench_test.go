package analyst

import (
	"os"
	"path/filepath"
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
