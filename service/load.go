package service

// Load is what the service holds now: its run slots and sessions.
type Load struct {
	// Slots is how many runs may execute at once (Config.MaxConcurrent).
	Slots int
	// Busy is how many execute now.
	Busy int
	// Sessions is how many sessions are open.
	Sessions int
	// MaxSessions is how many may be open at once (Config.MaxSessions).
	MaxSessions int
}

// Load returns what the service holds now, for a cluster's registry of
// nodes.
func (s *Service) Load() Load {
	return Load{Slots: cap(s.adm.slots), Busy: len(s.adm.slots), Sessions: int(s.sessions.active()), MaxSessions: s.cfg.MaxSessions}
}
