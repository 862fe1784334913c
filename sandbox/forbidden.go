package sandbox

import (
	"fmt"
	"net/netip"
	"strings"
)

// forbiddenPrefixes are the addresses the egress proxy (package
// policy/egress) never dials, whatever an allowlist says, with the reason
// it gives; an allowlist entry that names nothing else is refused when it
// is given (CheckAllowEntry), in the same words. The documentation ranges
// (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) are not
// among them.
var forbiddenPrefixes = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("169.254.169.254/32"), "the cloud metadata address"},
	{netip.MustParsePrefix("0.0.0.0/8"), "an unspecified (\"this network\") address"},
	{netip.MustParsePrefix("10.0.0.0/8"), "a private address (RFC 1918)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared address (CGNAT, RFC 6598)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "a loopback address"},
	{netip.MustParsePrefix("169.254.0.0/16"), "a link-local address"},
	{netip.MustParsePrefix("172.16.0.0/12"), "a private address (RFC 1918)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address (RFC 6890)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "a private address (RFC 1918)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address (RFC 2544)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "a multicast address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved or broadcast address"},
	{netip.MustParsePrefix("::/128"), "the unspecified address"},
	{netip.MustParsePrefix("::1/128"), "a loopback address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address"},
	{netip.MustParsePrefix("64:ff9b::/96"), "a NAT64 address (it embeds an IPv4 address)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a NAT64 address (it embeds an IPv4 address)"},
	{netip.MustParsePrefix("2002::/16"), "a 6to4 address (it embeds an IPv4 address)"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo address (it embeds an IPv4 address)"},
	{netip.MustParsePrefix("fc00::/7"), "a private address (unique local)"},
	{netip.MustParsePrefix("fe80::/10"), "a link-local address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
	{netip.MustParsePrefix("ff00::/8"), "a multicast address"},
}

// ForbiddenAddr returns why the egress proxy never connects to a, or ""
// when a may be dialled if an allowlist admits it. An IPv4-mapped IPv6
// address is judged as the IPv4 address it maps.
//
// Security: this is the one list of the addresses no run may reach: the
// proxy checks every address it would dial against it (the boundary), and
// request validation refuses the allowlist entries that name only such
// addresses (a courtesy, so that the mistake is told when it is made).
func ForbiddenAddr(a netip.Addr) string {
	if !a.IsValid() {
		return "not an address"
	}
	if a.Zone() != "" {
		return "an address with a zone"
	}
	a = a.Unmap()
	for _, f := range forbiddenPrefixes {
		if f.prefix.Contains(a) {
			return f.reason
		}
	}
	return ""
}

// forbiddenNames are host names that always resolve to a forbidden
// address, with the reason: "localhost" and the names under it (RFC 6761),
// and the name clouds give their metadata address.
var forbiddenNames = []struct {
	name, reason string
	under        bool // the names under it too
}{
	{"localhost", "a loopback address", true},
	{"metadata.google.internal", "the cloud metadata address", false},
}

// unreachable returns why nothing r admits can ever be reached, or "":
// an address or a prefix all of whose addresses ForbiddenAddr refuses, or
// a name that always resolves to such an address. The sentence ends in
// "never reachable", as the proxy's refusal does.
func (r NetworkRule) unreachable() string {
	if r.Prefix.IsValid() {
		pfx := r.Prefix
		if a := pfx.Addr(); a.Is4In6() && pfx.Bits() >= 96 {
			pfx = netip.PrefixFrom(a.Unmap(), pfx.Bits()-96)
		}
		if pfx.IsSingleIP() {
			if why := ForbiddenAddr(pfx.Addr()); why != "" {
				return pfx.Addr().String() + " is " + why + ": never reachable"
			}
			return ""
		}
		for _, f := range forbiddenPrefixes {
			if f.prefix.Bits() <= pfx.Bits() && f.prefix.Contains(pfx.Addr()) {
				return fmt.Sprintf("every address of %s is %s: never reachable", pfx, f.reason)
			}
		}
		return ""
	}
	for _, f := range forbiddenNames {
		if r.Name == f.name && !r.Wildcard || f.under && (r.Name == f.name || strings.HasSuffix(r.Name, "."+f.name)) {
			return fmt.Sprintf("%s always resolves to %s: never reachable", r.Name, f.reason)
		}
	}
	return ""
}
