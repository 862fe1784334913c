package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

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

// mcpInitWindow is how long a new MCP session's id stays on record
// without the client's notifications/initialized: the SDK makes a
// session (and asks for its id) for every POST without one, and closes
// at once those whose initialization failed, without a word to its
// options; their entries are taken off when the window ends.
var mcpInitWindow = 30 * time.Second // a variable for the tests (export_test.go)

// mcpCatalog returns the options of tenant's MCP server that put its
// sessions on Config.MCPSessions' record: an id is recorded when the
// session is made (before the client learns it: its next request may
// reach any node), and forgotten when the session ends (closed by its
// client, or idle for mcpIdleTimeout), or mcpInitWindow after it was
// made if the client never said it was initialized. A session whose id
// cannot be recorded (NATS cut off) still works through this node.
// Without a catalog, the SDK's own ids and nothing else.
func (s *Server) mcpCatalog(tenant string) func(*mcp.ServerOptions) {
	cat := s.cfg.MCPSessions
	var mu sync.Mutex
	pending := map[string]*time.Timer{}
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
				return id
			}
			mu.Lock()
			pending[id] = time.AfterFunc(mcpInitWindow, func() {
				mu.Lock()
				_, still := pending[id]
				delete(pending, id)
				mu.Unlock()
				if still {
					cat.Ended(id)
				}
			})
			mu.Unlock()
			return id
		}
		o.InitializedHandler = func(_ context.Context, req *mcp.InitializedRequest) {
			ss := req.Session
			mu.Lock()
			t, ok := pending[ss.ID()]
			delete(pending, ss.ID())
			mu.Unlock()
			if !ok {
				return // not on record, or its window passed
			}
			t.Stop()
			go func() {
				_ = ss.Wait()
				cat.Ended(ss.ID())
			}()
		}
	}
}
