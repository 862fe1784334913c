package api

import (
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// SessionInfo describes an open session: the answer to POST /v1/sessions
// and GET /v1/sessions/{id}, and an item of GET /v1/sessions.
type SessionInfo struct {
	// ID names the session.
	ID string `json:"id"`
	// Language is the kernel's language, "python".
	Language sandbox.Language `json:"language"`
	// Image names the image the session runs in.
	Image string `json:"image"`
	// ImageDigest identifies the image's root filesystem, when it has a
	// digest (a built image does; the host's directories do not).
	ImageDigest string `json:"image_digest,omitempty"`
	// Limits are the session's limits, defaults filled in: memory,
	// processes, disk and open files for the whole session; wall time,
	// CPU time and output for each cell.
	Limits sandbox.Limits `json:"limits"`
	// Cells counts the cells run in the session so far.
	Cells int `json:"cells"`
	// Restarts counts the times the session's interpreter was restarted
	// because a cell ran out of memory (that cell's Result has Restarted
	// set): each time every variable was lost and the files were kept.
	Restarts int `json:"restarts"`
	// AgentRun names the agent run that opened the session, if one did.
	AgentRun string `json:"agent_run,omitempty"`
	// CreatedAt is when the session was opened.
	CreatedAt time.Time `json:"created_at"`
	// LastUsedAt is when the session last ran a cell or touched a file
	// for its caller (CreatedAt until then). A session unused for the
	// server's idle timeout is closed.
	LastUsedAt time.Time `json:"last_used_at"`
}

// SessionList is the answer to GET /v1/sessions: the caller's open
// sessions, newest first.
type SessionList struct {
	// Sessions are the open sessions.
	Sessions []SessionInfo `json:"sessions"`
	// Defaults are the limits a new session gets on this server for the
	// fields its request leaves zero: sandbox.DefaultSessionLimits, each
	// lowered to the server's maxima.
	Defaults sandbox.Limits `json:"defaults"`
}
