package service_test

import (
	"context"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestSessionDone proves a session says when its runtime's session ended
// on its own, for a caller (the CLI) to stop without another cell.
func TestSessionDone(t *testing.T) {
	rt := &fakeRuntime{}
	svc := newService(t, rt, nil)
	ss, err := svc.OpenSession(context.Background(), "t", sandbox.SessionRequest{Language: sandbox.Python}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ss.Done():
		t.Fatal("Done is closed while the session lives")
	default:
	}
	_ = rt.opened[0].Close() // the session ends on its own, as when its interpreter exits
	<-ss.Done()
}
