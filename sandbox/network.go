package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// NetworkNone is the default network policy: no network at all. The
// sandbox has its own network namespace whose only interface is its own
// loopback, so nothing outside the sandbox can be reached.
const NetworkNone = "none"

// Network is a run's network policy. Its zero value is "none" (see
// NetworkNone), which is also how it is written in JSON: the string
// "none". With Allow set it is the object {"allow": [...]}: the run may
// reach the destinations Allow lists, and nothing else, through a proxy
// the host runs for it (HTTP, HTTPS by CONNECT, and any TCP tunnelled by
// CONNECT); the sandbox's network namespace still has no route to
// anything but that proxy. The proxy always refuses loopback, private,
// link-local, multicast and metadata addresses, whatever Allow says.
type Network struct {
	// Allow lists the destinations, each one of:
	//
	//	"example.org"        that host name
	//	"*.example.org"      any name under example.org (not example.org itself)
	//	"203.0.113.7"        that address (IPv6 too, "[2001:db8::1]" with a port)
	//	"203.0.113.0/24"     any address of that prefix
	//
	// optionally followed by ":PORT". Without a port an entry allows the
	// HTTP and HTTPS ports, 80 and 443. Names are matched without regard
	// to case. An address entry admits addresses only: a program that asks
	// for a name must find the name listed (the proxy never resolves a
	// name the list does not hold, so made-up names carry nothing out in
	// DNS queries).
	Allow []string `json:"allow,omitempty"`
	// MaxConnections caps the connections the run may open through the
	// proxy, refused ones included (default DefaultNetworkConnections).
	MaxConnections int `json:"max_connections,omitempty"`
	// MaxBytes caps the bytes the run's connections may carry, both ways
	// together (default DefaultNetworkBytes); the connection that reaches
	// it is closed.
	MaxBytes int64 `json:"max_bytes,omitempty"`

	// bad is a string given in JSON in place of "none", kept for Validate
	// to reject naming the field.
	bad string
}

// Network caps: defaults and the largest values a request may ask for.
const (
	// DefaultNetworkConnections is Network.MaxConnections' default.
	DefaultNetworkConnections = 64
	// DefaultNetworkBytes is Network.MaxBytes' default, 64 MiB.
	DefaultNetworkBytes = 64 * MiB
	// MaxNetworkConnections is the largest Network.MaxConnections.
	MaxNetworkConnections = 4096
	// MaxNetworkBytes is the largest Network.MaxBytes, 16 GiB.
	MaxNetworkBytes = 16 * GiB
	// MaxAllowEntries caps the entries of Network.Allow.
	MaxAllowEntries = 256
)

// IsZero reports whether n is "none": it allows nothing.
func (n Network) IsZero() bool {
	return len(n.Allow) == 0 && n.MaxConnections == 0 && n.MaxBytes == 0 && n.bad == ""
}

// WithDefaults returns n with its zero caps set to the defaults.
func (n Network) WithDefaults() Network {
	if n.MaxConnections == 0 {
		n.MaxConnections = DefaultNetworkConnections
	}
	if n.MaxBytes == 0 {
		n.MaxBytes = DefaultNetworkBytes
	}
	return n
}

// String returns "none" or the allowlist, comma-separated.
func (n Network) String() string {
	if len(n.Allow) == 0 {
		return NetworkNone
	}
	return "allow " + strings.Join(n.Allow, ",")
}

// networkObject is Network's JSON object form.
type networkObject struct {
	Allow          []string `json:"allow"`
	MaxConnections int      `json:"max_connections,omitempty"`
	MaxBytes       int64    `json:"max_bytes,omitempty"`
}

// MarshalJSON writes "none" for the zero Network, else the object.
func (n Network) MarshalJSON() ([]byte, error) {
	if n.bad != "" {
		return json.Marshal(n.bad)
	}
	if n.IsZero() {
		return json.Marshal(NetworkNone)
	}
	return json.Marshal(networkObject{Allow: n.Allow, MaxConnections: n.MaxConnections, MaxBytes: n.MaxBytes})
}

