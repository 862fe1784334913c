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

// Resolver returns a resolver that asks this server only.
func (d *DNS) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "udp", d.Addr)
	}}
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
