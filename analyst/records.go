package analyst

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path"
	"regexp"
	"strings"

	"github.com/crucible-sandbox/crucible/kernel"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// Bounds on what the host reads of the helpers' records: the sandbox
// wrote them, so they are checked, not trusted.
const (
	// MaxTableRows caps the rows of a ResultTable (show_table keeps 200).
	MaxTableRows = 200
	// MaxTableColumns caps its columns (show_table keeps 100, and a
	// non-default index).
	MaxTableColumns = 110
	// maxRecordBytes caps one record read; a larger one is ignored.
	maxRecordBytes = 8 << 20
	// maxTables and maxCleanings cap the records kept per question.
	maxTables    = 32
	maxCleanings = 32
)

// figureName is how the session names a figure it captured.
var figureName = regexp.MustCompile(`^figure-[0-9]+\.png$`)

// execution is one cell the agent ran in the analysis's session, with
// everything it produced (records included).
type execution struct {
	code   string
	result sandbox.Result
}

// outputs sorts one execution's artifacts: the helpers' records, decoded
// (unreadable ones dropped), the figures as charts, and the user's files.
type outputs struct {
	tables   []ResultTable
	cleaning []CleanSummary
	charts   []Chart
	files    []sandbox.Artifact
}

func sortArtifacts(artifacts []sandbox.Artifact) outputs {
	var o outputs
	for _, a := range artifacts {
		kind, internal := recordKind(a.Name)
		switch {
		case internal && kind == recordTable:
			if t, ok := decodeTable(a); ok && len(o.tables) < maxTables {
				o.tables = append(o.tables, t)
			}
		case internal && kind == recordCleaning:
			var c CleanSummary
			if decodeRecord(a, &c) && len(o.cleaning) < maxCleanings {
				o.cleaning = append(o.cleaning, c)
			}
		case internal:
		case figureName.MatchString(a.Name) && a.MIME == "image/png":
			o.charts = append(o.charts, chartOf(a))
		default:
			o.files = append(o.files, a)
		}
	}
	return o
}

// recordKind says whether name is under recordsDir and, if so, the kind
// of record it is (the directory under it).
func recordKind(name string) (kind string, internal bool) {
	rest, ok := strings.CutPrefix(name, recordsDir)
	if !ok {
		return "", false
	}
	return path.Dir(rest), true
}

// decodeRecord decodes a record strictly into v: one JSON object of at
// most maxRecordBytes, with no field v does not have.
func decodeRecord(a sandbox.Artifact, v any) bool {
	if a.ContentOmitted || len(a.Content) > maxRecordBytes {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(a.Content))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if dec.Decode(v) != nil {
		return false
	}
	_, err := dec.Token()
	return errors.Is(err, io.EOF)
}

// decodeTable decodes a table record, cut to MaxTableRows rows and
// MaxTableColumns columns.
func decodeTable(a sandbox.Artifact) (ResultTable, bool) {
	var t ResultTable
	if !decodeRecord(a, &t) {
		return t, false
	}
	t.Columns = t.Columns[:min(len(t.Columns), MaxTableColumns)]
	t.Rows = t.Rows[:min(len(t.Rows), MaxTableRows)]
	for i, r := range t.Rows {
		t.Rows[i] = r[:min(len(r), len(t.Columns))]
	}
	return t, true
}

// chartOf is the chart of a captured figure, with the labels the kernel
// recorded in it.
func chartOf(a sandbox.Artifact) Chart {
	c := Chart{Artifact: a}
	labels, ok := kernel.ReadFigureLabels(a.Content)
	if !ok {
		return c
	}
	c.Title, c.Axes = labels.Title, labels.Axes
	if c.Title == "" && len(c.Axes) > 0 {
		c.Title = c.Axes[0].Title
	}
	return c
}
