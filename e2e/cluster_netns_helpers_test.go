package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// netnsCluster is a cluster of crucible serve nodes on a network of their
// own: a bridge in the host's network namespace, with the address HostIP
// where Postgres and Debian's nats-server listen, and a network namespace
// per node, joined to the bridge by a veth pair, with an address of its
// own in a documentation range (RFC 5737). The test, in the host's
// namespace, reaches every node through the bridge, as a client on
// another machine would.
//
// Only the network is a node's own: it shares the host's mount, PID and
// cgroup namespaces (as separate machines would not), so that the test
// sees from the host every sandbox process, cgroup and mount a node makes.
// A node is started with nsenter --net, not ip netns exec: ip netns exec
// also unshares the mount namespace and mounts a fresh sysfs on /sys, which
// hides the host's cgroup hierarchies under /sys/fs/cgroup, so a node
// started that way cannot make its sandboxes' cgroups (found while
// building this harness).
type netnsCluster struct {
	tb testing.TB
	// Bridge is the bridge's name.
	Bridge string
	// Subnet is the first three octets of the /24, such as 198.51.100.
	Subnet string
	// HostIP is the bridge's address, Subnet.1.
	HostIP string
	// DB is the Postgres URL, on HostIP.
	DB string
	// NATS is nats-server's URL, on HostIP.
	NATS string
	// Nodes are the nodes, n1, n2, ...
	Nodes []*netnsNode
	// nodeArgs are the serve flags every node gets beyond its place.
	nodeArgs []string
}

// netnsNode is one crucible serve node in its network namespace.
type netnsNode struct {
	*server
	// ID is the node id, n1, n2, ...
	ID string
	// NS is its network namespace (ip netns).
	NS string
	// Veth is the host's end of its veth pair, a port of the bridge: set
	// down, it cuts the node off.
	Veth string
	// IP is its address.
	IP string
}

// nodePort is the port every node listens on: each has a network
// namespace, so a port, of its own.
const nodePort = 8080

// staleNetnsRE matches every namespace ("crn<pid>n<i>"), bridge
// ("crb<pid>") and veth ("crv<pid>n<i>") this harness makes, <pid> the
// test process's: a run killed before its cleanup leaves names whose pid
// is dead, which the next run removes (removeStaleNetns).
var staleNetnsRE = regexp.MustCompile(`^cr[nbv]([0-9]+)(n[0-9]+)?$`)

// docSubnets are the documentation ranges of RFC 5737, in the order
// tried: a range the host already has an address in (another run of these
// tests at the same time) is skipped.
var docSubnets = []string{"198.51.100", "203.0.113", "192.0.2"}

