package service_test

import (
	"context"
	"errors"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestCellTimeoutWithinMaxima: a cell's timeout_ms overrides the
// session's wall time, so it is capped by the server's maxima like the
// session's own limits, not only by the contract's: a deployment that
// allows 2 s per program must not run a 10 min cell because it asked.
func TestCellTimeoutWithinMaxima(t *testing.T) {
	svc := newService(t, &fakeRuntime{}, func(c *service.Config) { c.Maxima.WallTimeMS = 2000 })
	ss, err := svc.OpenSession(context.Background(), "t", sandbox.SessionRequest{}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		timeout int64
		wantErr bool
	}{
		{"the session's own", 0, false},
		{"at the maximum", 2000, false},
		{"above the maximum", 600_000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ss.Exec(context.Background(), sandbox.Cell{Code: "1", TimeoutMS: tc.timeout})
			var ie *sandbox.InputError
			switch {
			case !tc.wantErr && err != nil:
				t.Fatalf("Exec: %v", err)
			case tc.wantErr && (!errors.As(err, &ie) || ie.Field != "timeout_ms"):
				t.Fatalf("Exec with timeout_ms %d: err %v, want an input error naming timeout_ms", tc.timeout, err)
			}
		})
	}
}
