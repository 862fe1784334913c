package analyst

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Dataset is one file of an analysis: CSV or TSV, Excel (.xlsx), JSON or
// JSON Lines, told apart by the profiler from the name's extension and
// the content.
type Dataset struct {
	// Name is the file's name, such as "sales 2024.csv": one path
	// component (no "/"), which names the DataFrame too (see Frame).
	Name string `json:"name"`
	// Content is the file's bytes.
	Content []byte `json:"-"`
}

// Bounds on an analysis's datasets.
const (
	// MaxDatasets caps the datasets of one analysis.
	MaxDatasets = 32
	// MaxDatasetBytes caps one dataset's size.
	MaxDatasetBytes = 1 << 30
	// MaxSheets caps the sheets of one workbook.
	MaxSheets = 64
)

// DataDir is the directory of the session's working directory that holds
// the datasets, read-only.
const DataDir = "data"

// Frame is one DataFrame an analysis loads: a dataset, or one sheet of a
// workbook.
type Frame struct {
	// Name is the Python variable holding it (see the naming rule in
	// names.go).
	Name string `json:"name"`
	// Dataset is the file's name.
	Dataset string `json:"dataset"`
	// Path is the file's path in the working directory.
	Path string `json:"path"`
	// Sheet is the sheet of a workbook, empty for other formats.
	Sheet string `json:"sheet,omitempty"`
}

// checkDatasets refuses datasets an analysis cannot hold, with an
// *sandbox.InputError naming the field and the rule.
func checkDatasets(datasets []Dataset) error {
	if len(datasets) == 0 {
		return &sandbox.InputError{Field: "datasets", Rule: "must hold at least one dataset"}
	}
	if len(datasets) > MaxDatasets {
		return &sandbox.InputError{Field: "datasets", Rule: fmt.Sprintf("must hold at most %d datasets, got %d", MaxDatasets, len(datasets))}
	}
	seen := map[string]int{}
	for i, d := range datasets {
		field := fmt.Sprintf("datasets[%d]", i)
		if rule := sandbox.CheckFileName(d.Name); rule != "" || strings.Contains(d.Name, "/") {
			if rule == "" {
				rule = "must be a file name, without directories"
			}
			return &sandbox.InputError{Field: field + ".name", Rule: fmt.Sprintf("%s, got %q", rule, d.Name)}
		}
		if j, ok := seen[d.Name]; ok {
			return &sandbox.InputError{Field: field + ".name", Rule: fmt.Sprintf("must be unique, %q is also datasets[%d]", d.Name, j)}
		}
		seen[d.Name] = i
		if len(d.Content) > MaxDatasetBytes {
			return &sandbox.InputError{Field: field + ".content", Rule: fmt.Sprintf("must be at most %d bytes, got %d", MaxDatasetBytes, len(d.Content))}
		}
	}
	return nil
}

// Frames names the DataFrames datasets load into, in order: one per
// dataset, one per sheet of a workbook with several. It reads no more of
// a workbook than its list of sheets.
func Frames(datasets []Dataset) ([]Frame, error) {
	if err := checkDatasets(datasets); err != nil {
		return nil, err
	}
	taken := namer{}
	var frames []Frame
	for i, d := range datasets {
		base := identifier(stem(d.Name))
		p := path.Join(DataDir, d.Name)
		sheets, err := sheetNames(d.Content)
		if err != nil {
			return nil, &sandbox.InputError{Field: fmt.Sprintf("datasets[%d].content", i), Rule: err.Error()}
		}
		switch len(sheets) {
		case 0: // not a workbook, or one the profiler will name unreadable
			frames = append(frames, Frame{Name: taken.take(base), Dataset: d.Name, Path: p})
		case 1:
			frames = append(frames, Frame{Name: taken.take(base), Dataset: d.Name, Path: p, Sheet: sheets[0]})
		default:
			for _, s := range sheets {
				frames = append(frames, Frame{Name: taken.take(identifier(stem(d.Name) + " " + s)), Dataset: d.Name, Path: p, Sheet: s})
			}
		}
	}
	return frames, nil
}

// maxWorkbookXML bounds the part of an .xlsx file that lists its sheets.
const maxWorkbookXML = 4 << 20

// maxZipEntries bounds the entries of a zip file the host lists: Go's
// zip reader holds every entry in memory, and a hostile 1-GiB zip can
// have tens of millions. A workbook has a few dozen.
const maxZipEntries = 4096

// sheetNames returns the sheets of an Office Open XML workbook (.xlsx,
// .xlsm), in order, or none for content that is not one, or that has
// more than maxZipEntries entries (left to the profiler to read or
// refuse, in the sandbox). A workbook with more than MaxSheets sheets is
// refused.
func sheetNames(content []byte) ([]string, error) {
	if !bytes.HasPrefix(content, []byte("PK\x03\x04")) || zipEntries(content) > maxZipEntries {
		return nil, nil
	}
	zr, err := zip.NewReader(bytes.NewReader(content), int64(len(content)))
	if err != nil {
		return nil, nil
	}
	for _, f := range zr.File {
		if f.Name != "xl/workbook.xml" {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return nil, nil
		}
		defer rc.Close()
		var wb struct {
			Sheets []struct {
				Name string `xml:"name,attr"`
			} `xml:"sheets>sheet"`
		}
		if xml.NewDecoder(io.LimitReader(rc, maxWorkbookXML)).Decode(&wb) != nil {
			return nil, nil
		}
		if len(wb.Sheets) > MaxSheets {
			return nil, fmt.Errorf("a workbook must have at most %d sheets, got %d", MaxSheets, len(wb.Sheets))
		}
		names := make([]string, len(wb.Sheets))
		for i, s := range wb.Sheets {
			names[i] = s.Name
		}
		return names, nil
	}
	return nil, nil
}

// zipEntries returns the entry count the end of central directory record
// of a zip file states, or a count over maxZipEntries when none is found
// or the file is a ZIP64 one, whose count the record does not hold.
func zipEntries(content []byte) int {
	const eocdLen, maxComment = 22, 1<<16 - 1
	tail := content[max(0, len(content)-eocdLen-maxComment):]
	i := bytes.LastIndex(tail, []byte("PK\x05\x06"))
	if i < 0 || len(tail)-i < eocdLen {
		return maxZipEntries + 1
	}
	n := int(binary.LittleEndian.Uint16(tail[i+10:]))
	if n == 0xffff {
		return maxZipEntries + 1
	}
	return n
}
