package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

// sessionsPath is the list of a tenant's sessions, which each node
// holds in memory: a node asked for it asks every live node (itself
// too) and answers the union.
const sessionsPath = "/v1/sessions"

// maxListBytes bounds one node's answer to the list of sessions (a
// tenant holds at most its limit of sessions, each a few hundred bytes).
const maxListBytes = 8 << 20

// listTimeout bounds the wait for one node's list.
const listTimeout = 5 * time.Second

// isSessionList reports whether r asks for the list of sessions, which
// ListSessions answers.
func isSessionList(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == sessionsPath && r.Header.Get(ForwardedBy) == ""
}

// listSessions answers GET /v1/sessions with the sessions of the asking
// tenant on every live node: each is asked with the request's own
// Authorization (each authenticates the key) and ForwardedBy (each
// answers its own sessions). A node that does not answer is left out of
// the list, and named in the header X-Crucible-Nodes-Missing; without
// any node's answer (NATS cannot be reached) it is 503.
func (f *Forwarder) listSessions(w http.ResponseWriter, r *http.Request) {
	nodes, err := f.n.Nodes(r.Context())
	if err != nil {
		writeError(w, api.CodeUnavailable, "cannot list the cluster's nodes: this node cannot reach the cluster (NATS); retry, or use another node")
		return
	}
	type answer struct {
		node string
		list api.SessionList
		err  error
	}
	answers := make([]answer, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i].node = node.ID
			answers[i].list, answers[i].err = f.nodeSessions(r, node)
		}()
	}
	wg.Wait()
	var out api.SessionList
	out.Sessions = []api.SessionInfo{}
	var first error
	for _, a := range answers {
		if a.err != nil {
			f.n.log.Warn("a node did not list its sessions", "node", a.node, "err", a.err)
			w.Header().Add("X-Crucible-Nodes-Missing", a.node)
			if first == nil {
				first = a.err
			}
			continue
		}
		if a.node == f.n.cfg.NodeID || out.Defaults == (api.SessionList{}).Defaults {
			out.Defaults = a.list.Defaults
		}
		out.Sessions = append(out.Sessions, a.list.Sessions...)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// nodeSessions asks node for the sessions of r's tenant.
func (f *Forwarder) nodeSessions(r *http.Request, node NodeInfo) (api.SessionList, error) {
	ctx, cancel := context.WithTimeout(r.Context(), listTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, node.Advertise+sessionsPath, nil)
	if err != nil {
		return api.SessionList{}, err
	}
	if a := r.Header.Get("Authorization"); a != "" {
		req.Header.Set("Authorization", a)
	}
	req.Header.Set(ForwardedBy, f.n.cfg.NodeID)
	resp, err := (&http.Client{Transport: f.transport}).Do(req)
	if err != nil {
		return api.SessionList{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListBytes+1))
	switch {
	case err != nil:
		return api.SessionList{}, err
	case len(body) > maxListBytes:
		return api.SessionList{}, fmt.Errorf("its list is over %d bytes", maxListBytes)
	case resp.StatusCode != http.StatusOK:
		return api.SessionList{}, fmt.Errorf("it answered %s", resp.Status)
	}
	var list api.SessionList
	if err := json.Unmarshal(body, &list); err != nil {
		return api.SessionList{}, fmt.Errorf("its list: %w", err)
	}
	return list, nil
}
