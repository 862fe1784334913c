package e2bapi

import (
	"net/http"
	"strings"
)

// SandboxID returns the sandbox a request is for, given its path below
// the API's prefix and its header: the E2b-Sandbox-Id header of a
// data-plane request, or the id of
// a control-plane path /sandboxes/{id}... (/v2/sandboxes/{id}/...); ""
// for the rest (create, list). A cluster's node forwards by it to the
// node that holds the sandbox.
func SandboxID(path string, h http.Header) string {
	if id := h.Get(headerSandboxID); id != "" {
		return id
	}
	p := strings.TrimPrefix(path, "/v2")
	rest, ok := strings.CutPrefix(p, "/sandboxes/")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	return id
}
