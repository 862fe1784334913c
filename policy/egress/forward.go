package egress

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
)

// hopHeaders are the headers meant for the proxy, not the destination.
var hopHeaders = []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade"}

// forward sends one proxied HTTP request to up and its response to the
// program, then the connection ends (the response says so: one request
// per connection keeps every request decided and logged on its own).
func forward(m *meteredConn, req *http.Request, up net.Conn) error {
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.Close = true
	req.RequestURI = ""
	req.Host = req.URL.Host // the destination decided, not another virtual host
	if err := req.Write(up); err != nil {
		return fmt.Errorf("send the request: %w", err)
	}
	head := &headLimit{r: up, n: MaxHeadBytes}
	resp, err := http.ReadResponse(bufio.NewReader(head), req)
	if err != nil {
		_, _ = m.Write([]byte(refusal(http.StatusBadGateway, "the destination's response: "+err.Error())))
		return fmt.Errorf("read the response: %w", err)
	}
	head.lift()
	defer resp.Body.Close()
	resp.Close = true
	if err := resp.Write(m); err != nil {
		return fmt.Errorf("pass the response on: %w", err)
	}
	return nil
}
