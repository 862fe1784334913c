package linux

import (
	"fmt"
	"net"

	"github.com/crucible-sandbox/crucible/policy/egress"
)

// A run with a network allowlist reaches the host's egress proxy, and
// nothing else, on its own loopback.
//
// Why a listener inside the sandbox's network namespace, not a veth pair:
// the namespace keeps only its loopback, no route and no other interface,
// so there is nothing to filter and no firewall rule to get wrong; the
// kernel alone keeps every packet the program sends inside the namespace,
// and the only socket there that leads out is the proxy's, which the host
// process accepts from (egress.ListenIn). A veth pair would give the
// sandbox a route off the host's side, and its safety would rest on
// nftables rules and on the host's forwarding settings. The program sees
// an ordinary proxy at 127.0.0.1:PORT in its environment (egress.ProxyEnv).
//
// The listener is opened when the run takes its sandbox, warm or cold:
// a warm sandbox is built with no network, like every sandbox, and only
// the run that asks for the network gets a listener, for its life. Its
// environment reaches a warm interpreter when it is taken, and
// urllib reads the proxy variables at each request, so a warm run needs
// nothing more than a cold one.

// startEgress opens p's proxy for the run and returns it with the
// program's environment, env plus the proxy variables.
func (x *execution) startEgress() (*egress.Proxy, map[string]string, error) {
	ln, err := egress.ListenIn(fmt.Sprintf("/proc/%d/ns/net", x.p.cmd.Process.Pid), "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	proxy := egress.Serve(ln, x.rt.egress, x.req.Network)
	return proxy, egress.ProxyEnv(x.req.Env, ln.Addr().(*net.TCPAddr).Port), nil
}
