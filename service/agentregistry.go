package service

// newAgentRegistry returns the table of the agent runs of the service,
// in memory: those going on, counted per tenant against their share, and
// the last ended ones, with their traces, for a bounded number and time
// (c.Retain, c.RetainFor). Every agent run is also written through to
// the store (agentpersist.go), which serves those the table no longer
// holds (agentstored.go).
func newAgentRegistry(c AgentConfig) *registry[*agentRun] {
	return newRegistry[*agentRun](registryConfig{max: c.MaxRuns, retain: c.Retain, retainFor: c.RetainFor,
		notFound: errNoAgentRun,
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
