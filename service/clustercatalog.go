package service

import "context"

// In cluster mode, analyses and agent runs are put on record in the
// cluster's catalog as sessions are (Placement), under their own ids, so
// that any node forwards their requests to the node that holds them.

// recordHeld records tenant's id (an analysis or an agent run) as this
// node's before it is offered; nil on one host. The error refuses it as
// Placement.Opened's does.
func (s *Service) recordHeld(ctx context.Context, id, tenant string) error {
	p := s.cfg.Placement
	if p == nil {
		return nil
	}
	if err := p.Opened(ctx, id, tenant); err != nil {
		return placementRefused(err)
	}
	return nil
}

// forgetHeld deletes id's entry from the catalog once it has ended (an
// agent run) or is deleted (an analysis).
func (s *Service) forgetHeld(id string) {
	if p := s.cfg.Placement; p != nil {
		p.Ended(id)
	}
}
