// Package sandbox is Crucible's execution contract: the types every caller
// (the CLI, the HTTP API, the Go SDK and the agents) sends and receives, and the Runtime
// interface every sandbox backend implements.
//
// A Request names a language, the code, its standard input, the files placed
// in its working directory, the limits, the environment variables it may
// see, and its Network: none, or an allowlist the host's egress proxy
// serves, whose connections the Result logs. Validate rejects a bad request before anything runs, with an
// *InputError that names the field and the rule. A Runtime turns a valid
// Request into a Result: a Status, the exit code or signal, the captured
// streams, metrics, and a structured ExecError when the program failed.
//
// This package imports nothing else of Crucible's, so that every other
// package can depend on it.
package sandbox
