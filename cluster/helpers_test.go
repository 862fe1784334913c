package cluster

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// Fast timings for the tests: a heartbeat every 200 ms, down after
// 1.5 s (wide enough that a loaded machine does not miss seven in a row).
const (
	testHeartbeat = 200 * time.Millisecond
	testTTL       = 1500 * time.Millisecond
)

// natsServer is an embedded NATS JetStream server on a fixed loopback
// port and store, so that it can be stopped and started again.
type natsServer struct {
	t    *testing.T
	port int
	dir  string
	srv  *natsserver.Server
}

// startNATS starts an embedded NATS JetStream server for t.
func startNATS(t *testing.T) *natsServer {
	t.Helper()
	s := &natsServer{t: t, port: freePort(t), dir: t.TempDir()}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *natsServer) start() {
	s.t.Helper()
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: s.port, JetStream: true, StoreDir: s.dir, NoSigs: true, NoLog: true})
	if err != nil {
		s.t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		s.t.Fatal("embedded NATS server did not start")
	}
	s.srv = srv
}

func (s *natsServer) stop() {
	if s.srv != nil {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
		s.srv = nil
	}
}

func (s *natsServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

// startDebianNATS starts Debian's nats-server (testenv.NATSServer) with
// JetStream, on a free loopback port and a store of its own, and returns
// its URL; it is killed when t ends.
func startDebianNATS(t *testing.T) string {
	t.Helper()
	bin := testenv.NATSServer(t)
	port := freePort(t)
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen within 10s: %s", bin, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", port)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a log sink safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testNode joins the cluster at url as id, advertising adv, with the
// tests' timings; it leaves when t ends (unless the test closed it). Its
// log goes to the returned buffer.
func testNode(t *testing.T, url, id, adv string) (*Node, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	n, err := Join(context.Background(), Config{URL: url, NodeID: id, Advertise: adv, Images: []string{"host", "datascience"},
		Load:   func() Load { return Load{Slots: 4, Busy: 1, Sessions: 2, MaxSessions: 16} },
		Logger: slog.New(slog.NewTextHandler(logs, nil)), heartbeat: testHeartbeat, ttl: testTTL})
	if err != nil {
		t.Fatalf("join %s: %v", id, err)
	}
	t.Cleanup(func() { n.Close() })
	return n, logs
}

// crash stops n as a SIGKILL would: no more heartbeats, nothing deleted.
func crash(n *Node) {
	close(n.stop)
	<-n.done
	n.nc.Close()
}

// waitFor polls cond every 20 ms until it holds or within passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
