package service

import (
	"fmt"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// checkNetwork refuses a run with network from a tenant the server's
// config does not allow it (TenantLimits.AllowNetwork), naming the field.
func (s *Service) checkNetwork(tenant string, n sandbox.Network) error {
	if n.IsZero() || s.LimitsFor(tenant).NetworkAllowed() {
		return nil
	}
	rule := fmt.Sprintf(`must be "none": tenant %q may not use the network on this server (allow_network in the server's config)`, tenant)
	return &Error{Kind: KindForbidden, Field: "network", Rule: rule, Message: "network: " + rule}
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
