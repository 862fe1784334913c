package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/crucible-sandbox/crucible/api"
)

// Requests a browser was made to send: a web page the operator visits
// must not drive this server through the operator's browser. Handler
// makes two checks on every request, whatever its route (/v1/, /mcp, the
// web UI, /metrics, /healthz, /openapi.json), before anything else:
//
//   - DNS rebinding. A page at http://evil.test:8080 makes its own name
//     resolve to 127.0.0.1: its requests then reach this server as
//     same-origin ones, and the browser sends "Host: evil.test:8080". So
//     the Host must name this server: a loopback name (localhost, an
//     address of 127.0.0.0/8, ::1; any port), the IP address the
//     connection arrived at (a server listening beyond loopback, reached
//     by its address), or a name of Config.AllowedHosts. A rebinding page
//     can send none of them (its Host is always its own name). The rule
//     holds with API keys as without: a key protects /v1/ and /mcp from
//     a page that has none, but /metrics and the web UI are open, and the
//     rule costs a legitimate client nothing (a server reached by a DNS
//     name or through a reverse proxy lists that name). A request over a
//     unix socket is exempt: no browser connects to one, and the socket
//     file's permissions are its gate.
//   - Cross-site requests. A page's form or fetch() may POST to any URL
//     without a preflight when its body is text/plain, a form or
//     multipart. http.CrossOriginProtection refuses an unsafe method
//     (anything but GET, HEAD and OPTIONS) whose Sec-Fetch-Site is not
//     same-origin or none, or, from an older browser without it, whose
//     Origin does not match Host. Clients that are not browsers (curl,
//     the Go client, MCP clients) send neither header and pass.
//
// A third rule, where a JSON body is read (decode.go), refuses one not
// sent as application/json: defence in depth, since a page may post
// text/plain, a form or multipart anywhere without a preflight but
// application/json only to its own origin, so that even a browser that
// sent neither Origin nor Sec-Fetch-Site could not post a JSON body.

// checkBrowser answers the refusal of r by the rules above, nil if it
// passes.
func (s *Server) checkBrowser(r *http.Request) *api.Error {
	if !s.hostAllowed(r) {
		e := newError(api.CodeForbidden, "the Host header %q does not name this server (a request under another name is refused: DNS rebinding)", r.Host)
		e.Field, e.Rule = "Host", "must be localhost, an address of 127.0.0.0/8 or [::1] (any port), the address the server was reached at, or a name the server allows (crucible serve --allowed-host)"
		return e
	}
	if err := s.crossOrigin.Check(r); err != nil {
		field := "Origin"
		if r.Header.Get("Sec-Fetch-Site") != "" {
			field = "Sec-Fetch-Site"
		}
		e := newError(api.CodeForbidden, "a cross-site request from a browser is refused: %v", err)
		e.Field, e.Rule = field, "must show a same-origin request for "+r.Method+" (or be absent, as from a client that is not a browser)"
		return e
	}
	return nil
}

// hostAllowed reports whether r's Host names this server; see above.
func (s *Server) hostAllowed(r *http.Request) bool {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if _, ok := local.(*net.UnixAddr); ok {
		return true
	}
	host := hostOf(r.Host)
	if host == "localhost" || s.allowedHosts[host] {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap().WithZone("")
	if ip.IsLoopback() || s.allowedHosts[ip.String()] {
		return true
	}
	// The address the connection arrived at (absent when the handler is
	// called other than by an http.Server: then only the names above).
	if tcp, ok := local.(*net.TCPAddr); ok {
		at, ok := netip.AddrFromSlice(tcp.IP)
		return ok && !at.Unmap().IsUnspecified() && at.Unmap() == ip
	}
	return false
}

// hostOf returns the host of a Host header, without its port or an IPv6
// address's brackets, in lower case.
func hostOf(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil { // no port
		host = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
	}
	return strings.ToLower(host)
}

// allowedHostSet returns the set of names, lowercased, and IP addresses,
// in netip's form, of Config.AllowedHosts; an error names the first one
// that is neither.
func allowedHostSet(names []string) (map[string]bool, error) {
	set := map[string]bool{}
	for i, name := range names {
		if err := CheckAllowedHost(name); err != nil {
			return nil, fmt.Errorf("server: Config.AllowedHosts[%d]: %w", i, err)
		}
		if ip, err := netip.ParseAddr(name); err == nil {
			name = ip.Unmap().WithZone("").String()
		}
		set[strings.ToLower(name)] = true
	}
	return set, nil
}

// CheckAllowedHost reports whether name may be one of
// Config.AllowedHosts: a DNS name or an IP address, without a port, a
// scheme or a wildcard.
func CheckAllowedHost(name string) error {
	if _, err := netip.ParseAddr(name); err == nil {
		return nil
	}
	if name == "" || len(name) > 253 {
		return errors.New("must be a host name of 1 to 253 characters or an IP address")
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("must be a host name (labels of 1 to 63 letters, digits and inner hyphens, joined by dots) or an IP address; %q is neither", name)
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Errorf("must be a host name or an IP address, without a port, scheme or wildcard; %q has %q", name, c)
			}
		}
	}
	return nil
}
