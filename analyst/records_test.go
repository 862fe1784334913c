package analyst

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Proves how one execution's artifacts are sorted and the helpers'
// records read: the sandbox wrote them, so a record that is not the JSON
// expected (extra fields, trailing data, too big, content omitted) is
// dropped, a table is cut to MaxTableRows rows and to its columns, and
// nothing under .crucible/ is ever a user's file.
func TestSortArtifacts(t *testing.T) {
	art := func(name, content string) sandbox.Artifact {
		return sandbox.Artifact{Name: name, MIME: "application/json", Size: int64(len(content)), Content: []byte(content)}
	}
	manyRows := `{"name":"big","columns":["a"],"rows":[` + strings.Repeat(`[1,2],`, MaxTableRows+5) + `[1,2]],"total_rows":999,"total_columns":1,"html":"<table></table>"}`
	clean := `{"source":"data/a.csv","output":"a_clean.csv","rows_in":3,"rows_out":2,"duplicates_removed":1,"changed":{},"dates":{},"warnings":[],"warnings_total":0}`
	cleanMore := strings.Replace(clean, `"warnings":[]`, `"numbers":{"price":{"converted":3,"failed":0,"kind":"currency","unit":"$"}},"case":{"region":{"changed":2,"groups":1,"spellings":{"North":["north"]}}},"warnings":[]`, 1)
	omitted := art(".crucible/tables/9.json", `{}`)
	omitted.ContentOmitted = true
	for _, tc := range []struct {
		name      string
		artifacts []sandbox.Artifact
		want      string // tables, cleanings, charts, files
	}{
		{"a table", []sandbox.Artifact{art(".crucible/tables/1.json", `{"name":"t","columns":["a","b"],"rows":[[1,"x"],[2,null]],"total_rows":2,"total_columns":2,"html":"<table/>"}`)},
			"tables [t [a b] [[1 x] [2 <nil>]]] cleanings 0 charts [] files []"},
		{"rows and cells cut", []sandbox.Artifact{art(".crucible/tables/1.json", manyRows)},
			fmt.Sprintf("tables [big [a] %d rows of 1] cleanings 0 charts [] files []", MaxTableRows)},
		{"an unknown field", []sandbox.Artifact{art(".crucible/tables/1.json", `{"name":"t","columns":[],"rows":[],"evil":1}`)},
			"tables [] cleanings 0 charts [] files []"},
		{"trailing data", []sandbox.Artifact{art(".crucible/cleaning/1.json", clean+`{}`)},
			"tables [] cleanings 0 charts [] files []"},
		{"content omitted", []sandbox.Artifact{omitted}, "tables [] cleanings 0 charts [] files []"},
		{"too big", []sandbox.Artifact{art(".crucible/tables/1.json", `{"name":"`+strings.Repeat("a", maxRecordBytes)+`"}`)},
			"tables [] cleanings 0 charts [] files []"},
		{"a cleaning summary", []sandbox.Artifact{art(".crucible/cleaning/2.json", clean)}, "tables [] cleanings 1 charts [] files []"},
		{"a cleaning summary with numbers and case", []sandbox.Artifact{art(".crucible/cleaning/3.json", cleanMore)}, "tables [] cleanings 1 charts [] files []"},
		{"records of an unknown kind are not files", []sandbox.Artifact{art(".crucible/other/1.json", `{}`), art(".crucible/x", "")},
			"tables [] cleanings 0 charts [] files []"},
		{"figures and files", []sandbox.Artifact{
			{Name: "figure-1.png", MIME: "image/png"}, {Name: "out/figure-2.png", MIME: "image/png"},
			{Name: "figure-3.png", MIME: "text/plain"}, art("clean.csv", "a\n"), art("crucible/tables/1.json", "{}")},
			"tables [] cleanings 0 charts [figure-1.png] files [out/figure-2.png figure-3.png clean.csv crucible/tables/1.json]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := sortArtifacts(tc.artifacts)
			var tables, charts, files []string
			for _, tb := range o.tables {
				rows := fmt.Sprint(tb.Rows)
				if len(tb.Rows) > 5 {
					rows = fmt.Sprintf("%d rows of %d", len(tb.Rows), len(tb.Rows[0]))
				}
				tables = append(tables, fmt.Sprintf("%s %v %s", tb.Name, tb.Columns, rows))
			}
			for _, c := range o.charts {
				charts = append(charts, c.Name)
			}
			for _, f := range o.files {
				files = append(files, f.Name)
			}
			if got := fmt.Sprintf("tables %v cleanings %d charts %v files %v", tables, len(o.cleaning), charts, files); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
