package analyst

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// workbook makes a two-sheet .xlsx with openpyxl in a session of the
// data-science image and returns its bytes.
func workbook(t *testing.T, rt sandbox.SessionRuntime) []byte {
	t.Helper()
	ctx := context.Background()
	s, err := rt.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Exec(ctx, sandbox.Cell{Code: `import openpyxl
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "Sales"
for row in [("region", "amount"), ("north", 10), ("south", 20), ("east", 5)]:
    ws.append(row)
ws2 = wb.create_sheet("Costs 2024")
for row in [("item", "cost"), ("rent", 100.5), ("power", 20.25)]:
    ws2.append(row)
wb.save("two.xlsx")`})
	if err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("make the workbook: %v %s %s", err, res.Status, res.Stderr)
	}
	b, err := s.ReadFile(ctx, "two.xlsx")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func column(t *testing.T, tb Table, name string) Column {
	t.Helper()
	for _, c := range tb.ColumnProfiles {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("table %s has no column %q: %+v", tb.Name, name, tb.ColumnProfiles)
	return Column{}
}

func hasWarning(ws []string, part string) bool {
	for _, w := range ws {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

// TestAwkwardFiles loads a table of small hostile and awkward files into
// one analysis, in a real session of the data-science image, and checks
// each one's profile: what was sniffed, the dtypes after inference, the
// warnings, and the reason given for a file that cannot be read.
func TestAwkwardFiles(t *testing.T) {
	rt := newRuntime(t)
	wide := strings.Repeat("c,", 499) + "c\n" + strings.Repeat("1,", 499) + "1\n"
	cases := []struct {
		file    string
		content string
		check   func(t *testing.T, tb Table)
	}{
		{"bom.csv", "\ufeffid,name\n1,a\n2,b\n", func(t *testing.T, tb Table) {
			if tb.Reading["encoding"] != "utf-8-sig" || tb.ColumnProfiles[0].Name != "id" || tb.Rows != 2 {
				t.Errorf("reading %v, first column %q, %d rows", tb.Reading, tb.ColumnProfiles[0].Name, tb.Rows)
			}
		}},
		{"latin1.csv", "name,city\nRen\xe9,Orl\xe9ans\n", func(t *testing.T, tb Table) {
			if tb.Reading["encoding"] != "cp1252" || tb.Sample[0][0] != "René" {
				t.Errorf("reading %v, sample %q", tb.Reading, tb.Sample)
			}
		}},
		{"semicolon.csv", "product;price\nA;1,5\nB;2,25\nC;1.234,5\n", func(t *testing.T, tb Table) {
			c := column(t, tb, "price")
			if tb.Reading["delimiter"] != ";" || tb.Reading["decimal"] != "," || c.DType != "float64" || c.Summary == nil || *c.Summary.Max != 1234.5 {
				t.Errorf("reading %v, price %+v", tb.Reading, c)
			}
		}},
		{"thousands.csv", "city,population\nA,\"1,234\"\nB,\"12,345,678\"\nC,999\n", func(t *testing.T, tb Table) {
			c := column(t, tb, "population")
			if c.DType != "float64" && c.DType != "int64" || c.Inferred != "number from text" || *c.Summary.Max != 12345678 {
				t.Errorf("population %+v", c)
			}
		}},
		// Numbers with a unit are numbers, read by the parser crucible_clean
		// uses, and the profile names the unit.
		{"percent.csv", "rate\n5%\n7.5%\n12 %\n", func(t *testing.T, tb Table) {
			c := column(t, tb, "rate")
			if c.DType != "float64" || c.Inferred != "number from text" || c.Summary == nil || *c.Summary.Max != 12 || !hasWarning(c.Warnings, "5% is read as 5.0") {
				t.Errorf("rate %+v", c)
			}
		}},
		{"money.csv", "amount\n\"$1,200.50\"\n$3\n($40.00)\n", func(t *testing.T, tb Table) {
			c := column(t, tb, "amount")
			if c.DType != "float64" || c.Summary == nil || *c.Summary.Max != 1200.5 || *c.Summary.Min != -40 || !hasWarning(c.Warnings, "amounts in $") {
				t.Errorf("amount %+v", c)
			}
		}},
		{"quoted newlines.csv", "id,comment\n1,\"line one\nline two\"\n2,x\n", func(t *testing.T, tb Table) {
			if tb.Name != "quoted_newlines" || tb.Rows != 2 || tb.Columns != 2 {
				t.Errorf("%s: %dx%d", tb.Name, tb.Rows, tb.Columns)
			}
		}},
		{"tab.tsv", "a\tb\n1\t2\n3\t4\n", func(t *testing.T, tb Table) {
			if tb.Reading["delimiter"] != "\t" || tb.Columns != 2 || tb.Format != "tsv" {
				t.Errorf("reading %v, format %s, %d columns", tb.Reading, tb.Format, tb.Columns)
			}
		}},
		{"records.json", `[{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]`, func(t *testing.T, tb Table) {
			if tb.Format != "json" || tb.Rows != 2 || column(t, tb, "a").DType != "int64" {
				t.Errorf("format %s, %d rows, columns %+v", tb.Format, tb.Rows, tb.ColumnProfiles)
			}
		}},
		{"lines.jsonl", "{\"a\": 1}\n{\"a\": 2}\n{\"a\": 3}\n", func(t *testing.T, tb Table) {
			if tb.Format != "jsonl" || tb.Rows != 3 {
				t.Errorf("format %s, %d rows", tb.Format, tb.Rows)
			}
		}},
		{"empty.csv", "", func(t *testing.T, tb Table) {
			if !strings.Contains(tb.Error, "empty") {
				t.Errorf("error %q, want it to say the file is empty", tb.Error)
			}
		}},
		{"blank.csv", "\n\n  \n", func(t *testing.T, tb Table) {
			if !strings.Contains(tb.Error, "empty") {
				t.Errorf("error %q, want it to say the file is empty", tb.Error)
			}
		}},
		{"binary.csv", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01", func(t *testing.T, tb Table) {
			if !strings.Contains(tb.Error, "not a text file") {
				t.Errorf("error %q, want it to say the file is not text", tb.Error)
			}
		}},
		{"broken.json", `[{"a": 1},`, func(t *testing.T, tb Table) {
			if !strings.Contains(tb.Error, "not valid JSON") {
				t.Errorf("error %q", tb.Error)
			}
		}},
		{"one column.csv", "value\n1\n2\n3\n", func(t *testing.T, tb Table) {
			if tb.Columns != 1 || tb.Rows != 3 {
				t.Errorf("%dx%d", tb.Rows, tb.Columns)
			}
		}},
		{"wide.csv", wide, func(t *testing.T, tb Table) {
			if tb.Columns != 500 || len(tb.ColumnProfiles) != 500 {
				t.Errorf("%d columns, %d profiles", tb.Columns, len(tb.ColumnProfiles))
			}
		}},
		{"mixed.csv", "v\n1\n2\n3\nabc\n5\n", func(t *testing.T, tb Table) {
			if c := column(t, tb, "v"); c.DType != "object" || !hasWarning(c.Warnings, "mixed types") {
				t.Errorf("v %+v", c)
			}
		}},
		{"dates.csv", "when,x\n2024-01-05,1\n2024-02-10,2\n2024-03-15,3\n", func(t *testing.T, tb Table) {
			c := column(t, tb, "when")
			if !strings.HasPrefix(c.DType, "datetime64") || c.Inferred != "date from text" || c.Summary == nil || c.Summary.MinText != "2024-01-05 00:00:00" {
				t.Errorf("when %+v", c)
			}
		}},
		{"day first.csv", "d\n13/01/2024\n02/03/2024\n", func(t *testing.T, tb Table) {
			if c := column(t, tb, "d"); c.Summary == nil || c.Summary.MaxText != "2024-03-02 00:00:00" {
				t.Errorf("d %+v", c)
			}
		}},
		// Ambiguous NN/NN/YYYY dates: a file written with a decimal comma is
		// read day first, one with a decimal point month first; a second
		// number over 12 means month first whatever the file.
		{"ambiguous dates eu.csv", "d;v\n05/01/2024;1,5\n05/02/2024;2,5\n", func(t *testing.T, tb Table) {
			if c := column(t, tb, "d"); c.Summary == nil || c.Summary.MaxText != "2024-02-05 00:00:00" {
				t.Errorf("d %+v", c)
			}
		}},
		{"ambiguous dates us.csv", "d,v\n05/01/2024,1.5\n05/02/2024,2.5\n", func(t *testing.T, tb Table) {
			if c := column(t, tb, "d"); c.Summary == nil || c.Summary.MaxText != "2024-05-02 00:00:00" {
				t.Errorf("d %+v", c)
			}
		}},
		{"month first eu.csv", "d;v\n01/13/2024;1,5\n02/03/2024;2,5\n", func(t *testing.T, tb Table) {
			if c := column(t, tb, "d"); c.Summary == nil || c.Summary.MaxText != "2024-02-03 00:00:00" {
				t.Errorf("d %+v", c)
			}
		}},
		{"bad dates.csv", "d\n2024-01-05\n2024-01-06\n2024-01-07\n2024-01-08\n2024-13-45\n2024-14-46\nsoon\n", func(t *testing.T, tb Table) {
			if c := column(t, tb, "d"); c.DType != "object" || !hasWarning(c.Warnings, "likely dates kept as text") {
				t.Errorf("d %+v", c)
			}
		}},
		{"dups.csv", "a,b\n1,2\n1,2\n3,4\n", func(t *testing.T, tb Table) {
			if tb.DuplicateRows != 1 || !hasWarning(tb.Warnings, "1 duplicate rows") {
				t.Errorf("duplicates %d, warnings %q", tb.DuplicateRows, tb.Warnings)
			}
		}},
		{"spaces.csv", "name,n\n alice,1\nbob ,2\ncarol,3\n", func(t *testing.T, tb Table) {
			if c := column(t, tb, "name"); !hasWarning(c.Warnings, "leading or trailing spaces in 2 values") {
				t.Errorf("name %+v", c)
			}
		}},
		{"constant.csv", "k,v\nx,1\nx,2\nx,3\n", func(t *testing.T, tb Table) {
			if c := column(t, tb, "k"); !hasWarning(c.Warnings, "constant column") || c.Top[0] != (ValueCount{"x", 3}) {
				t.Errorf("k %+v", c)
			}
		}},
		{"long line.csv", strings.Repeat("x", 2<<20), func(t *testing.T, tb Table) {
			if !strings.Contains(tb.Error, "first line is longer") {
				t.Errorf("error %q", tb.Error)
			}
		}},
		{"many columns.csv", strings.Repeat("a,", 20_000) + "a\n", func(t *testing.T, tb Table) {
			if !strings.Contains(tb.Error, "20001 columns, over the 10000") {
				t.Errorf("error %q", tb.Error)
			}
		}},
		{"old.xls", "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", func(t *testing.T, tb Table) {
			if !strings.Contains(tb.Error, ".xls") {
				t.Errorf("error %q", tb.Error)
			}
		}},
	}
	datasets := []Dataset{{Name: "two.xlsx", Content: workbook(t, rt)}}
	for _, c := range cases {
		datasets = append(datasets, Dataset{Name: c.file, Content: []byte(c.content)})
	}
	a := openAnalysis(t, rt, datasets...)
	tables := map[string]Table{}
	for _, tb := range a.Profile.Tables {
		tables[tb.Dataset+"/"+tb.Sheet] = tb
	}
	t.Run("two.xlsx", func(t *testing.T) {
		sales, costs := tables["two.xlsx/Sales"], tables["two.xlsx/Costs 2024"]
		if sales.Name != "two_sales" || sales.Rows != 3 || costs.Name != "two_costs_2024" || column(t, costs, "cost").DType != "float64" {
			t.Errorf("sales %+v\ncosts %+v", sales, costs)
		}
	})
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			tb, ok := tables[c.file+"/"]
			if !ok {
				t.Fatalf("no table for %s", c.file)
			}
			if tb.Error == "" && len(tb.ColumnProfiles) != tb.Columns {
				t.Errorf("%d columns, %d profiles; warnings %q", tb.Columns, len(tb.ColumnProfiles), tb.Warnings)
			}
			c.check(t, tb)
		})
	}
	t.Run("loaded", func(t *testing.T) {
		res, err := a.Session.Exec(context.Background(), sandbox.Cell{Code: "float(semicolon['price'].sum()), int(two_costs_2024.shape[0]), 'df' in globals()"})
		if err != nil || res.Value != "(1238.25, 2, False)" {
			t.Errorf("cell: %v %s %q %s", err, res.Status, res.Value, res.Stderr)
		}
	})
	t.Run("text", func(t *testing.T) {
		text := a.Profile.Text()
		for _, want := range []string{"DataFrame semicolon from semicolon.csv (csv, encoding \"utf-8\", delimiter \";\", decimal \",\", thousands \".\"): 3 rows x 2 columns",
			"empty (empty.csv): cannot be read: the file is empty; no DataFrame", "warning: leading or trailing spaces in 2 values"} {
			if !strings.Contains(text, want) {
				t.Errorf("the text lacks %q:\n%s", want, text)
			}
		}
	})
}

