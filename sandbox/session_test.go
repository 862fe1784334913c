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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantInputError(t, tt.req.Validate(), tt.field, tt.rule)
		})
	}
}
