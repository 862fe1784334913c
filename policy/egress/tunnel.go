package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// tunnel answers CONNECT and carries bytes both ways until either side
// ends. When host is a name and the program's first bytes are a TLS
// ClientHello, its server name must be host (any case), or nothing is
// forwarded and tunnel returns why.
func tunnel(m *meteredConn, br *bufio.Reader, up net.Conn, byName bool, host string) string {
	if _, err := io.WriteString(m, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return ""
	}
	var wg sync.WaitGroup
	wg.Go(func() { // the destination to the program, from the start: some protocols speak first
		if _, err := io.Copy(m, up); err == nil {
			closeWrite(m.Conn)
		} else {
			_ = m.Conn.Close()
			_ = up.Close()
		}
	})
	var why string
	func() {
		from := io.Reader(br)
		if byName {
			hello, name, isTLS := peekClientHello(br)
			if isTLS && name != "" && !strings.EqualFold(strings.TrimSuffix(name, "."), host) {
				why = fmt.Sprintf("the TLS server name %.200q is not the CONNECT host %q", name, host)
				_ = m.Conn.Close()
				_ = up.Close()
				return
			}
			from = io.MultiReader(bytes.NewReader(hello), br)
		}
		if _, err := io.Copy(up, from); err == nil {
			closeWrite(up)
		} else {
			_ = m.Conn.Close()
			_ = up.Close()
		}
	}()
	wg.Wait()
	return why
}

// peekClientHello reads the program's first bytes and, when they start a
// TLS handshake, the ClientHello with its server name. It returns the
// bytes it read, to be forwarded. The ClientHello is parsed by crypto/tls
// over a connection that replays what is read and discards what the
// server side would write: nothing is answered, nothing is decrypted.
func peekClientHello(br *bufio.Reader) (read []byte, serverName string, isTLS bool) {
	first, err := br.Peek(1)
	if err != nil || first[0] != 0x16 { // not a TLS handshake record
		return nil, "", false
	}
	rec := &recordingConn{r: br}
	errStop := errors.New("stop")
	_ = tls.Server(rec, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		serverName = h.ServerName
		return nil, errStop
	}}).Handshake()
	return rec.buf.Bytes(), serverName, true
}

// recordingConn is a net.Conn that reads from r, keeps what it read, and
// swallows writes.
type recordingConn struct {
	r   io.Reader
	buf bytes.Buffer
}

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.buf.Write(b[:n])
	return n, err
}
func (c *recordingConn) Write(b []byte) (int, error)        { return len(b), nil }
func (c *recordingConn) Close() error                       { return nil }
func (c *recordingConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (c *recordingConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (c *recordingConn) SetDeadline(t time.Time) error      { return nil }
func (c *recordingConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *recordingConn) SetWriteDeadline(t time.Time) error { return nil }

// closeWrite half-closes c when it can, so that the other side sees the
// end of what was sent and may still answer.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}
