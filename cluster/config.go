package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Embedded is Config.URL for a node that starts a NATS server of its own,
// inside the process, for the other nodes to join.
const Embedded = "embedded"

// DefaultListen is the embedded NATS server's default client address:
// loopback, so that nothing beyond this host reaches it unless
// Config.Listen says so.
const DefaultListen = "127.0.0.1:4222"

// The liveness of a node. A node renews its entry in the nodes bucket
// every HeartbeatInterval; the bucket drops an entry NodeTTL after its
// last renewal, and a node whose entry is gone is down.
const (
	// HeartbeatInterval is how often a node renews its entry.
	HeartbeatInterval = time.Second
	// NodeTTL is five heartbeats: a node survives four lost or late ones
	// (a GC pause, a slow NATS server) before it is taken for down, and
	// its sessions answer "gone" at most NodeTTL (plus the server's
	// expiry tick) after it died. A node that has not renewed its entry
	// for NodeTTL knows the others take it for down, and refuses new
	// sessions (Node.Admit).
	NodeTTL = 5 * HeartbeatInterval
)

// Config says how a node joins the cluster.
type Config struct {
	// URL is the NATS server to join, nats://[TOKEN@]HOST:PORT (several,
	// comma-separated, for a NATS cluster), or Embedded.
	URL string
	// NodeID names this node: 1-64 characters of a-z, A-Z, 0-9, '-', '_'
	// and '.', unique in the cluster. A node that joins under the id of
	// one that was there before takes its place (Join).
	NodeID string
	// Advertise is this node's HTTP base URL, as the other nodes reach
	// it (http://10.0.0.2:8080): requests for its sessions are forwarded
	// there.
	Advertise string
	// Listen is the embedded NATS server's client address (default
	// DefaultListen); for Embedded only.
	Listen string
	// DataDir holds the embedded NATS server's JetStream store; for
	// Embedded only, and required then.
	DataDir string
	// Token, for Embedded, is the token every NATS client must present
	// (other nodes join with nats://TOKEN@HOST:PORT). It is required when
	// Listen is not on loopback: whoever can write the catalog decides
	// where requests, with their API keys, are forwarded.
	Token string
	// Images are the images this node offers, for the registry.
	Images []string
	// Load reports this node's slots and sessions at each heartbeat; nil
	// reports none.
	Load func() Load
	// Logger receives the node's logs (default slog.Default()).
	Logger *slog.Logger

	// heartbeat and ttl override HeartbeatInterval and NodeTTL in tests.
	heartbeat, ttl time.Duration
}

// Load is what a node holds, as its heartbeat reports it.
type Load struct {
	// Slots is how many runs may execute at once on the node.
	Slots int `json:"slots"`
	// Busy is how many execute now.
	Busy int `json:"busy"`
	// Sessions is how many sessions are open on the node.
	Sessions int `json:"sessions"`
	// MaxSessions is how many may be open at once.
	MaxSessions int `json:"max_sessions"`
}

var nodeIDRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// check validates c and fills in its defaults.
func (c Config) check() (Config, error) {
	if c.URL == "" {
		return c, errors.New("cluster: URL is required: nats://HOST:PORT or \"embedded\"")
	}
	if c.URL != Embedded {
		for _, u := range strings.Split(c.URL, ",") {
			p, err := url.Parse(strings.TrimSpace(u))
			if err != nil || (p.Scheme != "nats" && p.Scheme != "tls") || p.Host == "" {
				return c, fmt.Errorf("cluster: URL %q: must be nats://HOST:PORT (or tls://), or \"embedded\"", u)
			}
		}
	}
	if !nodeIDRE.MatchString(c.NodeID) || strings.Trim(c.NodeID, ".") != c.NodeID || strings.Contains(c.NodeID, "..") {
		return c, fmt.Errorf("cluster: node id %q: must be 1-64 characters of a-z, A-Z, 0-9, '-', '_' and '.', not starting or ending with '.' nor holding \"..\"", c.NodeID)
	}
	u, err := url.Parse(c.Advertise)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return c, fmt.Errorf("cluster: advertise URL %q: must be http(s)://HOST:PORT, with no path, query or credentials", c.Advertise)
	}
	c.Advertise = strings.TrimSuffix(c.Advertise, "/")
	if c.URL == Embedded {
		if c.Listen == "" {
			c.Listen = DefaultListen
		}
		host, _, err := net.SplitHostPort(c.Listen)
		if err != nil {
			return c, fmt.Errorf("cluster: listen address %q: %v", c.Listen, err)
		}
		ip := net.ParseIP(host)
		if c.Token == "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return c, fmt.Errorf("cluster: listen address %q is beyond loopback: a token is required (whoever can write the catalog decides where requests and their API keys go)", c.Listen)
		}
		if c.DataDir == "" {
			return c, errors.New("cluster: the embedded NATS server needs a data directory")
		}
	}
	if c.heartbeat == 0 {
		c.heartbeat = HeartbeatInterval
	}
	if c.ttl == 0 {
		c.ttl = NodeTTL
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}
