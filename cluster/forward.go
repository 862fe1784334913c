package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

// ForwardedBy is the header a node adds to a request it forwards, naming
// itself. A request that carries it is served where it arrives, never
// forwarded again: two nodes whose catalogs disagreed could otherwise
// bounce it between them.
const ForwardedBy = "X-Crucible-Forwarded-By"

// Forwarder sends the requests for what other nodes hold (sessions,
// analyses, agent runs, MCP sessions, E2B sandboxes) to them. Create it
// with Node.Forwarder.
type Forwarder struct {
	n         *Node
	transport *http.Transport
}

// Forwarder returns the node's Forwarder.
func (n *Node) Forwarder() *Forwarder {
	return &Forwarder{n: n, transport: &http.Transport{
		Proxy:               nil, // node to node: never through an environment's proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 64, // the default 2 would open a connection per concurrent request
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // pass bodies as they are
	}}
}

// Forward answers r, a request of tenant's already authenticated here,
// when it names something another node holds, and reports whether it
// did; false leaves r to this node's API, which serves what it holds and
// reads the rest from the store (or answers an unknown id 404). What is
// routed (routeOf): /v1/sessions/{id}, /v1/analyses/{id},
// /v1/agent-runs/{id} and all below them, and /mcp by its Mcp-Session-Id.
// GET /v1/sessions lists the tenant's sessions of every node
// (listSessions).
//
//   - Held by another live node: r is proxied to that node's advertised
//     URL as it is, streamed both ways, its Authorization with it: the
//     owner authenticates the key again (every node shares the store) and
//     applies its own checks. Only a request of the tenant the catalog
//     names is forwarded; another tenant's is left to this node, which
//     does not know the id, so that ids reveal nothing across tenants.
//   - Held by a node that is down: what is lost depends on the kind
//     (whenDown): a session answers 410 session_closed, "gone: session
//     ID was on node N, which is down"; an analysis is taken over by
//     this node (its entry moved here, compare-and-set) and rebuilt
//     from the store by its next question; an agent run is read from
//     the store here, and settled interrupted (service.NodeLiveness); an
//     MCP session is unknown here (404: the client initializes again).
//   - The owner did not answer (it died moments ago, or cannot be
//     reached from here): 503, to retry; once its heartbeat has expired
//     the answer is that of a dead owner.
//   - NATS cannot be reached: 503.
//
// The owner of an entry looked up once is remembered (ownerCache):
// after that, a forwarded request asks NATS only whether its node lives.
func (f *Forwarder) Forward(w http.ResponseWriter, r *http.Request, tenant string) bool {
	if isSessionList(r) {
		f.listSessions(w, r)
		return true
	}
	id, k := routeOf(r)
	if id == "" || r.Header.Get(ForwardedBy) != "" || f.n.holds(id) {
		return false
	}
	return f.forward(w, r, id, k, tenant)
}

// ForwardSandbox answers r, a request of the E2B-compatible API for
// sandbox id (package e2bapi: its control plane's /sandboxes/{id} or its
// data plane's E2b-Sandbox-Id), when another live node holds it; a
// sandbox is a session, recorded as one. The E2B API authenticates its
// own requests (an API key, or the sandbox's access token), so the
// owner checks them all: the request is forwarded whichever tenant asks,
// and a sandbox whose node is down is left to this node, which answers
// it as one that does not run (404, or 502 on the data plane).
func (f *Forwarder) ForwardSandbox(w http.ResponseWriter, r *http.Request, id string) bool {
	if id == "" || r.Header.Get(ForwardedBy) != "" || f.n.holds(id) {
		return false
	}
	return f.forward(w, r, id, kindSandbox, "")
}

