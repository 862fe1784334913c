package analyst

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Profile describes an analysis's DataFrames, as the profiler computed
// them in the sandbox.
type Profile struct {
	// Tables holds one entry per Frame, in the same order.
	Tables []Table `json:"tables"`
	// DF names the DataFrame also bound to df: the only one, when there
	// is exactly one; empty otherwise.
	DF string `json:"df,omitempty"`
}

// Table is the profile of one DataFrame.
type Table struct {
	// Name is the DataFrame's variable.
	Name string `json:"name"`
	// Dataset is the file it was read from, Sheet the workbook's sheet.
	Dataset string `json:"dataset"`
	Sheet   string `json:"sheet,omitempty"`
	// Error says why the file could not be read ("cannot be read: ...");
	// the DataFrame then does not exist and the fields below are zero.
	Error string `json:"error,omitempty"`
	// Format is how the file was read: csv, tsv, json, jsonl or excel.
	Format string `json:"format,omitempty"`
	// Reading holds what was sniffed: encoding, delimiter, decimal and
	// thousands separators, or the sheet.
	Reading map[string]string `json:"reading,omitempty"`
	// Rows and Columns are the shape.
	Rows    int `json:"rows"`
	Columns int `json:"columns"`
	// MemoryBytes is the DataFrame's size in memory, without the objects
	// its text columns point to.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// ColumnProfiles describe each column, in order.
	ColumnProfiles []Column `json:"column_profiles,omitempty"`
	// Sample holds the first rows, each value as text (cut to 80
	// characters, "" for a missing one).
	Sample [][]string `json:"sample,omitempty"`
	// DuplicateRows counts rows equal to an earlier one.
	DuplicateRows int `json:"duplicate_rows,omitempty"`
	// Warnings are about the whole table (duplicate rows, no rows).
	Warnings []string `json:"warnings,omitempty"`
}

// Column is the profile of one column.
type Column struct {
	// Name is the column's label, as text.
	Name string `json:"name"`
	// DType is the pandas dtype after inference.
	DType string `json:"dtype"`
	// Inferred says what inference converted from text: "number from
	// text" or "date from text"; empty when the column was read as is.
	Inferred string `json:"inferred,omitempty"`
	// Missing counts missing values, Distinct the distinct others.
	Missing  int `json:"missing"`
	Distinct int `json:"distinct"`
	// Summary holds the statistics of a numeric or date column.
	Summary *Summary `json:"summary,omitempty"`
	// Top holds the most frequent values of a column with few distinct
	// values, or of a text column, most frequent first.
	Top []ValueCount `json:"top,omitempty"`
	// Warnings name what looks wrong: mixed types, likely dates kept as
	// text, values that did not parse in a column converted from text
	// (now missing), the unit of numbers written as percentages or
	// amounts, leading or trailing spaces, a constant column.
	Warnings []string `json:"warnings,omitempty"`
}

// Summary is a column's summary statistics: the numeric fields for a
// numeric column (nil where undefined, such as the std of one value), the
// text ones for a date column.
type Summary struct {
	Mean   *float64 `json:"mean,omitempty"`
	Std    *float64 `json:"std,omitempty"`
	Min    *float64 `json:"min,omitempty"`
	P25    *float64 `json:"p25,omitempty"`
	Median *float64 `json:"median,omitempty"`
	P75    *float64 `json:"p75,omitempty"`
	Max    *float64 `json:"max,omitempty"`
	// MinText and MaxText are a date column's first and last dates.
	MinText string `json:"min_text,omitempty"`
	MaxText string `json:"max_text,omitempty"`
}

// ValueCount is one of a column's frequent values.
type ValueCount struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// MaxProfileBytes bounds the profile the sandbox returns.
const MaxProfileBytes = 32 << 20

// decodeProfile reads the profiler's output strictly: one JSON object of
// at most MaxProfileBytes, with no field Profile does not have, one table
// per frame in order. The sandbox wrote it: it is checked, not trusted.
func decodeProfile(out []byte, frames []Frame) (*Profile, error) {
	if len(out) > MaxProfileBytes {
		return nil, fmt.Errorf("the profile is %d bytes, over the %d-byte limit", len(out), MaxProfileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("the profile is not the JSON expected: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the profile is followed by more output")
	}
	if len(p.Tables) != len(frames) {
		return nil, fmt.Errorf("the profile has %d tables for %d DataFrames", len(p.Tables), len(frames))
	}
	for i, t := range p.Tables {
		if t.Name != frames[i].Name {
			return nil, fmt.Errorf("the profile's table %d is %q, want %q", i, t.Name, frames[i].Name)
		}
	}
	return &p, nil
}
