package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPCatalog records MCP sessions' ids as this node's (package cluster's
// Node): the other nodes forward their requests here.
type MCPCatalog interface {
	// Opened records tenant's MCP session id as this node's.
	Opened(ctx context.Context, id, tenant string) error
	// Ended forgets it.
	Ended(id string)
}

// mcpCatalog returns the options of tenant's MCP server that put its
// sessions on Config.MCPSessions' record: an id is recorded when the
// session is made (before the client learns it: its next request may
// reach any node), and forgotten when the session ends (closed by its
// client, or idle for mcpIdleTimeout). A session whose id cannot be
// recorded (NATS cut off) still works through this node. Without a
// catalog, the SDK's own ids and nothing else.
func (s *Server) mcpCatalog(tenant string) func(*mcp.ServerOptions) {
	cat := s.cfg.MCPSessions
	return func(o *mcp.ServerOptions) {
		if cat == nil {
			return
		}
		o.GetSessionID = func() string {
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			id := "mcp_" + hex.EncodeToString(b)
			if err := cat.Opened(context.Background(), id, tenant); err != nil {
				s.log.Warn("an MCP session is not on the cluster's record: it is reached through this node only", "err", err)
			}
			return id
		}
		o.InitializedHandler = func(_ context.Context, req *mcp.InitializedRequest) {
			ss := req.Session
			go func() {
				_ = ss.Wait()
				cat.Ended(ss.ID())
			}()
		}
	}
}
