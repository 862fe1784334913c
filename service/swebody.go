package service

import (
	"context"
	"fmt"

	"github.com/crucible-sandbox/crucible/swe"
)

// SWERequestBytes is the body a swe run's request needs at most: its
// repository (swe.MaxRepoBytes) in base64, its task (swe.MaxTaskBytes),
// and 1 MiB for the rest (its tests, test command, budgets, limits, and
// JSON's escapes).
const SWERequestBytes = (swe.MaxRepoBytes+2)/3*4 + swe.MaxTaskBytes + 1<<20

// MaxAgentRunBodyBytes is the largest body of tenant's agent run
// requests (POST /v1/agent-runs, and the MCP endpoint, whose swe tool
// carries a repository): large enough for a swe run's repository of
// swe.MaxRepoBytes (SWERequestBytes) when the service runs agents, even
// above the tenant's body limit, which every other route keeps; never
// more than one body the payload budget can hold (Config.MaxPayloadBytes,
// whose default makes room for it), so that such a body is still read
// only once its memory is reserved.
func (s *Service) MaxAgentRunBodyBytes(tenant string) int64 {
	limit := s.MaxBodyBytes(tenant)
	if s.cfg.Agents.Model == nil {
		return limit
	}
	return max(limit, min(SWERequestBytes, s.cfg.MaxPayloadBytes/DefaultPayloadFactor))
}

// ReserveAgentRunPayload is ReservePayload for an agent run's body,
// within MaxAgentRunBodyBytes.
func (s *Service) ReserveAgentRunPayload(ctx context.Context, tenant string, n int64) (*Payload, error) {
	if limit := s.MaxAgentRunBodyBytes(tenant); n > limit {
		return nil, &Error{Kind: KindTooLarge, Field: "body", Rule: fmt.Sprintf("must be at most %d bytes", limit),
			Message: fmt.Sprintf("the body exceeds the limit of %d bytes", limit)}
	}
	return s.payload.reserve(ctx, n)
}
