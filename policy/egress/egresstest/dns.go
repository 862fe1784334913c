package egresstest

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// DNS is a DNS server on the host's loopback that answers A queries from
// a table the test fills, and counts the queries per name.
type DNS struct {
	// Addr is the server's UDP address.
	Addr string

	mu      sync.Mutex
	answers map[string][]netip.Addr // lower-case name without the trailing dot
	queries map[string]int
}

// NewDNS starts a DNS server, stopped when the test ends.
func NewDNS(t testing.TB) *DNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &DNS{Addr: pc.LocalAddr().String(), answers: map[string][]netip.Addr{}, queries: map[string]int{}}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(d.serve), NotifyStartedFunc: func() { close(started) }}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return d
}

// Set makes name resolve to addrs (IPv4 addresses) from now on.
func (d *DNS) Set(name string, addrs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	d.answers[strings.ToLower(strings.TrimSuffix(name, "."))] = as
}

// Queries returns how many A queries name received.
func (d *DNS) Queries(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.queries[strings.ToLower(name)]
}

// Resolver returns a resolver that asks this server, and nothing else,
// for a name's IPv4 addresses.
//
// Not a *net.Resolver with a Dial to this server: Go's resolver reads
// the host's /etc/hosts before it asks any server, and appends the
// host's search domains (/etc/resolv.conf), so an entry there for a
// test's name (198.51.100.10 rebind.test, say) made a proxy under test
// dial an address no test set up, whatever the test's table said.
func (d *DNS) Resolver() Resolver { return Resolver{addr: d.Addr} }

// Resolver looks names up on one test DNS server alone (DNS.Resolver):
// no hosts file, no search domain, no other server.
type Resolver struct{ addr string }

// LookupNetIP returns host's IPv4 addresses as the server answers them
// (network "ip" or "ip4"; the server holds no IPv6 address). A name the
// server does not know is an error that says so.
func (r Resolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if network != "ip" && network != "ip4" {
		return nil, &net.DNSError{Err: "the test DNS server holds IPv4 addresses only, not " + network, Name: host}
	}
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(host), dns.TypeA)
	in, _, err := new(dns.Client).ExchangeContext(ctx, q, r.addr)
	if err != nil {
		return nil, &net.DNSError{Err: err.Error(), Name: host, Server: r.addr}
	}
	if in.Rcode != dns.RcodeSuccess {
		return nil, &net.DNSError{Err: dns.RcodeToString[in.Rcode], Name: host, Server: r.addr, IsNotFound: in.Rcode == dns.RcodeNameError}
	}
	var addrs []netip.Addr
	for _, rr := range in.Answer {
		if a, ok := rr.(*dns.A); ok {
			if ip, ok := netip.AddrFromSlice(a.A.To4()); ok {
				addrs = append(addrs, ip)
			}
		}
	}
	return addrs, nil
}

func (d *DNS) serve(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	d.mu.Lock()
	for _, qu := range q.Question {
		name := strings.ToLower(strings.TrimSuffix(qu.Name, "."))
		as, ok := d.answers[name]
		if !ok {
			m.Rcode = dns.RcodeNameError
			continue
		}
		if qu.Qtype != dns.TypeA {
			continue
		}
		d.queries[name]++
		for _, a := range as {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: qu.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 0}, A: a.AsSlice()})
		}
	}
	d.mu.Unlock()
	_ = w.WriteMsg(m)
}
