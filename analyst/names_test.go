package analyst

import (
	"archive/zip"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

func TestIdentifier(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"sales 2024", "sales_2024"},
		{"Sales-2024 (final)", "sales_2024_final"},
		{"DES=+2006261", "des_2006261"},
		{"Données clients", "donnees_clients"},
		{"2024 report", "t_2024_report"},
		{"list", "list_df"},
		{"class", "class_df"},
		{"df", "df_df"},
		{"pd", "pd_df"},
		{"match", "match_df"},
		{"數據", "table"},
		{"___", "table"},
		{"data", "data_df"},
		{strings.Repeat("a", 100), strings.Repeat("a", maxIdentBytes)},
		{strings.Repeat("ab ", 40), strings.TrimSuffix(strings.Repeat("ab_", 20), "_")},
	} {
		if got := identifier(tc.in); got != tc.want {
			t.Errorf("identifier(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// xlsx builds the part of an .xlsx file that lists its sheets.
func xlsx(t *testing.T, sheets ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("xl/workbook.xml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets>`)
	for i, s := range sheets {
		b.WriteString(`<sheet name="` + s + `" sheetId="` + strconv.Itoa(i+1) + `"/>`)
	}
	b.WriteString(`</sheets></workbook>`)
	if _, err := w.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFrames(t *testing.T) {
	type frame struct{ name, sheet string }
	for _, tc := range []struct {
		name     string
		datasets []Dataset
		want     []frame
		field    string // of the InputError, when refused
	}{
		{"one file", []Dataset{{Name: "sales 2024.csv"}}, []frame{{"sales_2024", ""}}, ""},
		{"clash", []Dataset{{Name: "sales 2024.csv"}, {Name: "sales_2024.json"}, {Name: "Sales-2024.tsv"}},
			[]frame{{"sales_2024", ""}, {"sales_2024_2", ""}, {"sales_2024_3", ""}}, ""},
		{"keyword", []Dataset{{Name: "import.csv"}}, []frame{{"import_df", ""}}, ""},
		{"two sheets", []Dataset{{Name: "book.xlsx", Content: xlsx(t, "Q1 sales", "Q2")}},
			[]frame{{"book_q1_sales", "Q1 sales"}, {"book_q2", "Q2"}}, ""},
		{"one sheet", []Dataset{{Name: "book.xlsx", Content: xlsx(t, "Sheet1")}}, []frame{{"book", "Sheet1"}}, ""},
		{"sheet clashes with a file", []Dataset{{Name: "book q2.csv"}, {Name: "book.xlsx", Content: xlsx(t, "Q1", "Q2")}},
			[]frame{{"book_q2", ""}, {"book_q1", "Q1"}, {"book_q2_2", "Q2"}}, ""},
		{"zip that is no workbook", []Dataset{{Name: "a.xlsx", Content: []byte("PK\x03\x04junk")}}, []frame{{"a", ""}}, ""},
		{"none", nil, nil, "datasets"},
		{"directory", []Dataset{{Name: "dir/a.csv"}}, nil, "datasets[0].name"},
		{"empty name", []Dataset{{Name: ""}}, nil, "datasets[0].name"},
		{"dot dot", []Dataset{{Name: ".."}}, nil, "datasets[0].name"},
		{"same name", []Dataset{{Name: "a.csv"}, {Name: "a.csv"}}, nil, "datasets[1].name"},
		{"too many sheets", []Dataset{{Name: "b.xlsx", Content: xlsx(t, strings.Fields(strings.Repeat("s ", MaxSheets+1))...)}}, nil, "datasets[0].content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			frames, err := Frames(tc.datasets)
			if tc.field != "" {
				var ie *sandbox.InputError
				if !sandbox.IsInputError(err) || !asInput(err, &ie) || ie.Field != tc.field {
					t.Fatalf("err %v, want an input error for %s", err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []frame
			for _, f := range frames {
				got = append(got, frame{f.Name, f.Sheet})
			}
			if len(got) != len(tc.want) {
				t.Fatalf("frames %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("frame %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
