package service_test

import (
	"context"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

func storeFilterSession(id string) store.Filter { return store.Filter{SessionID: id} }

// TestSessionsListed: Sessions lists a tenant's open sessions, newest
// first, with their cells and limits; not another tenant's, nor one that
// ended on its own.
func TestSessionsListed(t *testing.T) {
	ctx := context.Background()
	rt := &fakeRuntime{}
	svc := newService(t, rt, nil)
	open := func(tenant string, req sandbox.SessionRequest) *service.Session {
		t.Helper()
		s, err := svc.OpenSession(ctx, tenant, req, service.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a1 := open("a", sandbox.SessionRequest{Limits: sandbox.Limits{WallTimeMS: 2000}})
	a2 := open("a", sandbox.SessionRequest{})
	open("b", sandbox.SessionRequest{})
	for range 3 {
		if _, err := a1.Exec(ctx, sandbox.Cell{Code: "1"}); err != nil {
			t.Fatal(err)
		}
	}
	got := svc.Sessions("a")
	if len(got) != 2 || got[0].ID != a2.ID() || got[1].ID != a1.ID() {
		t.Fatalf("Sessions(a) = %+v; want %s then %s", got, a2.ID(), a1.ID())
	}
	if s := got[1]; s.Cells != 3 || s.Limits.WallTimeMS != 2000 || s.Language != sandbox.Python ||
		s.Image != service.DefaultImageName || s.LastUsedAt.Before(s.CreatedAt) {
		t.Errorf("a1: %+v", s)
	}

	rt.mu.Lock()
	rt.opened[1].Close() // a2's interpreter ends on its own
	rt.mu.Unlock()
	for len(svc.Sessions("a")) != 1 { // the service learns it from Done, soon
		time.Sleep(time.Millisecond)
	}
	if got := svc.Sessions("a"); len(got) != 1 || got[0].ID != a1.ID() {
		t.Errorf("after a2 ended: %+v", got)
	}
}