// TestOneDatasetIsDF: a single dataset is df too, and stays read-only to
// the analysis's code.
func TestOneDatasetIsDF(t *testing.T) {
	content := []byte("a,b\n1,2\n3,4\n")
	a := openAnalysis(t, newRuntime(t), Dataset{Name: "sales 2024.csv", Content: content})
	if a.Profile.DF != "sales_2024" || !strings.HasPrefix(a.Profile.Text(), "DataFrame sales_2024 (also df) from sales 2024.csv") {
		t.Errorf("df %q, text %q", a.Profile.DF, a.Profile.Text())
	}
	ctx := context.Background()
	res, err := a.Session.Exec(ctx, sandbox.Cell{Code: `df is sales_2024, int(df.a.sum())`})
	if err != nil || res.Value != "(True, 4)" {
		t.Errorf("cell: %v %s %q %s", err, res.Status, res.Value, res.Stderr)
	}
	res, err = a.Session.Exec(ctx, sandbox.Cell{Code: `open("data/sales 2024.csv", "w").write("x")`})
	if err != nil || res.Error == nil || res.Error.Type != "PermissionError" {
		t.Errorf("writing the dataset: %v %s %+v", err, res.Status, res.Error)
	}
	if got, err := a.Session.ReadFile(ctx, "data/sales 2024.csv"); err != nil || !bytes.Equal(got, content) {
		t.Errorf("the dataset reads back as %q (%v)", got, err)
	}
}
