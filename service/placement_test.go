package service_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// recordingPlacement records what the service tells it and refuses as
// told to.
type recordingPlacement struct {
	mu               sync.Mutex
	admitErr, putErr error
	opened, ended    []string
}

func (p *recordingPlacement) Admit() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.admitErr
}

func (p *recordingPlacement) Opened(_ context.Context, id, tenant string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.putErr != nil {
		return p.putErr
	}
	p.opened = append(p.opened, tenant+"/"+id)
	return nil
}

func (p *recordingPlacement) Ended(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ended = append(p.ended, id)
}

func (p *recordingPlacement) endedList() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ended)
}

// TestPlacement: a session is placed on record before it is offered and
// forgotten once, however it ends; a Placement that refuses (a node cut
// off from its cluster) refuses the session as unavailable, before a
// sandbox starts or with the one started closed, and its share given
// back.
func TestPlacement(t *testing.T) {
	ctx := context.Background()
	rt := &fakeRuntime{}
	p := &recordingPlacement{}
	svc := newService(t, rt, func(c *service.Config) { c.Placement = p; c.TenantDefaults.MaxSessions = 1 })

	ss, err := svc.OpenSession(ctx, "acme", sandbox.SessionRequest{}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.opened, []string{"acme/" + ss.ID()}) {
		t.Errorf("opened %v, want acme/%s", p.opened, ss.ID())
	}
	_ = ss.Close()
	_ = ss.Close()
	if _, err := ss.Exec(ctx, sandbox.Cell{Code: "1"}); err == nil {
		t.Error("exec in a closed session succeeded")
	}
	// Ended once, though Close, the end it signals (Done) and the failed
	// exec each mark it ended.
	time.Sleep(50 * time.Millisecond)
	if got := p.endedList(); !slices.Equal(got, []string{ss.ID()}) {
		t.Errorf("ended %v, want %s once", got, ss.ID())
	}

	// A session that ends on its own is forgotten too.
	ss2, err := svc.OpenSession(ctx, "acme", sandbox.SessionRequest{}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	own := rt.opened[len(rt.opened)-1]
	rt.mu.Unlock()
	_ = own.Close() // the runtime ends it, not the service
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(p.endedList(), ss2.ID()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !slices.Contains(p.endedList(), ss2.ID()) {
		t.Errorf("a session that ended on its own was not forgotten: %v", p.endedList())
	}

	cutOff := errors.New("this node cannot reach the cluster")
	for _, tc := range []struct {
		name           string
		admit, put     error
		sandboxStarted bool
	}{
		{"refused before a sandbox starts", cutOff, nil, false},
		{"refused once it started: closed", nil, cutOff, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.mu.Lock()
			p.admitErr, p.putErr = tc.admit, tc.put
			p.mu.Unlock()
			rt.mu.Lock()
			before := len(rt.opened)
			rt.mu.Unlock()
			_, err := svc.OpenSession(ctx, "acme", sandbox.SessionRequest{}, service.SessionOptions{})
			if kindOf(err) != service.KindUnavailable || err.Error() != cutOff.Error() {
				t.Errorf("err %v (kind %d), want KindUnavailable %q", err, kindOf(err), cutOff)
			}
			rt.mu.Lock()
			started := rt.opened[before:]
			rt.mu.Unlock()
			if (len(started) > 0) != tc.sandboxStarted {
				t.Errorf("sandboxes started: %d", len(started))
			}
			for _, s := range started {
				select {
				case <-s.done:
				default:
					t.Error("the sandbox of a refused session is still open")
				}
			}
			p.mu.Lock()
			p.admitErr, p.putErr = nil, nil
			p.mu.Unlock()
			// The tenant's share (one session) was given back.
			ok, err := svc.OpenSession(ctx, "acme", sandbox.SessionRequest{}, service.SessionOptions{})
			if err != nil {
				t.Fatalf("after a refusal, the tenant's one session: %v", err)
			}
			_ = ok.Close()
		})
	}
}
