package service

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/cluster"
	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// StartNATSForTest is startNATS, for the package's external tests.
var StartNATSForTest = startNATS

// startNATS starts Debian's nats-server with JetStream on a free
// loopback port and returns its URL; it is killed when tb ends.
func startNATS(tb testing.TB) string {
	tb.Helper()
	bin := testenv.NATSServer(tb)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", tb.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not listen within 10s: %s", bin, out.String())
		}
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", port)
}

// BenchmarkTenantShare times what a tenant's run costs its share: the
// local count alone (one node: a mutex and a map), then the local count
// and the cluster-wide share on a real nats-server (Debian's), another
// node holding one of the tenant's runs, each acquired and released;
// it reports both, their ratio and the overhead in ms per run.
func BenchmarkTenantShare(b *testing.B) {
	url := startNATS(b)
	join := func(id string) *cluster.Node {
		n, err := cluster.Join(context.Background(), cluster.Config{URL: url, NodeID: id, Advertise: "http://127.0.0.1:1",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { n.Close() })
		return n
	}
	a, other := join("node-a"), join("node-b")
	if r, _, err := other.Acquire(context.Background(), ShareRuns, "acme", 1<<20); err != nil || r == nil {
		b.Fatalf("node B's run: %v", err)
	}
	tenants := map[string]TenantLimits{"acme": {MaxConcurrentRuns: 1 << 20}}
	local := &Service{cfg: Config{Tenants: tenants}}
	clustered := &Service{cfg: Config{Tenants: tenants, Shares: a}}
	ctx := context.Background()
	loop := func(s *Service, n int) time.Duration {
		start := time.Now()
		for range n {
			release, err := s.acquireRun(ctx, "acme")
			if err != nil {
				b.Fatal(err)
			}
			release()
		}
		return time.Since(start)
	}
	b.ResetTimer()
	tLocal := loop(local, b.N)
	tCluster := loop(clustered, b.N)
	b.StopTimer()
	perLocal, perCluster := float64(tLocal.Nanoseconds())/float64(b.N), float64(tCluster.Nanoseconds())/float64(b.N)
	b.ReportMetric(perLocal, "local-ns/op")
	b.ReportMetric(perCluster, "cluster-ns/op")
	b.ReportMetric(perCluster/perLocal, "ratio")
	b.ReportMetric((perCluster-perLocal)/1e6, "overhead-ms")
}
