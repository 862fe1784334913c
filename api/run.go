package api

import (
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Statuses a run has before it ends, and after the server lost it. A Run's
// Status is one of these or one of the sandbox statuses (sandbox.StatusOK,
// ...).
const (
	// StatusQueued: the run is waiting for a sandbox.
	StatusQueued sandbox.Status = "queued"
	// StatusRunning: the run is executing.
	StatusRunning sandbox.Status = "running"
	// StatusInterrupted: the server stopped while the run was queued or
	// running; its result is lost (a server marks them so when it starts again).
	StatusInterrupted sandbox.Status = "interrupted"
	// StatusLost: in cluster mode, the run had started on a node that
	// died before it ended; its result is lost, and it is not run again
	// (its reason names the node).
	StatusLost sandbox.Status = "lost"
)

// ValidStatus reports whether s is a status a Run may carry: a sandbox
// status, StatusQueued, StatusRunning, StatusInterrupted or StatusLost.
func ValidStatus(s sandbox.Status) bool {
	switch s {
	case StatusQueued, StatusRunning, StatusInterrupted, StatusLost,
		sandbox.StatusOK, sandbox.StatusError, sandbox.StatusTimeout,
		sandbox.StatusCPULimit, sandbox.StatusMemoryLimit, sandbox.StatusOutputLimit,
		sandbox.StatusKilled, sandbox.StatusBlocked, sandbox.StatusInternal:
		return true
	}
	return false
}

// Run is the record of one execution, from the moment it is queued to its
// result.
type Run struct {
	// ID identifies the run across all tenants. Create fills in a random one
	// when it is empty.
	ID string `json:"id"`
	// Tenant owns the run; no other tenant can read it.
	Tenant string `json:"tenant"`
	// Language is the language of the code.
	Language sandbox.Language `json:"language"`
	// CodeHash is the hex SHA-256 of the code as submitted, before
	// redaction.
	CodeHash string `json:"code_hash"`
	// Code is the program's source text, redacted like the output: a
	// secret in it is stored and answered as a marker.
	Code string `json:"code"`
	// Image names the image the code ran in, among those the server
	// offered (GET /v1/images); empty in the records of older servers.
	Image string `json:"image,omitempty"`
	// ImageDigest identifies the root filesystem the code ran in.
	ImageDigest string `json:"image_digest,omitempty"`
	// Limits are the limits applied, defaults filled in.
	Limits sandbox.Limits `json:"limits"`
	// Status is where the run stands: StatusQueued, StatusRunning,
	// StatusInterrupted, StatusLost, or the sandbox status it ended with. Create sets
	// StatusQueued when it is empty.
	Status sandbox.Status `json:"status"`
	// ExitCode is the program's exit code, or -1 when it was ended by a
	// signal or never started.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that ended the program, if any.
	Signal string `json:"signal,omitempty"`
	// Reason explains a status other than ok or error.
	Reason string `json:"reason,omitempty"`
	// Metrics measure the run.
	Metrics sandbox.Metrics `json:"metrics"`
	// Stdout is the program's standard output, already redacted.
	Stdout sandbox.Data `json:"stdout"`
	// Stderr is the program's standard error, already redacted.
	Stderr sandbox.Data `json:"stderr"`
	// StdoutTruncated is set when stdout was cut at the output limit.
	StdoutTruncated bool `json:"stdout_truncated,omitempty"`
	// StderrTruncated is set when stderr was cut at the output limit.
	StderrTruncated bool `json:"stderr_truncated,omitempty"`
	// Error is the program's structured error, if it failed with one.
	Error *sandbox.ExecError `json:"error,omitempty"`
	// Policy is the static code policy the code was checked under; nil
	// when none was.
	Policy *sandbox.Policy `json:"policy,omitempty"`
	// Findings are what the policy found (see sandbox.Result.Findings),
	// redacted like the code.
	Findings []sandbox.Finding `json:"findings,omitempty"`
	// Artifacts describe the files the run produced; their contents are not
	// stored.
	Artifacts []ArtifactMeta `json:"artifacts,omitempty"`
	// Network logs the connections of a run with a network allowlist
	// (see sandbox.NetworkLog); nil for a run without network.
	Network *sandbox.NetworkLog `json:"network,omitempty"`
	// CacheHit is set when the result was served from the cache instead of
	// running the code again.
	CacheHit bool `json:"cache_hit"`
	// SessionID names the session a cell ran in; empty for a stateless
	// run.
	SessionID string `json:"session_id,omitempty"`
	// AgentRun names the agent run that made this execution; empty for
	// a run a caller asked for directly.
	AgentRun string `json:"agent_run,omitempty"`
	// Node names the cluster node that executes the run (cluster mode);
	// empty on a single server, and while a run waits in the cluster's
	// queue.
	Node string `json:"node,omitempty"`
	// Redactions counts the secrets the caller redacted from the output.
	Redactions int `json:"redactions"`
	// CreatedAt is when the run was accepted. Create sets the current time
	// when it is zero.
	CreatedAt time.Time `json:"created_at"`
	// StartedAt is when the program started; nil before.
	StartedAt *time.Time `json:"started_at,omitempty"`
	// FinishedAt is when the run ended; nil before.
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// ArtifactMeta describes an artifact without its content.
type ArtifactMeta struct {
	// Name is the path relative to the working directory.
	Name string `json:"name"`
	// MIME is the media type, such as "image/png".
	MIME string `json:"mime"`
	// Size is the content length in bytes.
	Size int64 `json:"size"`
	// SHA256 is the hex SHA-256 of the content; empty when Withheld or
	// when the host did not read it (see sandbox.Artifact).
	SHA256 string `json:"sha256"`
	// Withheld, when set, says why the content is not kept (see
	// sandbox.Artifact.Withheld).
	Withheld string `json:"withheld,omitempty"`
}

// ArtifactMetas returns the metadata of a result's artifacts, in the same
// order, or nil when there are none.
func ArtifactMetas(as []sandbox.Artifact) []ArtifactMeta {
	if len(as) == 0 {
		return nil
	}
	ms := make([]ArtifactMeta, len(as))
	for i, a := range as {
		ms[i] = ArtifactMeta{Name: a.Name, MIME: a.MIME, Size: a.Size, SHA256: a.SHA256, Withheld: a.Withheld}
	}
	return ms
}

// Artifact is the artifact m describes, without its content, as a replay
// of the run's record gives it.
func (m ArtifactMeta) Artifact() sandbox.Artifact {
	return sandbox.Artifact{Name: m.Name, MIME: m.MIME, Size: m.Size, SHA256: m.SHA256, Withheld: m.Withheld}
}
