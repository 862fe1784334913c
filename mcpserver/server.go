package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/service"
)

// Name is the server's name in the MCP handshake.
const Name = "crucible"

// Version is the version both transports (crucible mcp, /mcp) report in
// the MCP handshake.
const Version = "0.1.0"

// instructions tell a client's model what the server is for.
const instructions = `Crucible runs code in an isolated Linux sandbox with no network.
Use run_code for a one-off program (Python, JavaScript or Bash); files it writes come back as
artifacts (PNG charts as images). Use a session (session_create, session_exec, session_files,
session_close) when state must persist between steps, as in a notebook. run_get reads a past run.
To analyse data files, analysis_create loads and profiles them, and analysis_ask has Crucible's
analyst agent answer questions about them (when the server has a model). To change a repository
(fix a bug, make a failing test pass), swe has the software-engineering agent work on a copy of it
and returns the diff, verified by the tests in a fresh sandbox (when the server has a model).`

// handlers holds what every tool needs: the service and the tenant the
// calls act as.
type handlers struct {
	svc    *service.Service
	tenant string
}

// New returns an MCP server whose tools act as tenant on svc. version is
// reported to clients in the handshake. Each of with may set more of the
// server's options (a cluster's node records its sessions' ids).
func New(svc *service.Service, tenant, version string, with ...func(*mcp.ServerOptions)) *mcp.Server {
	opts := &mcp.ServerOptions{Instructions: instructions}
	for _, f := range with {
		f(opts)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "Crucible code sandbox", Version: version}, opts)
	h := &handlers{svc: svc, tenant: tenant}
	h.addRunTools(s)
	h.addSessionTools(s)
	h.addAnalysisTools(s)
	h.addSWETools(s)
	h.addResources(s)
	h.addPrompts(s)
	return s
}
