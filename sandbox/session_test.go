package sandbox

import (
	"strings"
	"testing"
)

func TestCellValidate(t *testing.T) {
	tests := []struct {
		name  string
		cell  Cell
		field string // "" means valid
		rule  string // substring of the rule
	}{
		{"minimal", Cell{Code: "1 + 1"}, "", ""},
		{"empty", Cell{}, "", ""},
		{"UTF-8", Cell{Code: "s = 'héllo, 世界 🌍'"}, "", ""},
		{"timeout", Cell{Code: "1", TimeoutMS: 1000}, "", ""},
		{"maximum timeout", Cell{Code: "1", TimeoutMS: MaxLimits().WallTimeMS}, "", ""},
		{"huge code", Cell{Code: strings.Repeat("x", MaxCodeBytes+1)}, "code", "at most"},
		{"NUL in code", Cell{Code: "print(1)\x00"}, "code", "NUL"},
		{"invalid UTF-8 in code", Cell{Code: "print('\xff')"}, "code", "valid UTF-8"},
		{"truncated UTF-8 in code", Cell{Code: "print('\xe4\xb8')"}, "code", "valid UTF-8"},
		{"surrogate in code", Cell{Code: "x = '\xed\xa0\x80'"}, "code", "valid UTF-8"},
		{"negative timeout", Cell{Code: "1", TimeoutMS: -1}, "timeout_ms", "between"},
		{"absurd timeout", Cell{Code: "1", TimeoutMS: MaxLimits().WallTimeMS + 1}, "timeout_ms", "between"},
		{"default context", Cell{Code: "1", Context: ""}, "", ""},
		{"named context", Cell{Code: "1", Context: "ctx-1_a"}, "", ""},
		{"E2B context id", Cell{Code: "1", Context: "3f2c9a1e-7b4d-4c2a-9e8f-0a1b2c3d4e5f"}, "", ""},
		{"one-character context", Cell{Code: "1", Context: "a"}, "", ""},
		{"64-character context", Cell{Code: "1", Context: strings.Repeat("a", 64)}, "", ""},
		{"reset default context", Cell{ResetContext: true}, "", ""},
		{"reset named context", Cell{Context: "a", ResetContext: true}, "", ""},
		{"65-character context", Cell{Code: "1", Context: strings.Repeat("a", 65)}, "context", "1 to 64 letters"},
		{"context starting with '-'", Cell{Code: "1", Context: "-a"}, "context", "starting with a letter or digit"},
		{"context starting with '_'", Cell{Code: "1", Context: "_a"}, "context", "starting with a letter or digit"},
		{"context with a slash", Cell{Code: "1", Context: "a/b"}, "context", "letters, digits"},
		{"context with a space", Cell{Code: "1", Context: "a b"}, "context", "letters, digits"},
		{"context with a dot", Cell{Code: "1", Context: "a.b"}, "context", "letters, digits"},
		{"context with a newline", Cell{Code: "1", Context: "a\n"}, "context", "letters, digits"},
		{"non-ASCII context", Cell{Code: "1", Context: "é"}, "context", "letters, digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cell.Validate()
			wantInputError(t, err, tt.field, tt.rule)
		})
	}
}

func TestSessionRequestValidate(t *testing.T) {
	tests := []struct {
		name  string
		req   SessionRequest
		field string // "" means valid
		rule  string // substring of the rule
	}{
		{"python", SessionRequest{Language: Python}, "", ""},
		{"image", SessionRequest{Language: Python, Image: "datascience"}, "", ""},
		{"empty language", SessionRequest{}, "language", `must be python (or python3, py)`},
		{"javascript", SessionRequest{Language: JavaScript}, "language", "sessions exist for python only"},
		{"bad limits", SessionRequest{Language: Python, Limits: Limits{MemoryBytes: -1}}, "limits.memory_bytes", ""},
		// The files are checked against the session's working directory,
		// 1 GiB by default, not a run's 64 MiB.
		{"files above a run's default disk", SessionRequest{Language: Python, Files: []File{{Name: "big.csv", Content: make(Data, 100*MiB)}}}, "", ""},
		{"files above the session's disk", SessionRequest{Language: Python, Limits: Limits{DiskBytes: 1 * MiB},
			Files: []File{{Name: "big.csv", Content: make(Data, 2*MiB)}}}, "files", ""},
		{"bad file name", SessionRequest{Language: Python, Files: []File{{Name: "../x"}}}, "files[0].name", ""},
		{"bad env", SessionRequest{Language: Python, Env: map[string]string{"1X": "y"}}, "env", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantInputError(t, tt.req.Validate(), tt.field, tt.rule)
		})
	}
}

// TestSessionDefaults checks the one set of session defaults: sized for
// data work (a minute per cell, 2 GiB), above a run's, within the
// contract's maxima, every field filled, and applied by
// WithSessionDefaults and SessionDefaultsWithin.
func TestSessionDefaults(t *testing.T) {
	d := DefaultSessionLimits()
	if d.WallTimeMS != 60_000 || d.CPUTimeMS != 60_000 || d.MemoryBytes != 2*GiB || d.DiskBytes != 1*GiB {
		t.Errorf("DefaultSessionLimits() = %+v, want 60 s wall and CPU, 2 GiB memory, 1 GiB disk", d)
	}
	run := DefaultLimits()
	for _, f := range limitFields {
		if f.name == "file_size_bytes" {
			continue // follows disk_bytes
		}
		if v := f.get(&d); v == 0 || v < f.get(&run) {
			t.Errorf("session default %s = %d: want it set, and at least a run's %d", f.name, v, f.get(&run))
		}
	}
	if err := d.Validate(); err != nil {
		t.Errorf("the session defaults are not valid limits: %v", err)
	}
	got := Limits{MemoryBytes: 512 * MiB}.WithSessionDefaults()
	if got.MemoryBytes != 512*MiB || got.WallTimeMS != d.WallTimeMS || got.FileSizeBytes != d.DiskBytes {
		t.Errorf("WithSessionDefaults kept or filled the wrong fields: %+v", got)
	}
	maxima := MaxLimits()
	maxima.MemoryBytes, maxima.WallTimeMS = 1*GiB, 10_000
	low := Limits{}.SessionDefaultsWithin(maxima)
	if low.MemoryBytes != 1*GiB || low.WallTimeMS != 10_000 || low.CPUTimeMS != 0 {
		t.Errorf("SessionDefaultsWithin(maxima of 1 GiB, 10 s) = %+v, want memory and wall time lowered, the rest left zero", low)
	}
}