// UnmarshalJSON reads "none", null, or the object {"allow": [...],
// "max_connections": N, "max_bytes": N}; an object with another member is
// an error. Another string is kept for Validate to reject.
func (n *Network) UnmarshalJSON(b []byte) error {
	*n = Network{}
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s != NetworkNone && s != "" {
			n.bad = s
		}
		return nil
	}
	var o networkObject
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&o); err != nil {
		return fmt.Errorf(`network must be "none" or an object {"allow": [...]}: %w`, err)
	}
	n.Allow, n.MaxConnections, n.MaxBytes = o.Allow, o.MaxConnections, o.MaxBytes
	return nil
}

// Validate checks n as a request's "network" field.
func (n Network) Validate() error {
	if n.bad != "" {
		return inputErrorf("network", `must be "none" or an object {"allow": ["host[:port]", ...]}, got %q`, n.bad)
	}
	if n.IsZero() {
		return nil
	}
	if len(n.Allow) == 0 {
		return inputErrorf("network.allow", `must list at least one destination when network is an object (use "none" for no network)`)
	}
	if len(n.Allow) > MaxAllowEntries {
		return inputErrorf("network.allow", "must hold at most %d entries, got %d", MaxAllowEntries, len(n.Allow))
	}
	for i, e := range n.Allow {
		if _, err := CheckAllowEntry(e); err != nil {
			return inputErrorf(fmt.Sprintf("network.allow[%d]", i), "%s, got %q", err.Error(), e)
		}
	}
	if n.MaxConnections < 0 || n.MaxConnections > MaxNetworkConnections {
		return inputErrorf("network.max_connections", "must be between 1 and %d (0 means %d), got %d", MaxNetworkConnections, DefaultNetworkConnections, n.MaxConnections)
	}
	if n.MaxBytes < 0 || n.MaxBytes > MaxNetworkBytes {
		return inputErrorf("network.max_bytes", "must be between 1 and %d (0 means %d), got %d", MaxNetworkBytes, DefaultNetworkBytes, n.MaxBytes)
	}
	return nil
}

// Rules returns n's allowlist parsed; n must be valid.
func (n Network) Rules() []NetworkRule {
	rules := make([]NetworkRule, 0, len(n.Allow))
	for _, e := range n.Allow {
		if r, err := ParseNetworkRule(e); err == nil {
			rules = append(rules, r)
		}
	}
	return rules
}

// DefaultPorts returns the ports an allowlist entry without one allows,
// HTTP's and HTTPS's, in a slice of the caller's own.
func DefaultPorts() []int { return slices.Clone(defaultPorts) }

// defaultPorts is what DefaultPorts returns.
var defaultPorts = []int{80, 443}

// NetworkRule is one parsed entry of Network.Allow: a name (or a wildcard
// of names) or an address prefix, and a port.
type NetworkRule struct {
	// Name is the lower-case host name without a trailing dot, and
	// without "*." when Wildcard; empty for an address rule.
	Name string
	// Wildcard makes the rule match the names under Name, not Name.
	Wildcard bool
	// Prefix holds the addresses of an address rule (a single address is
	// a /32 or /128); invalid for a name rule.
	Prefix netip.Prefix
	// Port is the port allowed; 0 allows DefaultPorts.
	Port int
}

// CheckAllowEntry parses an entry of Network.Allow as it is given (a
// request's network.allow, crucible run --allow) and refuses one that can
// never be reached: an address or prefix the egress proxy always refuses
// (loopback, private, link-local, the metadata address, ...; see
// ForbiddenAddr), or a name that always resolves to one (localhost). The
// error says which rule the entry breaks, and for a URL, the host to give.
// Every transport's validation comes here (Network.Validate).
func CheckAllowEntry(s string) (NetworkRule, error) {
	r, err := ParseNetworkRule(s)
	if err != nil {
		return r, err
	}
	if why := r.unreachable(); why != "" {
		return r, fmt.Errorf("%s (the egress proxy refuses it whatever the allowlist says)", why)
	}
	return r, nil
}

