// Package client is the Go SDK of Crucible's HTTP API: it runs code, reads
// and lists run records, lists the images the server offers, opens, lists
// and drives notebook-like sessions, starts and follows code-agent runs,
// and creates data analyses and asks them questions, decoding the API's
// JSON errors into *APIError.
//
// Usage:
//
//	c, err := client.New("http://localhost:8080")
//	if err != nil {
//		return err
//	}
//	res, err := c.CreateRun(ctx, sandbox.Request{Language: sandbox.Python, Code: "print(6 * 7)"})
//	if err != nil {
//		return err // an *APIError when the server refused the request
//	}
//	fmt.Println(res.ID, res.Status, string(res.Stdout)) // 3f9c… ok 42
//
// A Client is also a sandbox.Runtime and a sandbox.SessionRuntime (Run,
// NewSession), so that code written against the execution contract, such
// as the agent or an evaluation, runs its programs on a remote server
// unchanged; its errors then answer as the contract's (see APIError).
//
// The package depends on the standard library and the packages of the
// contract (sandbox) and of the API's types (api) only: a program that
// embeds the SDK does not link database drivers or the server.
//
// A Client is safe for concurrent use.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client calls one Crucible server. Create it with New.
type Client struct {
	base   string // scheme://host[/prefix], without a trailing slash
	http   *http.Client
	apiKey string
}

// Option configures a Client in New.
type Option func(*Client)

// WithHTTPClient makes the Client send its requests through hc instead of
// http.DefaultClient, for example to set a timeout or a transport.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.http = hc }
}

// WithAPIKey makes the Client send key as "Authorization: Bearer <key>" with
// every request, for servers that require API keys.
func WithAPIKey(key string) Option {
	return func(c *Client) { c.apiKey = key }
}

// New returns a client of the server at baseURL, an absolute http or https
// URL such as "http://localhost:8080"; a path in it ("https://host/crucible")
// prefixes every API path. It fails when baseURL is not such a URL.
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("client: invalid base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("client: base URL %q must start with http:// or https://", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q has no host", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("client: base URL %q must not have user info, a query or a fragment", baseURL)
	}
	c := &Client{base: strings.TrimSuffix(u.String(), "/"), http: http.DefaultClient}
	for _, opt := range opts {
		opt(c)
	}
	if c.http == nil {
		return nil, errors.New("client: WithHTTPClient needs a non-nil *http.Client")
	}
	return c, nil
}

// request is one call of the API.
type request struct {
	method      string
	path        string // escaped, starting with "/"
	query       url.Values
	body        io.Reader
	contentType string
	header      http.Header // more header fields, if any
}

// send sends r and returns the response of a 2xx status, its body to be
// closed by the caller; any other status is returned as an *APIError.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, r.body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return resp, nil
}

// call sends r with in, if not nil, as its JSON body, and decodes the JSON
// answer into out, if not nil.
func (c *Client) call(ctx context.Context, r request, in, out any) error {
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("client: encode request: %w", err)
		}
		r.body, r.contentType = bytes.NewReader(b), "application/json"
	}
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body) // so the connection is reused
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: decode answer: %w", r.method, r.path, err)
	}
	return nil
}

// escapePath escapes each slash-separated component of p for a URL path,
// keeping the slashes.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
