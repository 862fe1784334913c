package egress

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// decision is the proxy's answer to a destination: the addresses it may
// dial (each checked), or why not.
type decision struct {
	addrs   []netip.Addr
	ip      string // the address refused, for the log
	verdict string // sandbox.VerdictRefused or VerdictFailed when addrs is empty
	reason  string
}

// decide checks host (a name or an address, as the program sent it) and
// port against the allowlist and the forbidden addresses.
//
// Security: a name is resolved only when the allowlist names it, so that
// a program cannot send data out in the DNS queries of names it makes up.
// Every address it resolves to is checked, and one forbidden address
// refuses the name: a name that mixes public and private addresses is
// not one a program needs. The addresses returned are the only ones
// dialled: nothing is resolved again between the check and the dial.
func (p *Proxy) decide(ctx context.Context, host string, port int) decision {
	if port < 1 || port > 65535 {
		return decision{verdict: sandbox.VerdictRefused, reason: fmt.Sprintf("port %d is not a TCP port", port)}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if why := sandbox.ForbiddenAddr(a); why != "" {
			return decision{ip: a.String(), verdict: sandbox.VerdictRefused, reason: a.String() + " is " + why + ": never reachable"}
		}
		for _, r := range p.rules {
			if r.MatchAddr(a, port) {
				return decision{addrs: []netip.Addr{a}}
			}
		}
		return decision{ip: a.String(), verdict: sandbox.VerdictRefused, reason: fmt.Sprintf("%s port %d is not in the allowlist", a, port)}
	}
	if !sandbox.ValidHostName(host) {
		return decision{verdict: sandbox.VerdictRefused, reason: "the destination is not a host name nor an address"}
	}
	listed := false
	for _, r := range p.rules {
		if r.MatchName(host, port) {
			listed = true
			break
		}
	}
	if !listed {
		return decision{verdict: sandbox.VerdictRefused, reason: fmt.Sprintf("%s port %d is not in the allowlist", host, port)}
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	addrs, err := p.cfg.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return decision{verdict: sandbox.VerdictFailed, reason: "resolve " + host + ": " + err.Error()}
	}
	if len(addrs) == 0 {
		return decision{verdict: sandbox.VerdictFailed, reason: "resolve " + host + ": no address"}
	}
	for i, a := range addrs {
		a = a.Unmap()
		if why := sandbox.ForbiddenAddr(a); why != "" {
			return decision{ip: a.String(), verdict: sandbox.VerdictRefused, reason: fmt.Sprintf("%s resolves to %s, %s: never reachable", host, a, why)}
		}
		addrs[i] = a
	}
	return decision{addrs: addrs}
}