// ParseNetworkRule parses an entry of Network.Allow. The error says which
// rule the entry breaks. It accepts entries the proxy will refuse to
// reach; CheckAllowEntry refuses those too.
func ParseNetworkRule(s string) (NetworkRule, error) {
	var r NetworkRule
	if host, ok := urlHost(s); ok {
		if host == "" {
			return r, fmt.Errorf("give a host, not a URL")
		}
		return r, fmt.Errorf("give a host, not a URL: %q", host)
	}
	host, port, err := splitRule(s)
	if err != nil {
		return r, err
	}
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 || port[0] == '0' {
			return r, fmt.Errorf("the port must be a number from 1 to 65535")
		}
		r.Port = p
	}
	switch {
	case strings.Contains(host, "/"):
		pfx, err := netip.ParsePrefix(host)
		if err != nil {
			return r, fmt.Errorf("must be an address prefix such as 203.0.113.0/24")
		}
		if pfx.Masked() != pfx {
			return r, fmt.Errorf("the prefix must have no bits set past its length (%s)", pfx.Masked())
		}
		r.Prefix = pfx
	default:
		if a, err := netip.ParseAddr(host); err == nil {
			if a.Zone() != "" {
				return r, fmt.Errorf("the address must have no zone")
			}
			r.Prefix = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
			return r, nil
		}
		name := strings.TrimSuffix(strings.ToLower(host), ".")
		if rest, ok := strings.CutPrefix(name, "*."); ok {
			r.Wildcard, name = true, rest
		}
		if !ValidHostName(name) {
			return r, fmt.Errorf("must be a host name (letters, digits, '-' and '.', optionally starting with '*.'), an address or a prefix, optionally with :PORT")
		}
		r.Name = name
	}
	return r, nil
}

// urlHost reports whether entry s is a URL, or a host followed by a path
// ("example.org/data.csv"), rather than a host: then host is the entry
// to give instead (with the URL's port, if it has one), or "" when none
// can be made out of it.
func urlHost(s string) (host string, ok bool) {
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return "", true
		}
		host = u.Host
	} else {
		before, _, found := strings.Cut(s, "/")
		if !found || strings.HasPrefix(before, "[") {
			return "", false
		}
		h := before
		if hh, _, err := net.SplitHostPort(before); err == nil {
			h = hh
		}
		if strings.Trim(h, "0123456789.") == "" || strings.Contains(h, ":") {
			return "", false // an address prefix, maybe a bad one
		}
		host = before
	}
	if _, err := ParseNetworkRule(host); err != nil {
		return "", true
	}
	return host, true
}

// splitRule splits an entry into host and port ("" if none): "[v6]:port",
// "host:port", or a bare host (an IPv6 address without brackets has
// several colons and no port).
func splitRule(s string) (host, port string, err error) {
	if s == "" {
		return "", "", fmt.Errorf("must not be empty")
	}
	if len(s) > 260 {
		return "", "", fmt.Errorf("must be at most 260 bytes")
	}
	if rest, ok := strings.CutPrefix(s, "["); ok {
		host, after, ok := strings.Cut(rest, "]")
		if !ok || (after != "" && !strings.HasPrefix(after, ":")) {
			return "", "", fmt.Errorf("a bracketed IPv6 address must be [ADDRESS] or [ADDRESS]:PORT")
		}
		return host, strings.TrimPrefix(after, ":"), nil
	}
	if strings.Count(s, ":") == 1 {
		host, port, _ = strings.Cut(s, ":")
		return host, port, nil
	}
	return s, "", nil
}

// ValidHostName reports whether name is a DNS host name: dot-separated
// labels of 1-63 letters, digits and '-', not starting or ending with
// '-', 253 bytes at most.
func ValidHostName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// portAllowed reports whether the rule's port admits port.
func (r NetworkRule) portAllowed(port int) bool {
	if r.Port != 0 {
		return port == r.Port
	}
	for _, p := range defaultPorts {
		if p == port {
			return true
		}
	}
	return false
}

// MatchName reports whether a name rule admits host name (any case, a
// trailing dot ignored) on port.
func (r NetworkRule) MatchName(name string, port int) bool {
	if r.Name == "" || !r.portAllowed(port) {
		return false
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if r.Wildcard {
		return strings.HasSuffix(name, "."+r.Name)
	}
	return name == r.Name
}

// MatchAddr reports whether an address rule admits a on port.
func (r NetworkRule) MatchAddr(a netip.Addr, port int) bool {
	return r.Prefix.IsValid() && r.portAllowed(port) && r.Prefix.Contains(a.Unmap())
}
