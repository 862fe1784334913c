package service

import (
	"fmt"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// NetworkChecker is a Runtime that cannot give every run the network
// policy it asks for (the docker package's under gVisor, which can give
// none but "none"). The service asks it before a run is queued, so that
// such a run is refused as bad input naming the field, as an invalid
// request is, and not failed as the platform's error once it has started.
type NetworkChecker interface {
	// CheckNetwork returns a *sandbox.InputError when the runtime cannot
	// give a run n.
	CheckNetwork(n sandbox.Network) error
}

// checkNetwork refuses a run with network from a tenant the server's
// config does not allow it (TenantLimits.AllowNetwork), or one that rt
// cannot give (NetworkChecker), naming the field.
func (s *Service) checkNetwork(tenant string, rt Runtime, n sandbox.Network) error {
	if n.IsZero() {
		return nil
	}
	if !s.LimitsFor(tenant).NetworkAllowed() {
		rule := fmt.Sprintf(`must be "none": tenant %q may not use the network on this server (allow_network in the server's config)`, tenant)
		return &Error{Kind: KindForbidden, Field: "network", Rule: rule, Message: "network: " + rule}
	}
	if nc, ok := rt.(NetworkChecker); ok {
		return nc.CheckNetwork(n)
	}
	return nil
}

// redactNetworkLog redacts the program's text in a network log, the
// hosts it named and the reasons that quote them, as the output is: a
// program may spell a secret into a host name. It returns how many
// secrets it hid.
func redactNetworkLog(r *policy.Redactor, log *sandbox.NetworkLog) int {
	if log == nil {
		return 0
	}
	n := 0
	for i := range log.Connections {
		c := &log.Connections[i]
		var host, reason policy.Counts
		c.Host, host = r.RedactString(c.Host)
		c.Reason, reason = r.RedactString(c.Reason)
		n += host.Total() + reason.Total()
	}
	return n
}