// forward looks id up and proxies r to its live owner, or answers as a
// dead owner's kind k says; tenant "" forwards whichever tenant asks.
func (f *Forwarder) forward(w http.ResponseWriter, r *http.Request, id string, k kind, tenant string) bool {
	o, node, alive, err := f.n.owner(r.Context(), id, true)
	if err == nil && !alive {
		// The cached entry may be stale (an analysis taken over since):
		// read it again before deciding the owner is gone.
		o, node, alive, err = f.n.owner(r.Context(), id, false)
	}
	for attempt := 0; err == nil && !alive && k == kindAnalysis && attempt < 2; attempt++ {
		if o.Tenant != tenant || o.Node == f.n.cfg.NodeID {
			break
		}
		taken, terr := f.n.takeOver(r.Context(), id, o)
		if terr != nil {
			err = terr
			break
		}
		if taken {
			f.n.log.Info("took over an analysis of a dead node", "analysis", id, "from", o.Node)
			return false
		}
		// Another node took it meanwhile: forward to it.
		o, node, alive, err = f.n.owner(r.Context(), id, false)
	}
	switch {
	case errors.Is(err, ErrUnknown):
		return false
	case err != nil:
		f.n.log.Warn("cannot look up the node of "+k.String(), "id", id, "err", err)
		writeError(w, api.CodeUnavailable, fmt.Sprintf("cannot find %s %s's node: this node cannot reach the cluster (NATS); retry, or use another node", k, id))
		return true
	case tenant != "" && o.Tenant != tenant || o.Node == f.n.cfg.NodeID:
		return false
	case !alive && k == kindSession:
		writeError(w, api.CodeSessionClosed, fmt.Sprintf("gone: session %s was on node %s, which is down", id, o.Node))
		return true
	case !alive:
		return false
	}
	target, err := url.Parse(node.Advertise)
	if err != nil {
		f.n.log.Error("a node advertises a bad URL", "node", node.ID, "advertise", node.Advertise, "err", err)
		writeError(w, api.CodeUnavailable, fmt.Sprintf("%s %s is on node %s, which cannot be reached from here", k, id, node.ID))
		return true
	}
	// The owner may answer (and the answer be passed on) before the
	// request's body has all been sent to it: an E2B code cell's NDJSON
	// starts while a chunked body's last chunk is in flight. By default
	// an HTTP/1 server closes the request's body once its answer has
	// started; the body's copy to the owner then fails and the
	// connection is cut mid-answer. Full duplex keeps the body readable.
	_ = http.NewResponseController(w).EnableFullDuplex()
	f.proxy(target, node.ID, k, id).ServeHTTP(w, r)
	return true
}

// proxy returns the reverse proxy of one request for k id to node's
// target.
func (f *Forwarder) proxy(target *url.URL, node string, k kind, id string) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target) // the owner's Host: its own check of Host passes
			pr.Out.Header.Set(ForwardedBy, f.n.cfg.NodeID)
			// This node checked the browser's headers against its own
			// Host; the owner, reached under another Host, would take a
			// same-origin request for a cross-site one.
			for _, h := range []string{"Origin", "Sec-Fetch-Site", "Sec-Fetch-Mode", "Sec-Fetch-Dest"} {
				pr.Out.Header.Del(h)
			}
		},
		Transport:     f.transport,
		FlushInterval: -1, // streams (SSE, cells' output) pass as they come
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			f.n.log.Warn("forwarding to the node of "+k.String()+" failed", "id", id, "to", node, "err", err)
			// The request is full duplex (forward): its body may be
			// left unread, with a read of it still pending, and
			// net/http's server cannot then read the connection's next
			// request safely (it panicked: "invalid concurrent
			// Body.Read call", the client's next request reset). The
			// connection ends with this answer.
			w.Header().Set("Connection", "close")
			writeError(w, api.CodeUnavailable, fmt.Sprintf("%s %s is on node %s, which did not answer: retry in a few seconds (if the node is down, %s)", k, id, node, k.whenDown()))
		},
	}
}

// writeError answers the API's JSON error of code; a 503 tells the
// client to retry in a second, as the API's own do.
func writeError(w http.ResponseWriter, code, message string) {
	status := api.HTTPStatus(code)
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.Error{Code: code, Message: message}})
}
