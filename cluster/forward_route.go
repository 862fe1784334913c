package cluster

import (
	"net/http"
	"strings"
)

// kind is what a forwarded id names; the catalog holds them all under
// their ids, which differ by their prefixes (package ids).
type kind int

const (
	kindSession kind = iota + 1
	kindAnalysis
	kindAgentRun
	kindMCP
	kindSandbox
)

// String names k in messages.
func (k kind) String() string {
	switch k {
	case kindAnalysis:
		return "analysis"
	case kindAgentRun:
		return "agent run"
	case kindMCP:
		return "MCP session"
	case kindSandbox:
		return "sandbox"
	}
	return "session"
}

// whenDown says what becomes of k once its node is down.
func (k kind) whenDown() string {
	switch k {
	case kindAnalysis:
		return "another node rebuilds the analysis from the store"
	case kindAgentRun:
		return "the run is read from the store, interrupted"
	case kindMCP:
		return "the MCP session is gone: initialize a new one"
	case kindSandbox:
		return "the sandbox is gone"
	}
	return "the session is gone"
}

// routes are the paths Forward routes by the id that follows them.
var routes = []struct {
	prefix string
	kind   kind
}{
	{"/v1/sessions/", kindSession},
	{"/v1/analyses/", kindAnalysis},
	{"/v1/agent-runs/", kindAgentRun},
}

// MCPSessionHeader carries an MCP session's id (streamable HTTP).
const MCPSessionHeader = "Mcp-Session-Id"

// routeOf returns the id r names and its kind, "" for a request this
// node serves whatever it is (a list, a creation, anything else).
func routeOf(r *http.Request) (string, kind) {
	for _, rt := range routes {
		if rest, ok := strings.CutPrefix(r.URL.Path, rt.prefix); ok {
			id, _, _ := strings.Cut(rest, "/")
			return id, rt.kind
		}
	}
	if r.URL.Path == "/mcp" {
		if id := r.Header.Get(MCPSessionHeader); id != "" {
			return id, kindMCP
		}
	}
	return "", 0
}
