package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// PolicyMode says what the static code policy does with what it finds in
// a program before the program runs. The policy is a seatbelt, never the
// boundary: the sandbox is (see package policy).
type PolicyMode string

// The policy modes, from the loosest to the strictest.
const (
	// PolicyOff checks nothing.
	PolicyOff PolicyMode = "off"
	// PolicyWarn checks the code, runs it whatever is found, and records
	// the findings in the result.
	PolicyWarn PolicyMode = "warn"
	// PolicyBlock checks the code and, when anything is found, runs none
	// of it: the result has StatusBlocked and the findings.
	PolicyBlock PolicyMode = "block"
)

// PolicyModes lists the modes from the loosest to the strictest, in a
// slice of the caller's own.
func PolicyModes() []PolicyMode { return slices.Clone(policyModes) }

// policyModes is what PolicyModes returns; Rank is the index in it.
var policyModes = []PolicyMode{PolicyOff, PolicyWarn, PolicyBlock}

// Rank orders the modes: off 0 < warn 1 < block 2; -1 for an unknown one.
func (m PolicyMode) Rank() int {
	for i, v := range policyModes {
		if v == m {
			return i
		}
	}
	return -1
}

// Stricter returns the stricter of m and o (an empty mode counts as off).
func (m PolicyMode) Stricter(o PolicyMode) PolicyMode {
	if o.Rank() > m.Rank() {
		return o
	}
	if m == "" {
		return PolicyOff
	}
	return m
}

// Policy is the static code policy a request asks for. In JSON it is
// either a mode alone, "block", or an object, {"mode": "block", "preset":
// "strict"}. A request may only tighten the policy its server and tenant
// set: the service applies the strictest mode of the three.
type Policy struct {
	// Mode is "off", "warn" or "block".
	Mode PolicyMode `json:"mode"`
	// Preset names the rules checked; empty is the server's (the built-in
	// "strict" preset unless configured otherwise).
	Preset string `json:"preset,omitempty"`
}

// UnmarshalJSON accepts a mode alone ("warn") as well as the object form,
// whose unknown fields it refuses.
func (p *Policy) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var mode string
		if err := json.Unmarshal(b, &mode); err != nil {
			return err
		}
		*p = Policy{Mode: PolicyMode(mode)}
		return nil
	}
	type plain Policy // without this method
	var q plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // a misspelt "preset" must not pass unseen
	if err := dec.Decode(&q); err != nil {
		return fmt.Errorf("policy: want a mode (\"block\") or {\"mode\": ..., \"preset\": ...}: %w", err)
	}
	*p = Policy(q)
	return nil
}

// Validate checks the mode; the preset is checked by the service, which
// knows the presets.
func (p *Policy) Validate() error {
	if p.Mode.Rank() < 0 {
		return inputErrorf("policy.mode", "must be one of %s, got %q", policyModeNames(), p.Mode)
	}
	return nil
}

func policyModeNames() string {
	names := make([]string, len(policyModes))
	for i, m := range policyModes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// CodeRules are the resolved rules a runtime checks Python code against
// inside the sandbox, before any of it runs (the service checks the other
// languages itself). Names are matched exactly; a module also matches its
// submodules ("os" matches "os.path").
type CodeRules struct {
	// Mode is PolicyWarn or PolicyBlock.
	Mode PolicyMode `json:"mode"`
	// Preset names the preset the rules come from, for the messages.
	Preset string `json:"preset"`
	// Modules are the modules that may not be imported.
	Modules []string `json:"modules"`
	// Calls are the builtins that may not be called nor named.
	Calls []string `json:"calls"`
	// Introspection are the calls that reach a namespace by name
	// (globals, locals, vars), reported as evasion.
	Introspection []string `json:"introspection"`
	// Attributes are the attributes (and getattr names) that lead from
	// any object to the interpreter's internals (__subclasses__,
	// __globals__, f_globals), reported as evasion.
	Attributes []string `json:"attributes"`
	// Members are module members ("sys.modules") that reach what the
	// other rules block, reported as evasion when read from the module
	// or imported from it.
	Members []string `json:"members"`
}

// Finding is one thing the static code policy found in a program.
type Finding struct {
	// Rule names the rule: "blocked-import", "blocked-call",
	// "dynamic-import", "evasion-getattr", "evasion-introspection",
	// "evasion-attribute", "evasion-member", "blocked-command" or
	// "uncheckable".
	Rule string `json:"rule"`
	// Line is the 1-based line of the finding in the code, 0 if unknown.
	Line int `json:"line"`
	// Column is the 1-based column (in characters), 0 if unknown.
	Column int `json:"column"`
	// Snippet is the line of code, trimmed and cut to MaxSnippetRunes.
	Snippet string `json:"snippet"`
	// Message says what was found and which rule forbids it.
	Message string `json:"message"`
}

// String formats a finding as one line: "line 1, col 1: blocked-import:
// module socket is blocked (strict): import socket".
func (f Finding) String() string {
	return fmt.Sprintf("line %d, col %d: %s: %s: %s", f.Line, f.Column, f.Rule, f.Message, f.Snippet)
}

// Bounds on the findings of one program: a check reports at most
// MaxFindings, each snippet cut to MaxSnippetRunes characters.
const (
	MaxFindings     = 50
	MaxSnippetRunes = 120
	maxMessageRunes = 300
)

// BoundFindings cuts a list of findings that came from inside a sandbox
// to MaxFindings, each snippet and message to its bound.
func BoundFindings(fs []Finding) []Finding {
	if len(fs) > MaxFindings {
		fs = fs[:MaxFindings]
	}
	for i := range fs {
		fs[i].Snippet = cutRunes(fs[i].Snippet, MaxSnippetRunes)
		fs[i].Message = cutRunes(fs[i].Message, maxMessageRunes)
		fs[i].Rule = cutRunes(fs[i].Rule, 40)
	}
	return fs
}

func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
