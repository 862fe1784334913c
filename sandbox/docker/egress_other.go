//go:build !linux

package docker

import (
	"context"
	"errors"

	"github.com/crucible-sandbox/crucible/policy/egress"
)

// proxyReachesContainers: elsewhere the daemon runs in a virtual machine
// (Docker Desktop), whose network namespaces this process cannot enter.
const proxyReachesContainers = false

// startEgress is never reached: CheckNetwork refuses every allowlist.
func (x *execution) startEgress(context.Context) (*egress.Proxy, error) {
	return nil, errors.New("a network allowlist needs the Docker daemon on this host's Linux kernel")
}
