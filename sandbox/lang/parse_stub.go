package lang

import "github.com/crucible-sandbox/crucible/sandbox"

// ParsePythonError is being written; see python.go.
func ParsePythonError(stderr []byte, mainPath string) *sandbox.ExecError { return nil }

// ParseJavaScriptError is being written; see javascript.go.
func ParseJavaScriptError(stderr []byte, mainPath string) *sandbox.ExecError { return nil }
