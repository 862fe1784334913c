package mcpserver

import (
	"encoding/base64"
	"fmt"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// FileInput is a file placed in the working directory before the code runs.
type FileInput struct {
	Name          string `json:"name" jsonschema:"relative slash-separated path inside the working directory, such as data/input.csv"`
	Content       string `json:"content,omitempty" jsonschema:"the file's text (UTF-8); give content or content_base64, not both"`
	ContentBase64 string `json:"content_base64,omitempty" jsonschema:"the file's bytes in standard base64, for binary files"`
}

// LimitsInput bounds a run; a zero or missing field takes the server's default.
type LimitsInput struct {
	WallTimeMS  int64 `json:"wall_time_ms,omitempty" jsonschema:"wall-clock time limit in milliseconds (default 5000)"`
	CPUTimeMS   int64 `json:"cpu_time_ms,omitempty" jsonschema:"CPU time limit in milliseconds (default 5000)"`
	MemoryBytes int64 `json:"memory_bytes,omitempty" jsonschema:"memory limit in bytes (default 256 MiB)"`
	OutputBytes int64 `json:"output_bytes,omitempty" jsonschema:"limit on each of stdout and stderr in bytes (default 1 MiB)"`
}

// sandbox returns the limits as the pipeline takes them.
func (l *LimitsInput) sandbox() sandbox.Limits {
	if l == nil {
		return sandbox.Limits{}
	}
	return sandbox.Limits{WallTimeMS: l.WallTimeMS, CPUTimeMS: l.CPUTimeMS, MemoryBytes: l.MemoryBytes, OutputBytes: l.OutputBytes}
}

// decode returns the file's bytes, or an error naming the field and rule.
func (f FileInput) decode(field string) ([]byte, error) {
	switch {
	case f.Content != "" && f.ContentBase64 != "":
		return nil, &sandbox.InputError{Field: field, Rule: "give content or content_base64, not both"}
	case f.ContentBase64 != "":
		b, err := base64.StdEncoding.DecodeString(f.ContentBase64)
		if err != nil {
			return nil, &sandbox.InputError{Field: field + ".content_base64", Rule: fmt.Sprintf("must be standard base64: %v", err)}
		}
		return b, nil
	}
	return []byte(f.Content), nil
}

// files converts fs to the pipeline's files.
func files(fs []FileInput) ([]sandbox.File, error) {
	out := make([]sandbox.File, 0, len(fs))
	for i, f := range fs {
		b, err := f.decode(fmt.Sprintf("files[%d]", i))
		if err != nil {
			return nil, err
		}
		out = append(out, sandbox.File{Name: f.Name, Content: b})
	}
	return out, nil
}
