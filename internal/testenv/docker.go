package testenv

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// DockerSocket is the Docker daemon's socket the tests use.
const DockerSocket = "/var/run/docker.sock"

// Docker stops tb unless a Docker daemon answers a ping on DockerSocket,
// as the docker and gvisor runtimes need.
func Docker(tb testing.TB) {
	tb.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", DockerSocket)
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get("http://docker/_ping")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		err = &pingError{resp.Status}
	}
	Missing(tb, "a Docker daemon answering on "+DockerSocket+" ("+err.Error()+")",
		setup+"; it installs docker.io and runsc and starts dockerd (scripts/dockerd.sh)")
}

// DockerUnavailable stops tb for a runtime the daemon cannot offer: why
// is the error that said so (it names what is missing).
func DockerUnavailable(tb testing.TB, why error) {
	tb.Helper()
	Missing(tb, "a Docker daemon able to run the runtime ("+strings.TrimSpace(why.Error())+")",
		setup+"; it registers gVisor's runsc in /etc/docker/daemon.json (scripts/dockerd.sh)")
}

type pingError struct{ status string }

func (e *pingError) Error() string { return "ping answered " + e.status }
