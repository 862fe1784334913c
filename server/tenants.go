package server

import (
	"net/http"
	"sync"
)

// TenantLimits bound what one tenant may hold at once, on top of the
// server-wide limits. A zero field sets no per-tenant bound.
type TenantLimits struct {
	// MaxConcurrentRuns bounds the tenant's runs admitted at once, queued
	// or running; more are refused with 429.
	MaxConcurrentRuns int `json:"max_concurrent_runs,omitempty"`
	// MaxSessions bounds the tenant's open sessions; more are refused with
	// 429.
	MaxSessions int `json:"max_sessions,omitempty"`
	// MaxRequestBytes bounds a request body of the tenant (it cannot raise
	// Config.MaxBodyBytes); larger ones are refused with 413.
	MaxRequestBytes int64 `json:"max_request_bytes,omitempty"`
}

// limitsFor returns tenant's limits: its own entry in Config.Tenants when
// there is one (it replaces the defaults as a whole), else
// Config.TenantDefaults.
func (s *Server) limitsFor(tenant string) TenantLimits {
	if l, ok := s.cfg.Tenants[tenant]; ok {
		return l
	}
	return s.cfg.TenantDefaults
}

// bodyLimit is the largest request body tenant may send.
func (s *Server) bodyLimit(tenant string) int64 {
	if l := s.limitsFor(tenant).MaxRequestBytes; l > 0 && l < s.cfg.MaxBodyBytes {
		return l
	}
	return s.cfg.MaxBodyBytes
}

// runCounter counts each tenant's admitted runs.
type runCounter struct {
	mu   sync.Mutex
	runs map[string]int
}

// acquire counts one more run of tenant unless it already has max (0: no
// bound); release uncounts it.
func (c *runCounter) acquire(tenant string, max int) (release func(), apiErr *apiError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if max > 0 && c.runs[tenant] >= max {
		return nil, newError(http.StatusTooManyRequests, codeTooManyRequests,
			"tenant %q already has %d runs queued or running, its limit; retry later", tenant, max)
	}
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[tenant]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.runs[tenant]--; c.runs[tenant] == 0 {
			delete(c.runs, tenant)
		}
	}, nil
}
