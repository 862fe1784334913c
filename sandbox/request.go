package sandbox

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Request is one execution: what to run, with what input, under which limits.
type Request struct {
	// Language selects the interpreter: "python", "javascript" or "bash",
	// or an alias ParseLanguage knows ("py", "js", "sh", ...). The service
	// (and so the HTTP API) resolves an alias to its canonical name, which
	// the result and the record report, and takes DefaultLanguage for an
	// empty one; a runtime takes only the canonical names.
	Language Language `json:"language,omitempty"`
	// Image names the root filesystem to run in, one of those the server
	// offers (GET /v1/images); empty is the server's default. The service
	// picks the runtime of that image; a runtime runs in its own image and
	// ignores the field.
	Image string `json:"image,omitempty"`
	// Code is the program's source text.
	Code string `json:"code"`
	// Stdin is fed to the program's standard input; the stream is closed
	// after it.
	Stdin Data `json:"stdin,omitempty"`
	// Files are placed in the working directory before the program starts.
	Files []File `json:"files,omitempty"`
	// Limits bound the run; zero fields take DefaultLimits.
	Limits Limits `json:"limits,omitempty"`
	// Env is the program's whole environment beyond the sandbox's fixed
	// variables (PATH, HOME, LANG, ...). Nothing of the host's environment is
	// ever passed in.
	Env map[string]string `json:"env,omitempty"`
	// Network is the network policy: "none" (the default: nothing outside
	// the sandbox can be reached) or an allowlist; see Network.
	Network Network `json:"network,omitzero"`
	// Policy asks for the static code policy checked before the program
	// runs (see Policy); nil takes the server's and the tenant's.
	Policy *Policy `json:"policy,omitempty"`
	// Rules, set by the service from the policy in force, are what a
	// runtime checks Python code against in the sandbox before any of it
	// runs; nil checks nothing.
	Rules *CodeRules `json:"-"`
	// OnOutput, when set, receives the output while the program runs. It is
	// not part of the request's identity: results are the same with or
	// without it.
	OnOutput OutputFunc `json:"-"`
}

// File is an input file placed in the working directory.
type File struct {
	// Name is a relative slash-separated path inside the working directory,
	// such as "data/input.csv".
	Name string `json:"name"`
	// Content is the file's bytes.
	Content Data `json:"content"`
	// Executable sets the file's execute permission bits.
	Executable bool `json:"executable,omitempty"`
	// ReadOnly places the file so that the program can read it and never
	// change it: it cannot write, truncate, chmod, rename, replace or
	// remove the file, nor rename, replace or remove the directories that
	// hold it inside the working directory, in which nothing can then be
	// added or removed whatever else they hold. The file is root's, mode
	// 0444 (0555 if Executable). A session's WriteFile cannot replace it
	// either.
	ReadOnly bool `json:"read_only,omitempty"`
}