// newNetnsCluster builds the network of n nodes, starts Postgres and
// nats-server on the bridge's address, creates an API key for each
// tenant, and starts the nodes with nodeArgs beyond their place (--addr,
// --db, --cluster, --node-id, --advertise). Everything it made is removed
// when tb ends, whether it passed or not. It returns the keys' secrets by
// tenant.
func newNetnsCluster(tb testing.TB, n int, tenants []string, nodeArgs ...string) (*netnsCluster, map[string]string) {
	tb.Helper()
	testenv.Root(tb)
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(tb, tool, "apt-get install iproute2 util-linux")
		}
	}
	removeStaleNetns(tb)
	c := &netnsCluster{tb: tb, nodeArgs: nodeArgs}
	c.Subnet = freeDocSubnet(tb)
	c.HostIP = c.Subnet + ".1"
	pid := os.Getpid()
	c.Bridge = fmt.Sprintf("crb%d", pid)
	ipCmd(tb, "link", "add", c.Bridge, "type", "bridge")
	tb.Cleanup(func() { _ = exec.Command("ip", "link", "del", c.Bridge).Run() })
	ipCmd(tb, "addr", "add", c.HostIP+"/24", "dev", c.Bridge)
	ipCmd(tb, "link", "set", c.Bridge, "up")
	for i := 1; i <= n; i++ {
		node := &netnsNode{
			ID:   fmt.Sprintf("n%d", i),
			NS:   fmt.Sprintf("crn%dn%d", pid, i),
			Veth: fmt.Sprintf("crv%dn%d", pid, i),
			IP:   fmt.Sprintf("%s.%d", c.Subnet, 10+i),
		}
		ipCmd(tb, "netns", "add", node.NS)
		tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", node.NS).Run() }) // takes its veth pair with it
		ipCmd(tb, "link", "add", node.Veth, "type", "veth", "peer", "name", "eth0", "netns", node.NS)
		ipCmd(tb, "link", "set", node.Veth, "master", c.Bridge, "up")
		ipCmd(tb, "-n", node.NS, "addr", "add", node.IP+"/24", "dev", "eth0")
		ipCmd(tb, "-n", node.NS, "link", "set", "eth0", "up")
		ipCmd(tb, "-n", node.NS, "link", "set", "lo", "up")
		c.Nodes = append(c.Nodes, node)
	}
	c.DB = startPostgresOn(tb, c.HostIP, c.Subnet+".0/24")
	c.NATS, _ = startNATSServerOn(tb, c.HostIP)
	keys := map[string]string{}
	for _, tenant := range tenants {
		keys[tenant] = clusterKey(tb, c.DB, tenant)
	}
	for _, node := range c.Nodes {
		c.Start(node)
	}
	return c, keys
}

