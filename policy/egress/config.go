package egress

import (
	"context"
	"net"
	"net/netip"
	"time"
)

// Resolver looks host names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures the proxies of a runtime. The zero value is ready to
// use.
type Config struct {
	// Resolver resolves the names the program asks for (default
	// net.DefaultResolver: the host's). A test points it at a DNS server
	// of its own.
	Resolver Resolver
	// Timeout bounds each step the program's connection waits on: reading
	// its request head, resolving the name, dialling (default 10s). A
	// connection's whole life is bounded by the run's: Close ends it.
	Timeout time.Duration
}

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 10 * time.Second

// MaxHeadBytes bounds a request or response head the proxy reads; a
// longer one is refused.
const MaxHeadBytes = 64 << 10

func (c Config) withDefaults() Config {
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}
