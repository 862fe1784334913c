package linux

import "testing"

// TestCellGate checks that quiet is closed exactly when no cell runs.
func TestCellGate(t *testing.T) {
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	var g cellGate
	steps := []struct {
		name  string
		do    func()
		quiet bool
	}{
		{"no cell yet", func() {}, true},
		{"one cell", g.enter, false},
		{"two cells", g.enter, false},
		{"one ended", g.leave, false},
		{"both ended", g.leave, true},
		{"another cell", g.enter, false},
	}
	for _, s := range steps {
		before := g.quiet()
		s.do()
		if got := closed(g.quiet()); got != s.quiet {
			t.Errorf("%s: quiet closed = %v, want %v", s.name, got, s.quiet)
		}
		if s.quiet && !closed(before) {
			// A waiter that began waiting before is released too.
			t.Errorf("%s: the channel taken before the step is still open", s.name)
		}
	}
}
