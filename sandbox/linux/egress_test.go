package linux_test

import (
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy/egress"
	"github.com/crucible-sandbox/crucible/policy/egress/egresstest"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// TestEgressAllowlist: a run with an allowlist reaches the allowed host
// through the host's proxy and nothing else, whether it is served cold or
// warm (egresstest.Probe: the hostile program and its checks); every
// connection is in the run's record with its bytes and verdict; and
// nothing of the proxy is left once the run has ended.
func TestEgressAllowlist(t *testing.T) {
	testenv.Root(t)
	probe := egresstest.NewProbe(t, "203.0.113.0/30")
	req := probe.Request()

	// A zygote slot serves no run with network (its namespace has no
	// listener): that run takes the cold path; a single-run warm sandbox
	// gets the listener when it is taken.
	for _, tc := range []struct {
		name       string
		warm       int
		singleRun  bool
		servedWarm bool
	}{{"cold", 0, false, false}, {"warm", 1, true, true}, {"zygote slots", 1, false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, linux.Options{Warm: tc.warm, SingleRunWarm: tc.singleRun, Egress: egress.Config{Resolver: probe.DNS.Resolver()}})
			if tc.warm > 0 {
				awaitWarm(t, rt)
			}
			linksBefore := egresstest.HostLinks(t)
			fdsBefore := egresstest.OpenFDs(t)
			res := runProgram(t, rt, req)
			netns := probe.Check(t, res)
			if st := rt.WarmStats(); tc.warm > 0 && (st.Hits == 1) != tc.servedWarm {
				t.Errorf("warm pool %+v: served warm %v, want %v", st, st.Hits == 1, tc.servedWarm)
			}
			// Nothing is left: the run's network namespace (the
			// sandbox's, whose id the program printed) is held by no
			// process, thread or descriptor on the host; no interface
			// appeared on the host (the test hosts' aside: other
			// packages' tests add and remove theirs at the same time);
			// and the proxy's listener and connections are closed (the
			// test process holds no more descriptors than before; a warm
			// runtime refills its pool in the background, so only a
			// cold one can be counted).
			if held := egresstest.NetnsHolders(t, netns); len(held) > 0 {
				t.Errorf("the run's network namespace %s is still held by %v", netns, held)
			}
			if got := egresstest.HostLinks(t); got != linksBefore {
				t.Errorf("interfaces %q after the run, %q before", got, linksBefore)
			}
			if tc.warm == 0 {
				// The proxy closes its side of a connection when
				// either side has; the last close may trail the
				// run's end by a moment, so new descriptors get a
				// few seconds to go before they count as left.
				added := egresstest.NewFDs(t, fdsBefore)
				for deadline := time.Now().Add(5 * time.Second); len(added) > 0 && time.Now().Before(deadline); {
					time.Sleep(50 * time.Millisecond)
					added = egresstest.NewFDs(t, fdsBefore)
				}
				if len(added) > 0 {
					t.Errorf("descriptors opened by the run and still open: %v: the proxy left them", added)
				}
			}
		})
	}
}

// TestEgressNone: a run without an allowlist gets no proxy, no proxy
// variables and no log, as before.
func TestEgressNone(t *testing.T) {
	rt := newRuntime(t, linux.Options{})
	res := runProgram(t, rt, sandbox.Request{Language: sandbox.Python,
		Code: `import os, socket; print(sorted(k for k in os.environ if "proxy" in k.lower()), [n for _, n in socket.if_nameindex()])`})
	if got := strings.TrimSpace(string(res.Stdout)); got != "[] ['lo']" || res.Network != nil {
		t.Errorf("got %q and log %+v; want no proxy variable, only lo, no log", got, res.Network)
	}
}
