// Package ids is the one scheme of Crucible's random IDs: a kind's
// prefix and a number of random bytes in lower-case hex. Each kind keeps
// the form its IDs have always had, so that stored IDs and URLs stay
// valid: sessions "ses_" and 24 hex digits, agent runs "agt_" and 16,
// analyses "ana_" and 16, approvals "apr_" and 16, API keys "key_" and
// 12, run records 32 hex digits without a prefix. It imports nothing of
// Crucible's, so that every package may use it.
package ids

import (
	"crypto/rand"
	"encoding/hex"
)

// Kind is a kind of ID. Its form is fixed here, not by its users.
type Kind int

// The kinds of ID.
const (
	// Run names a run record (store.Store).
	Run Kind = iota
	// Session names a sandbox session.
	Session
	// AgentRun names an agent run.
	AgentRun
	// Analysis names a data analysis.
	Analysis
	// Approval names a program waiting for a person's approval.
	Approval
	// APIKey names an API key (not its secret).
	APIKey
)

// form is a kind's prefix and random bytes.
type form struct {
	prefix string
	bytes  int
}

// forms holds each kind's form; unexported, so that no importer changes
// the form of an ID.
var forms = [...]form{
	Run:      {"", 16},
	Session:  {"ses_", 12},
	AgentRun: {"agt_", 8},
	Analysis: {"ana_", 8},
	Approval: {"apr_", 8},
	APIKey:   {"key_", 6},
}

// New returns a new random ID of kind k: its prefix and its random bytes
// from crypto/rand in hex.
func New(k Kind) string {
	f := forms[k]
	b := make([]byte, f.bytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return f.prefix + hex.EncodeToString(b)
}
