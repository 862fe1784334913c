package egress

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
)

// errByteCap ends a connection that reached the run's byte cap.
var errByteCap = errors.New("byte cap reached")

// meteredConn is the program's side of a connection: it counts the bytes
// each way and stops them at the run's byte cap, shared by all the run's
// connections.
type meteredConn struct {
	net.Conn
	p        *Proxy
	sent     atomic.Int64 // from the program
	received atomic.Int64 // to the program
	capped   atomic.Bool
}

// take reserves up to n bytes of the run's byte budget and returns how
// many it got.
func (m *meteredConn) take(n int) int {
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	left := m.p.net.MaxBytes - m.p.bytes
	if int64(n) > left {
		n = int(max(left, 0))
		m.capped.Store(true)
	}
	m.p.bytes += int64(n)
	return n
}

// Read reads what the program sends, up to the byte cap; past it the
// connection is closed.
func (m *meteredConn) Read(b []byte) (int, error) {
	n, err := m.Conn.Read(b)
	if n > 0 {
		got := m.take(n)
		m.sent.Add(int64(got))
		if got < n {
			_ = m.Conn.Close()
			return got, errByteCap
		}
	}
	return n, err
}

// Write writes to the program, up to the byte cap; past it the
// connection is closed.
func (m *meteredConn) Write(b []byte) (int, error) {
	got := m.take(len(b))
	n, err := m.Conn.Write(b[:got])
	m.received.Add(int64(n))
	if err == nil && got < len(b) {
		_ = m.Conn.Close()
		return n, errByteCap
	}
	return n, err
}

// headLimit bounds what a reader yields until lift is called: a request
// or response head must fit in it.
type headLimit struct {
	r io.Reader
	n int64 // bytes left; -1 once lifted
}

var errHeadTooLarge = errors.New("head too large")

func (h *headLimit) Read(b []byte) (int, error) {
	if h.n < 0 {
		return h.r.Read(b)
	}
	if h.n == 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(b)) > h.n {
		b = b[:h.n]
	}
	n, err := h.r.Read(b)
	h.n -= int64(n)
	return n, err
}

func (h *headLimit) lift() { h.n = -1 }
