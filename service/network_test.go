package service_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/prometheus/client_golang/prometheus"
)

// netRuntime answers every run with a network log, as the linux runtime
// does for a run with an allowlist (that runtime's own tests run the real
// proxy: sandbox/linux/egress_test.go); it counts the runs and keeps the
// last request.
type netRuntime struct {
	fakeRuntime
	last atomic.Pointer[sandbox.Request]
}

// secretHost is a host name a program spelled a secret into.
const secretHost = "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.evil.test"

func (n *netRuntime) Run(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	res, err := n.fakeRuntime.Run(ctx, req)
	n.last.Store(&req)
	res.Network = &sandbox.NetworkLog{Connections: []sandbox.Connection{
		{Kind: "http", Host: "web.test", IP: "198.51.100.2", Port: 80, BytesSent: 10, BytesReceived: 20, Verdict: sandbox.VerdictAllowed},
		{Kind: "http", Host: secretHost, Port: 80, Verdict: sandbox.VerdictRefused, Reason: secretHost + " port 80 is not in the allowlist"},
	}, Unlisted: 2, BytesSent: 10, BytesReceived: 20}
	return res, err
}

func TestNetworkPermission(t *testing.T) {
	yes, no := true, false
	allow := sandbox.Network{Allow: []string{"web.test"}}
	tests := []struct {
		name     string
		defaults *bool
		tenant   *bool
		network  sandbox.Network
		allowed  bool
	}{
		{name: "no network needs no leave", network: sandbox.Network{}, allowed: true},
		{name: "default: no tenant may", network: allow},
		{name: "tenant allowed", tenant: &yes, network: allow, allowed: true},
		{name: "every tenant allowed", defaults: &yes, network: allow, allowed: true},
		{name: "tenant denied over the defaults", defaults: &yes, tenant: &no, network: allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &netRuntime{}
			svc := newService(t, rt, func(c *service.Config) {
				c.TenantDefaults.AllowNetwork = tt.defaults
				c.Tenants = map[string]service.TenantLimits{"acme": {AllowNetwork: tt.tenant}}
			})
			req := py("x")
			req.Network = tt.network
			_, err := svc.Run(context.Background(), "acme", req, service.RunOptions{})
			if tt.allowed {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if got := rt.last.Load().Network; len(got.Allow) != len(tt.network.Allow) {
					t.Errorf("the runtime got network %v, want %v", got, tt.network)
				}
				return
			}
			var se *service.Error
			if kindOf(err) != service.KindForbidden || !errors.As(err, &se) || se.Field != "network" || !strings.Contains(se.Rule, "allow_network") {
				t.Fatalf("Run = %v, want KindForbidden naming network and allow_network", err)
			}
			if rt.runs.Load() != 0 {
				t.Errorf("the run was refused, yet the runtime ran it")
			}
		})
	}
}

// TestNetworkRecorded: the log reaches the record, redacted, is counted
// in /metrics, and a run with network is never answered from the cache.
func TestNetworkRecorded(t *testing.T) {
	yes := true
	rt := &netRuntime{}
	svc := newService(t, rt, func(c *service.Config) { c.TenantDefaults.AllowNetwork = &yes })
	req := py("x")
	req.Network = sandbox.Network{Allow: []string{"web.test"}}
	ctx := context.Background()
	var ids []string
	for range 2 {
		resp, err := svc.Run(ctx, "t", req, service.RunOptions{Cache: true})
		if err != nil {
			t.Fatal(err)
		}
		if resp.CacheHit {
			t.Errorf("a run with network was answered from the cache")
		}
		ids = append(ids, resp.ID)
	}
	rec, err := svc.Get(ctx, "t", ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if rec.Network == nil || len(rec.Network.Connections) != 2 {
		t.Fatalf("record network = %+v, want the two connections", rec.Network)
	}
	for _, c := range rec.Network.Connections {
		if strings.Contains(c.Host+c.Reason, "sk-ant-") {
			t.Errorf("the record keeps a secret the program spelled into a host name: %+v", c)
		}
	}
	if rec.Redactions == 0 {
		t.Errorf("redactions = 0, want the secret counted")
	}
	reg := svc.Metrics()
	for _, m := range []struct {
		name, label string
		want        float64
	}{
		{"crucible_egress_connections_total", `verdict="allowed"`, 2},
		{"crucible_egress_connections_total", `verdict="refused"`, 2 * 3},
		{"crucible_egress_bytes_total", `direction="sent"`, 20},
		{"crucible_egress_bytes_total", `direction="received"`, 40},
	} {
		got := metricValue(t, reg, m.name, m.label)
		if got != m.want {
			t.Errorf("%s{%s} = %v, want %v", m.name, m.label, got, m.want)
		}
	}
}

// metricValue returns the value of the counter name whose labels include
// label (such as `verdict="allowed"`).
func metricValue(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName()+`="`+l.GetValue()+`"` == label {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// refusingNetRuntime is a runtime that can give no run an allowlist, as
// the docker package's under gVisor (whose own test runs the real one:
// sandbox/docker/egress_test.go).
type refusingNetRuntime struct{ netRuntime }

func (*refusingNetRuntime) CheckNetwork(n sandbox.Network) error {
	if n.IsZero() {
		return nil
	}
	return &sandbox.InputError{Field: "network", Rule: `must be "none" under this runtime`}
}

// TestNetworkCheckedByRuntime: a run with an allowlist the runtime cannot
// give is refused as bad input naming the field before it is queued (the
// API's 400), and never reaches the runtime; one without runs. A tenant
// not allowed the network is refused as such first.
func TestNetworkCheckedByRuntime(t *testing.T) {
	yes, no := true, false
	for _, tt := range []struct {
		name    string
		allowed *bool
		network sandbox.Network
		want    string // "" runs; "input" an InputError; "forbidden" the tenant's refusal
	}{
		{"no network runs", &yes, sandbox.Network{}, ""},
		{"an allowlist is bad input", &yes, sandbox.Network{Allow: []string{"web.test"}}, "input"},
		{"a tenant without network is forbidden first", &no, sandbox.Network{Allow: []string{"web.test"}}, "forbidden"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rt := &refusingNetRuntime{}
			svc := newService(t, rt, func(c *service.Config) { c.TenantDefaults.AllowNetwork = tt.allowed })
			req := py("x")
			req.Network = tt.network
			_, err := svc.Run(context.Background(), "acme", req, service.RunOptions{})
			var ie *sandbox.InputError
			switch tt.want {
			case "":
				if err != nil || rt.runs.Load() != 1 {
					t.Fatalf("Run = %v after %d runs, want one run", err, rt.runs.Load())
				}
				return
			case "input":
				if !errors.As(err, &ie) || ie.Field != "network" {
					t.Fatalf("Run = %v, want an InputError naming network", err)
				}
			case "forbidden":
				if kindOf(err) != service.KindForbidden {
					t.Fatalf("Run = %v, want KindForbidden", err)
				}
			}
			if rt.runs.Load() != 0 {
				t.Errorf("the run was refused, yet the runtime ran it")
			}
		})
	}
}
