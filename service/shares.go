package service

import "context"

// Shares counts tenants' things across the nodes of a cluster (package
// cluster, on NATS): set in Config.Shares in cluster mode, it makes a
// tenant's configured quota (Config.Tenants, Config.TenantDefaults) of
// runs, sessions and agent runs hold across all the nodes, not on each.
// The service still counts on this node too (runCounter, registry); the
// fair shares that no configuration sets (half of this node's places)
// are a share of this node's capacity and stay per node: a tenant holds
// at most half of each node, so at most half of the cluster.
type Shares interface {
	// Acquire counts one more of tenant's things of kind (ShareRuns,
	// ShareSessions, ShareAgentRuns) across the cluster, unless the live
	// nodes already hold max of them: then release is nil, held says how
	// many they hold, and err is nil. An error means the count could not
	// be read or written (the node cannot reach the cluster): the request
	// is refused, KindUnavailable with the error's text. release gives
	// the thing back; it is called once.
	Acquire(ctx context.Context, kind, tenant string, max int) (release func(), held int, err error)
}

// The kinds of things a tenant's cluster-wide share counts.
const (
	// ShareRuns counts runs admitted, queued or running
	// (TenantLimits.MaxConcurrentRuns).
	ShareRuns = "runs"
	// ShareSessions counts open sessions (TenantLimits.MaxSessions).
	ShareSessions = "sessions"
	// ShareAgentRuns counts agent runs going on (TenantLimits.MaxAgentRuns).
	ShareAgentRuns = "agent_runs"
)

// quota returns tenant's configured limit of kind, its entry's then
// TenantDefaults', without the fair share LimitsFor fills in: 0 when the
// configuration sets none.
func (s *Service) quota(kind, tenant string) int {
	l, d := s.cfg.Tenants[tenant], s.cfg.TenantDefaults
	pick := func(own, def int) int {
		if own != 0 {
			return own
		}
		return def
	}
	switch kind {
	case ShareRuns:
		return pick(l.MaxConcurrentRuns, d.MaxConcurrentRuns)
	case ShareSessions:
		return pick(l.MaxSessions, d.MaxSessions)
	case ShareAgentRuns:
		return pick(l.MaxAgentRuns, d.MaxAgentRuns)
	}
	return 0
}

// clusterShare reports whether tenant's things of kind are counted across
// the cluster: in cluster mode, for a quota the configuration sets.
func (s *Service) clusterShare(kind, tenant string) bool {
	return s.cfg.Shares != nil && s.quota(kind, tenant) > 0
}

// acquireShare takes one of tenant's things of kind from its
// cluster-wide share, when there is one (clusterShare): it returns the
// share's release, nil when there is none, or the refusal: KindBusy
// naming the cluster-wide share, KindUnavailable when the cluster cannot
// be reached.
func (s *Service) acquireShare(ctx context.Context, kind, tenant string) (release func(), err error) {
	if !s.clusterShare(kind, tenant) {
		return nil, nil
	}
	max := s.quota(kind, tenant)
	release, held, err := s.cfg.Shares.Acquire(ctx, kind, tenant, max)
	switch {
	case err != nil:
		return nil, errorf(KindUnavailable, "%v", err)
	case release != nil:
		return release, nil
	}
	switch kind {
	case ShareRuns:
		return nil, errorf(KindBusy, "tenant %q already has %d runs queued or running across the cluster, its cluster-wide share (%d); retry later", tenant, held, max)
	case ShareSessions:
		return nil, errorf(KindBusy, "tenant %q already has %d open sessions across the cluster, its cluster-wide share (%d); close one or retry later", tenant, held, max)
	default:
		return nil, errorf(KindBusy, "tenant %q already has %d agent runs going on across the cluster, its cluster-wide share (%d); wait for one to end or retry later", tenant, held, max)
	}
}

// acquireRun counts one more run of tenant's against its share: on this
// node (runCounter) and, in cluster mode, across the cluster. release
// gives both back.
func (s *Service) acquireRun(ctx context.Context, tenant string) (release func(), err error) {
	local, err := s.tenantRuns.acquire(tenant, s.LimitsFor(tenant).MaxConcurrentRuns)
	if err != nil {
		return nil, err
	}
	shared, err := s.acquireShare(ctx, ShareRuns, tenant)
	if err != nil {
		local()
		return nil, err
	}
	if shared == nil {
		return local, nil
	}
	return func() { local(); shared() }, nil
}

// reserveShared reserves a thing of tenant's in r, as r.reserve does,
// and takes it from the tenant's cluster-wide share of kind, if any: r
// gives the share back when the reservation is released or the thing
// ends.
func reserveShared[T any](ctx context.Context, s *Service, r *registry[T], kind, tenant string, max int) error {
	if err := r.reserve(tenant, max); err != nil {
		return err
	}
	release, err := s.acquireShare(ctx, kind, tenant)
	if err != nil {
		r.unreserve(tenant)
		return err
	}
	r.holdShare(tenant, release)
	return nil
}

// addShared holds v, tenant's, under id in r, as r.add does, and takes
// it from the tenant's cluster-wide share of kind, if any.
func addShared[T any](ctx context.Context, s *Service, r *registry[T], kind, tenant, id string, v T, max int) error {
	if !s.clusterShare(kind, tenant) {
		return r.add(tenant, id, v, max)
	}
	if err := reserveShared(ctx, s, r, kind, tenant, max); err != nil {
		return err
	}
	return r.commitOpen(tenant, id, v)
}
