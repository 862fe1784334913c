package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

// ForwardedBy is the header a node adds to a request it forwards, naming
// itself. A request that carries it is served where it arrives, never
// forwarded again: two nodes whose catalogs disagreed could otherwise
// bounce it between them.
const ForwardedBy = "X-Crucible-Forwarded-By"

// sessionsPrefix starts the paths Forward routes: a session and
// everything under it.
const sessionsPrefix = "/v1/sessions/"

// Forwarder sends the requests for sessions other nodes hold to them.
// Create it with Node.Forwarder.
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

// sessionOf returns the session id r's path names under /v1/sessions/,
// "" for none.
func sessionOf(r *http.Request) string {
	rest, ok := strings.CutPrefix(r.URL.Path, sessionsPrefix)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "/")
	return id
}

// Forward answers r, a request of tenant's already authenticated here,
// when it names a session (/v1/sessions/{id} and below) that another
// node holds, and reports whether it did; false leaves r to this node's
// API, which serves its own sessions and answers an unknown id 404.
//
//   - Held by another live node: r is proxied to that node's advertised
//     URL as it is, streamed both ways, its Authorization with it: the
//     owner authenticates the key again (every node shares the store) and
//     applies its own checks. Only a request of the tenant the catalog
//     names is forwarded; another tenant's is left to this node, which
//     does not know the id, so that ids reveal nothing across tenants.
//   - Held by a node that is down: 410 session_closed, "gone: session ID
//     was on node N, which is down". Its state died with the node: the
//     answer is that of a closed session, and clients open a new one.
//   - The owner did not answer (it died moments ago, or cannot be
//     reached from here): 503, to retry; once its heartbeat has expired
//     the answer is 410.
//   - NATS cannot be reached: 503.
//
// The owner of a session looked up once is remembered (ownerCache):
// after that, a forwarded request asks NATS only whether its node lives.
func (f *Forwarder) Forward(w http.ResponseWriter, r *http.Request, tenant string) bool {
	id := sessionOf(r)
	if id == "" || r.Header.Get(ForwardedBy) != "" || f.n.holds(id) {
		return false
	}
	o, node, alive, err := f.n.owner(r.Context(), id, true)
	switch {
	case errors.Is(err, ErrUnknown):
		return false
	case err != nil:
		f.n.log.Warn("cannot look up a session's node", "session", id, "err", err)
		writeError(w, api.CodeUnavailable, fmt.Sprintf("cannot find session %s's node: this node cannot reach the cluster (NATS); retry, or use another node", id))
		return true
	case o.Tenant != tenant || o.Node == f.n.cfg.NodeID:
		return false
	case !alive:
		writeError(w, api.CodeSessionClosed, fmt.Sprintf("gone: session %s was on node %s, which is down", id, o.Node))
		return true
	}
	target, err := url.Parse(node.Advertise)
	if err != nil {
		f.n.log.Error("a node advertises a bad URL", "node", node.ID, "advertise", node.Advertise, "err", err)
		writeError(w, api.CodeUnavailable, fmt.Sprintf("session %s is on node %s, which cannot be reached from here", id, node.ID))
		return true
	}
	f.proxy(target, node.ID, id).ServeHTTP(w, r)
	return true
}

// proxy returns the reverse proxy of one request to node's target.
func (f *Forwarder) proxy(target *url.URL, node, session string) *httputil.ReverseProxy {
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
			f.n.log.Warn("forwarding to a session's node failed", "session", session, "to", node, "err", err)
			writeError(w, api.CodeUnavailable, fmt.Sprintf("session %s is on node %s, which did not answer: retry; if the node is down, the session is gone", session, node))
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