// Start starts node's crucible serve in its namespace (again, after a
// kill) and waits until it answers GET /healthz through the bridge. It is
// stopped (SIGTERM) when the test ends, if it still runs.
func (c *netnsCluster) Start(node *netnsNode) {
	tb := c.tb
	tb.Helper()
	bin := crucibleBinary(tb)
	node.server = nil
	url := fmt.Sprintf("http://%s", net.JoinHostPort(node.IP, strconv.Itoa(nodePort)))
	args := []string{"--net=/run/netns/" + node.NS, "--", bin, "serve",
		"--addr", strings.TrimPrefix(url, "http://"), "--db", c.DB, "--cluster", c.NATS,
		"--node-id", node.ID, "--advertise", url}
	if serveHasFlag(tb, "socket") { // a socket of its own, never the host's
		args = append(args, "--socket", filepath.Join(tb.TempDir(), "serve.sock"))
	}
	args = append(args, c.nodeArgs...)
	// nsenter enters the namespace and execs crucible: the process is the
	// node itself, and dies with the test process (Pdeathsig survives exec).
	cmd := exec.Command("nsenter", args...)
	cmd.Dir = tb.TempDir()
	logs := &logBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start node %s: nsenter %s: %v", node.ID, strings.Join(args, " "), err)
	}
	s := &server{t: tb, name: "node " + node.ID, URL: url, Cmd: cmd, logs: logs, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	tb.Cleanup(func() {
		s.Stop()
		if tb.Failed() {
			tb.Logf("%s (pid %d) log tail:\n%s", s.name, cmd.Process.Pid, s.logs.Tail(60))
		}
	})
	hc := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(60 * time.Second); ; {
		resp, err := hc.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-s.exited:
			tb.Fatalf("node %s exited before serving (%v); its output:\n%s", node.ID, s.waitErr, logs.Tail(60))
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("node %s: GET %s/healthz did not answer 200 within 60s (last: %v); its output:\n%s", node.ID, url, statusOrErr(resp, err), logs.Tail(60))
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Client = nodeClient(tb, url, "")
	node.server = s
	tb.Logf("node %s: pid %d in network namespace %s, serving at %s", node.ID, cmd.Process.Pid, node.NS, url)
}

// Cut sets the host's end of node's veth down: the node can reach
// nothing (NATS, Postgres, the other nodes) and nothing reaches it, while
// it keeps running.
func (c *netnsCluster) Cut(node *netnsNode) { ipCmd(c.tb, "link", "set", node.Veth, "down") }

// Reconnect sets it up again.
func (c *netnsCluster) Reconnect(node *netnsNode) { ipCmd(c.tb, "link", "set", node.Veth, "up") }

// nodeClient is an SDK client of url with key (none if empty) whose every
// request ends within 60 s: a client of a cluster must not hang on a node
// that is cut off.
func nodeClient(tb testing.TB, url, key string) *client.Client {
	tb.Helper()
	opts := []client.Option{client.WithHTTPClient(&http.Client{Timeout: 60 * time.Second})}
	if key != "" {
		opts = append(opts, client.WithAPIKey(key))
	}
	c, err := client.New(url, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// clusterKey creates an API key of tenant in db with the CLI and returns
// its secret.
func clusterKey(tb testing.TB, db, tenant string) string {
	tb.Helper()
	out, err := exec.Command(crucibleBinary(tb), "key", "create", "--tenant", tenant, "--name", "e2e", "--json", "--db", db).Output()
	var k struct{ Secret string }
	if err == nil {
		err = json.Unmarshal(out, &k)
	}
	if err != nil || k.Secret == "" {
		tb.Fatalf("crucible key create --tenant %s: %v (%s)", tenant, err, out)
	}
	return k.Secret
}

// ipCmd runs ip with args and fails tb if it fails.
func ipCmd(tb testing.TB, args ...string) {
	tb.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		tb.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// removeStaleNetns deletes the namespaces and bridges an earlier run of
// these tests left when it was killed before its cleanup (their names
// carry its pid, which is no longer alive): a namespace takes its veth
// pair with it.
func removeStaleNetns(tb testing.TB) {
	tb.Helper()
	stale := func(name string) bool {
		m := staleNetnsRE.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, _ := strconv.Atoi(m[1])
		return pid != os.Getpid() && syscall.Kill(pid, 0) == syscall.ESRCH
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		tb.Fatalf("ip netns list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && stale(f[0]) {
			ipCmd(tb, "netns", "del", f[0])
			tb.Logf("removed the network namespace %s of a test run that was killed", f[0])
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		tb.Fatal(err)
	}
	for _, ifc := range ifaces {
		if stale(ifc.Name) {
			ipCmd(tb, "link", "del", ifc.Name)
			tb.Logf("removed the link %s of a test run that was killed", ifc.Name)
		}
	}
}

// freeDocSubnet returns the first of docSubnets in which the host has no
// address.
func freeDocSubnet(tb testing.TB) string {
	tb.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		tb.Fatal(err)
	}
	for _, subnet := range docSubnets {
		_, block, _ := net.ParseCIDR(subnet + ".0/24")
		used := false
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && block.Contains(ipn.IP) {
				used = true
			}
		}
		if !used {
			return subnet
		}
	}
	tb.Fatalf("the host has addresses in every documentation range %v: other runs of the cluster's tests?", docSubnets)
	return ""
}

// TestRemoveStaleNetns: the namespace and bridge of a test run that died
// before its cleanup (named after its pid, now dead) are removed; those
// of a live process, such as another run going on, are left alone.
func TestRemoveStaleNetns(t *testing.T) {
	testenv.Root(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	made := map[string]bool{} // name -> whether it must go
	for pid, stale := range map[int]bool{dead.Process.Pid: true, live.Process.Pid: false} {
		ns, br := fmt.Sprintf("crn%dn1", pid), fmt.Sprintf("crb%d", pid)
		ipCmd(t, "netns", "add", ns)
		ipCmd(t, "link", "add", br, "type", "bridge")
		t.Cleanup(func() {
			_ = exec.Command("ip", "netns", "del", ns).Run()
			_ = exec.Command("ip", "link", "del", br).Run()
		})
		made[ns], made[br] = stale, stale
	}
	removeStaleNetns(t)
	for name, stale := range made {
		_, nsErr := os.Stat("/run/netns/" + name)
		_, linkErr := net.InterfaceByName(name)
		exists := nsErr == nil || linkErr == nil
		if exists == stale {
			t.Errorf("%s: exists %v after removeStaleNetns, want %v", name, exists, !stale)
		}
	}
}
