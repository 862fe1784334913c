package linux

import "sync"

// cellGate counts the cells running in a Runtime's sessions, so that work
// done in the background (building a warm session) waits until none runs
// rather than take CPU from one.
type cellGate struct {
	mu      sync.Mutex
	running int
	idle    chan struct{} // closed when running falls to zero
}

// closedChan is a channel that is always closed.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// enter counts a cell that starts.
func (g *cellGate) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running == 0 {
		g.idle = make(chan struct{})
	}
	g.running++
}

// leave counts a cell that ended.
func (g *cellGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	if g.running == 0 {
		close(g.idle)
	}
}

// quiet returns a channel that is closed once no cell runs (at once if
// none runs now).
func (g *cellGate) quiet() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running == 0 {
		return closedChan
	}
	return g.idle
}
