package linux

import (
	"errors"
	"testing"
)

// TestPoolGate proves a pool with a gate builds only once the gate has
// opened: the build waits for the channel the gate returns, not merely
// for the gate to be asked.
func TestPoolGate(t *testing.T) {
	asked, built, open := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{})
	gate := func() <-chan struct{} {
		select {
		case asked <- struct{}{}:
		default:
		}
		return open
	}
	build := func() (*sandboxProc, error) {
		select {
		case built <- struct{}{}:
		default:
		}
		return nil, errors.New("no sandbox in this test")
	}
	pool := newPool("test", 1, build, gate, nil)
	defer pool.close()
	<-asked
	select {
	case <-built:
		t.Fatal("the pool built while its gate was shut")
	default:
	}
	close(open)
	<-built
}