// Request size rules, checked by Validate.
const (
	// MaxCodeBytes caps the program's source size.
	MaxCodeBytes = 4 << 20
	// MaxFiles caps the number of input files.
	MaxFiles = 1000
	// MaxStdinBytes caps standard input.
	MaxStdinBytes = 64 << 20
	// MaxEnvVars caps the number of environment variables.
	MaxEnvVars   = 256
	maxNameBytes = 255
	maxPathBytes = 1024
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate rejects a request that cannot be run as asked, before anything
// runs. The error is an *InputError naming the field and the rule.
func (r *Request) Validate() error {
	if r.Language == "" {
		return inputErrorf("language", "is required; one of %s", LanguageNames())
	}
	if !r.Language.Valid() {
		return inputErrorf("language", "must be one of %s, got %q", LanguageNames(), r.Language)
	}
	if err := validateCode(r.Code); err != nil {
		return err
	}
	if len(r.Stdin) > MaxStdinBytes {
		return inputErrorf("stdin", "must be at most %d bytes, got %d", MaxStdinBytes, len(r.Stdin))
	}
	if err := r.Limits.Validate(); err != nil {
		return err
	}
	if err := validateFiles(r.Files, r.Limits.WithDefaults().DiskBytes); err != nil {
		return err
	}
	return r.validateRest()
}

// validateRest checks the environment, policy and network, which a
// session's request shares with a run's.
func (r *Request) validateRest() error {
	if err := validateEnv(r.Env); err != nil {
		return err
	}
	if r.Policy != nil {
		if err := r.Policy.Validate(); err != nil {
			return err
		}
	}
	return r.Network.Validate()
}

// validateCode checks a program's or a cell's source: its size, no NUL
// bytes, and valid UTF-8.
func validateCode(code string) error {
	if len(code) > MaxCodeBytes {
		return inputErrorf("code", "must be at most %d bytes, got %d", MaxCodeBytes, len(code))
	}
	// Python refuses source holding a NUL byte and bash may take such a
	// file for a binary: code with one is a mistake (or binary data) and
	// is rejected before anything runs, not failed inside the sandbox.
	if strings.IndexByte(code, 0) >= 0 {
		return inputErrorf("code", "must not contain NUL bytes")
	}
	// The code reaches the sandbox as a JSON string, and encoding/json
	// replaces invalid UTF-8 with U+FFFD: the program that ran would not
	// be the code submitted, whose hash the Result carries as code_hash.
	if !utf8.ValidString(code) {
		return inputErrorf("code", "must be valid UTF-8")
	}
	return nil
}

func validateFiles(files []File, diskBytes int64) error {
	if len(files) > MaxFiles {
		return inputErrorf("files", "must hold at most %d files, got %d", MaxFiles, len(files))
	}
	var total int64
	seen := make(map[string]bool, len(files))
	for i, f := range files {
		field := fmt.Sprintf("files[%d].name", i)
		if err := CheckFileName(f.Name); err != "" {
			return inputErrorf(field, "%s, got %q", err, f.Name)
		}
		if seen[f.Name] {
			return inputErrorf(field, "must be unique, %q appears twice", f.Name)
		}
		seen[f.Name] = true
		total += int64(len(f.Content))
	}
	// A file and a directory of the same name cannot both exist.
	for i, f := range files {
		for dir := path.Dir(f.Name); dir != "."; dir = path.Dir(dir) {
			if seen[dir] {
				return inputErrorf(fmt.Sprintf("files[%d].name", i), "lies under %q, which is also given as a file", dir)
			}
		}
	}
	if total > diskBytes {
		return inputErrorf("files", "total size %d bytes exceeds limits.disk_bytes (%d)", total, diskBytes)
	}
	return nil
}

// CheckFileName returns "" if name may name a file in the working directory,
// or the rule it breaks: it must be a clean, relative, slash-separated path
// without "..", NUL bytes or control characters.
func CheckFileName(name string) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > maxPathBytes:
		return fmt.Sprintf("must be at most %d bytes", maxPathBytes)
	case strings.IndexByte(name, 0) >= 0:
		return "must not contain NUL bytes"
	case strings.HasPrefix(name, "/"):
		return "must be a relative path, not absolute"
	case strings.Contains(name, "\\"):
		return "must use / as separator, not \\"
	}
	for _, part := range strings.Split(name, "/") {
		switch {
		case part == "..":
			return "must not contain .. (it would leave the working directory)"
		case part == "." || part == "":
			return "must be a clean path (no empty or . components)"
		case len(part) > maxNameBytes:
			return fmt.Sprintf("each component must be at most %d bytes", maxNameBytes)
		}
		for _, c := range part {
			if c < 0x20 || c == 0x7f {
				return "must not contain control characters"
			}
		}
	}
	return ""
}

func validateEnv(env map[string]string) error {
	if len(env) > MaxEnvVars {
		return inputErrorf("env", "must hold at most %d variables, got %d", MaxEnvVars, len(env))
	}
	for k, v := range env {
		if !envNameRE.MatchString(k) {
			return inputErrorf("env", "variable names must match %s, got %q", envNameRE, k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return inputErrorf("env."+k, "must not contain NUL bytes")
		}
	}
	return nil
}
