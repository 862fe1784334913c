package linux

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSetFreezer drives the freezer wait with fake cgroup files: it asks
// again on every poll, returns once the state is reached, and fails on an
// error or when the state is not reached in time.
func TestSetFreezer(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name       string
		doneAfter  int   // polls before done reports true; -1 never
		requestErr error // returned by every request
		doneErr    error // returned by every done
		wantErr    string
		wantAsks   int // requests made, when no error
	}{
		{name: "at once", doneAfter: 0, wantAsks: 1},
		{name: "after a few polls", doneAfter: 3, wantAsks: 4},
		{name: "request fails", requestErr: boom, wantErr: "boom"},
		{name: "state unreadable", doneErr: boom, wantErr: "boom"},
		{name: "never reached", doneAfter: -1, wantErr: "not frozen within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asks, polls := 0, 0
			err := setFreezer("frozen", 20*time.Millisecond,
				func() error { asks++; return tt.requestErr },
				func() (bool, error) {
					polls++
					return tt.doneAfter >= 0 && polls > tt.doneAfter, tt.doneErr
				})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
			case tt.wantErr == "" && asks != tt.wantAsks:
				t.Fatalf("asked %d times, want %d", asks, tt.wantAsks)
			}
		})
	}
}
