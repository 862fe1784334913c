package cluster

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestForwardUnreachableKeepsConnection: requests with bodies forwarded to
// an owner that refuses connections (its process died moments ago, its
// registry entry not yet expired) answer 503 one after another on one
// kept-alive client connection: the failed forward leaves the connection
// usable or closes it cleanly, never breaks the next request (a request
// body read in the background while the server read the next request
// panicked the connection's goroutine: "invalid concurrent Body.Read
// call", the client saw "connection reset by peer").
func TestForwardUnreachableKeepsConnection(t *testing.T) {
	url := startNATS(t).url()
	a := startForwardingNode(t, url, "node-a")
	b := startForwardingNode(t, url, "node-b")
	if err := a.node.Opened(context.Background(), "ses_a", "acme"); err != nil {
		t.Fatal(err)
	}
	a.srv.Close() // A's entry lives on: B still takes it for alive
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	for i := range 200 {
		req, _ := http.NewRequest("POST", b.srv.URL+"/v1/sessions/ses_a/exec", strings.NewReader(`{"code":"print(1)"}`))
		req.Header.Set("X-Test-Tenant", "acme")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("request %d: %d %s; want 503 (the owner did not answer)", i, resp.StatusCode, body)
		}
	}
}
