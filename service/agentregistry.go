package service

import "fmt"

// newAgentRegistry returns the table of the agent runs of the service,
// in memory: those going on, counted per tenant against their share, and
// the last ended ones, with their traces, for a bounded number and time
// (c.Retain, c.RetainFor). Nothing of an agent run is in the store but
// the records of its executions.
func newAgentRegistry(c AgentConfig) *registry[*agentRun] {
	return newRegistry[*agentRun](registryConfig{max: c.MaxRuns, retain: c.Retain, retainFor: c.RetainFor,
		notFound: func(id string) error {
			return &Error{Kind: KindNotFound, Message: fmt.Sprintf("no agent run %q (ended runs are kept for a while only)", id),
				Field: "id", Rule: "must name an agent run of yours the server holds"}
		},
		tenantFull: func(tenant string, _, max int) error {
			return errorf(KindBusy, "tenant %q already has %d agent runs going on, its share; wait for one to end or retry later", tenant, max)
		},
		full: func() error { return errorf(KindBusy, "too many agent runs are going on; retry later") }})
}

// stopAgentRuns stops admitting agent runs to g and cancels those going
// on, with reason; drained is closed once they have all ended.
func stopAgentRuns(g *registry[*agentRun], reason string) (drained <-chan struct{}) {
	going, drained := g.shutdown()
	for _, run := range going {
		run.stop(reason)
	}
	return drained
}
