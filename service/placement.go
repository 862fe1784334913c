package service

import "context"

// Placement puts the sessions the service opens on record, in cluster
// mode (package cluster's catalog of owners): told of each session this
// node opens and ends, it lets the other nodes forward the session's
// requests here. It may refuse new sessions, as a node cut off from the
// cluster does: it could not record them.
type Placement interface {
	// Admit returns nil while a session may open here; an error refuses
	// the request (KindUnavailable, with the error's text) before a
	// sandbox starts.
	Admit() error
	// Opened records tenant's session id as this node's, before the
	// session is offered; an error closes the session and refuses the
	// request as Admit's does.
	Opened(ctx context.Context, id, tenant string) error
	// Ended forgets session id; it is called once for each session
	// Opened recorded, whatever ended it.
	Ended(id string)
}

// placementRefused is the service's refusal for Placement's err.
func placementRefused(err error) error {
	return errorf(KindUnavailable, "%v", err)
}

// ended marks ss ended in the registry and tells the Placement, once.
func (ss *Session) ended() {
	ss.s.sessions.end(ss.id)
	if p := ss.s.cfg.Placement; p != nil {
		ss.endOnce.Do(func() { p.Ended(ss.id) })
	}
}
