package server

import (
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/mcpserver"
)

// mcpIdleTimeout closes an MCP session idle that long, so that clients
// that go away without closing do not hold sessions forever.
const mcpIdleTimeout = DefaultIdleTimeout * 15

// mcpHandlers serves /mcp: the Model Context Protocol over streamable HTTP,
// one handler per tenant, so that an MCP session's ID is only ever looked
// up among its own tenant's sessions.
type mcpHandlers struct {
	s *Server

	mu     sync.Mutex
	tenant map[string]http.Handler
}

// ServeHTTP serves r as its tenant (set by Handler's authentication),
// with the body bounded and its type checked as for the rest of the API
// (the SDK refuses another type too, but in plain text).
func (m *mcpHandlers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		if apiErr := needContentType(r, jsonType); apiErr != nil {
			writeError(w, apiErr)
			return
		}
	}
	tenant := tenantOf(r)
	// Its swe tool carries a repository: the limit is an agent run's.
	r.Body = http.MaxBytesReader(w, r.Body, m.s.svc.MaxAgentRunBodyBytes(tenant))
	m.of(tenant).ServeHTTP(w, r)
}

// of returns tenant's handler, created on first use.
func (m *mcpHandlers) of(tenant string) http.Handler {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h, ok := m.tenant[tenant]; ok {
		return h
	}
	srv := mcpserver.New(m.s.svc, tenant, mcpserver.Version, m.s.mcpCatalog(tenant))
	// A web page must not drive the tools through its visitor's browser:
	// Handler refuses a foreign Host (DNS rebinding) and a browser's
	// cross-site request on every route, this one included (browser.go).
	// The SDK's own Host check is off: it is the same rule, less the
	// names of Config.AllowedHosts, which it would refuse.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: mcpIdleTimeout, Logger: m.s.log, DisableLocalhostProtection: true})
	m.tenant[tenant] = h
	return h
}
