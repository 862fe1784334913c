package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// Proxy serves one run's connections on a listener, under the run's
// sandbox.Network. It is safe for concurrent use.
type Proxy struct {
	cfg   Config
	rules []sandbox.NetworkRule
	net   sandbox.Network
	ln    net.Listener
	ctx   context.Context // ends with Close
	stop  context.CancelFunc
	done  sync.WaitGroup // the accept loop and the connections

	mu     sync.Mutex
	closed bool
	opened int                   // connections accepted
	log    sandbox.NetworkLog    // filled as connections end
	live   map[net.Conn]struct{} // the program's connections open now
	bytes  int64                 // both ways, all connections
}

// Serve starts a proxy for a run allowed n (valid, not "none") on ln,
// which it owns from now on. Close stops it.
func Serve(ln net.Listener, cfg Config, n sandbox.Network) *Proxy {
	ctx, stop := context.WithCancel(context.Background())
	p := &Proxy{cfg: cfg.withDefaults(), rules: n.Rules(), net: n.WithDefaults(), ln: ln, ctx: ctx, stop: stop,
		live: map[net.Conn]struct{}{}}
	p.done.Go(p.accept)
	return p
}

// Close stops accepting, ends every connection and returns the log of
// the run's connections.
func (p *Proxy) Close() *sandbox.NetworkLog {
	p.mu.Lock()
	p.closed = true
	for c := range p.live {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.stop()
	_ = p.ln.Close()
	p.done.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	log := p.log
	if log.Connections == nil {
		log.Connections = []sandbox.Connection{}
	}
	return &log
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, say: the program's next connect
			// waits in the backlog meanwhile.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		slot, ok := p.admit(c)
		if !ok {
			continue
		}
		p.done.Go(func() { p.serve(c, slot) })
	}
}

// admit counts c against the connection cap and reserves its place in
// the log (-1 when the log is full). A connection past the cap is
// refused at once.
func (p *Proxy) admit(c net.Conn) (slot int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return 0, false
	}
	p.opened++
	entry := sandbox.Connection{Time: time.Now().UTC()}
	if p.opened > p.net.MaxConnections {
		if len(p.log.Connections) < p.net.MaxConnections+sandbox.MaxUnlisted {
			entry.Verdict = sandbox.VerdictRefused
			entry.Reason = fmt.Sprintf("connection cap of %d reached (network.max_connections)", p.net.MaxConnections)
			p.log.Connections = append(p.log.Connections, entry)
		} else {
			p.log.Unlisted++
		}
		// The program learns why if it reads; the write cannot block
		// for long on a fresh socket's empty buffer.
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = io.WriteString(c, refusal(http.StatusForbidden, entry.Reason))
		_ = c.Close()
		return 0, false
	}
	p.log.Connections = append(p.log.Connections, entry)
	p.live[c] = struct{}{}
	return len(p.log.Connections) - 1, true
}

// serve handles one connection of the program and logs it.
func (p *Proxy) serve(raw net.Conn, slot int) {
	m := &meteredConn{Conn: raw, p: p}
	entry := sandbox.Connection{}
	defer func() {
		_ = raw.Close()
		p.mu.Lock()
		delete(p.live, raw)
		e := &p.log.Connections[slot]
		entry.Time = e.Time
		entry.BytesSent, entry.BytesReceived = m.sent.Load(), m.received.Load()
		if m.capped.Load() && entry.Verdict == sandbox.VerdictAllowed {
			entry.Reason = fmt.Sprintf("byte cap of %d reached (network.max_bytes): connection closed", p.net.MaxBytes)
		}
		*e = entry
		p.log.BytesSent += entry.BytesSent
		p.log.BytesReceived += entry.BytesReceived
		p.mu.Unlock()
	}()

	head := &headLimit{r: m, n: MaxHeadBytes}
	br := bufio.NewReader(head)
	_ = raw.SetReadDeadline(time.Now().Add(p.cfg.Timeout))
	req, err := http.ReadRequest(br)
	_ = raw.SetReadDeadline(time.Time{})
	if err != nil {
		entry.Verdict, entry.Reason = sandbox.VerdictRefused, "not an HTTP proxy request: "+err.Error()
		_, _ = io.WriteString(m, refusal(http.StatusBadRequest, entry.Reason))
		return
	}
	head.lift()
	host, port, err := target(req)
	entry.Host, entry.Port = host, port
	if req.Method == http.MethodConnect {
		entry.Kind = "connect"
	} else {
		entry.Kind = "http"
	}
	if err != nil {
		entry.Verdict, entry.Reason = sandbox.VerdictRefused, err.Error()
		_, _ = io.WriteString(m, refusal(http.StatusBadRequest, entry.Reason))
		return
	}
	d := p.decide(p.ctx, host, port)
	if len(d.addrs) == 0 {
		entry.IP, entry.Verdict, entry.Reason = d.ip, d.verdict, d.reason
		status := http.StatusForbidden
		if d.verdict == sandbox.VerdictFailed {
			status = http.StatusBadGateway
		}
		_, _ = io.WriteString(m, refusal(status, entry.Reason))
		return
	}
	up, ip, err := p.dial(d.addrs, port)
	if err != nil {
		entry.IP, entry.Verdict, entry.Reason = ip, sandbox.VerdictFailed, err.Error()
		_, _ = io.WriteString(m, refusal(http.StatusBadGateway, entry.Reason))
		return
	}
	defer up.Close()
	p.track(up)
	defer p.untrack(up)
	entry.IP, entry.Verdict = ip, sandbox.VerdictAllowed
	if req.Method == http.MethodConnect {
		_, isAddr := netip.ParseAddr(host)
		if why := tunnel(m, br, up, isAddr != nil, host); why != "" {
			entry.Verdict, entry.Reason = sandbox.VerdictRefused, why
		}
		return
	}
	if err := forward(m, req, up); err != nil && !m.capped.Load() {
		entry.Reason = err.Error()
	}
}

// target returns the destination of a proxy request: CONNECT's
// host:port, or an absolute http:// URL's host and port (default 80).
func target(req *http.Request) (string, int, error) {
	hostport := req.Host
	if req.Method != http.MethodConnect {
		if req.URL.Scheme != "http" || req.URL.Host == "" {
			return "", 0, fmt.Errorf("only CONNECT and absolute http:// requests are proxied (use CONNECT for https), got %s %.200q", req.Method, req.RequestURI)
		}
		hostport = req.URL.Host
		if req.URL.Port() == "" {
			hostport = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	}
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, fmt.Errorf("the destination must be host:port, got %.200q", hostport)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return host, 0, fmt.Errorf("the port must be a number from 1 to 65535, got %.20q", ps)
	}
	return host, port, nil
}

// dial connects to the first of addrs that answers, from the host.
func (p *Proxy) dial(addrs []netip.Addr, port int) (net.Conn, string, error) {
	var errs []error
	d := net.Dialer{Timeout: p.cfg.Timeout}
	for _, a := range addrs {
		c, err := d.DialContext(p.ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, a.String(), nil
		}
		errs = append(errs, err)
	}
	return nil, addrs[0].String(), fmt.Errorf("dial: %w", errors.Join(errs...))
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
	}
	p.live[c] = struct{}{}
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.live, c)
}

// refusal is the HTTP response that tells the program why.
func refusal(status int, reason string) string {
	body := "crucible egress proxy: " + reason + "\n"
	return fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}
