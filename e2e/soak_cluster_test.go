package e2e

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// soakCluster turns TestSoakCluster on: `go test ./e2e/ -run
// TestSoakCluster -soak-cluster`, or scripts/test.sh --soak.
var soakCluster = flag.Bool("soak-cluster", false, "run the API soak against a cluster of three nodes in network namespaces")

// TestSoakCluster is TestSoak against a cluster: three crucible serve
// nodes, each in a network namespace of its own (netnsCluster), sharing
// a Postgres store and Debian's nats-server. Every request of the soak
// goes to the next node in turn, so a session opened on one node has its
// cells and its deletion sent to the others (forwarded to it) and an
// asynchronous run is read back through another node than the one that
// took it. Every answer must be right, and afterwards nothing is left on
// the host: no sandbox process, cgroup or mount of any node.
func TestSoakCluster(t *testing.T) {
	if !*soakCluster {
		t.Skip("not run: the cluster soak takes minutes and runs only with -soak-cluster (scripts/test.sh --soak)")
	}
	mountsBefore := mountinfo(t)
	c, keys := newNetnsCluster(t, 3, []string{"soak"}, "--image", "host", "--prestart", "1")
	hc := &http.Client{Timeout: 60 * time.Second}
	var turn atomic.Int64
	send := func(method, path, contentType string, body io.Reader) (httpResult, error) {
		node := c.Nodes[turn.Add(1)%int64(len(c.Nodes))]
		req, err := http.NewRequest(method, node.URL+path, body)
		if err != nil {
			return httpResult{}, err
		}
		req.Header.Set("Authorization", "Bearer "+keys["soak"])
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return httpResult{}, fmt.Errorf("%s %s to node %s: %v", method, path, node.ID, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return httpResult{}, fmt.Errorf("%s %s to node %s: reading the answer: %v", method, path, node.ID, err)
		}
		return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
	}
	runSoak(t, soakCases(), func(int64) soakSender { return send })

	var procs []proc
	var pids []int
	for _, node := range c.Nodes {
		procs = append(procs, descendants(node.PID())...)
		pids = append(pids, node.PID())
	}
	for _, node := range c.Nodes {
		node.Stop()
	}
	if left := survivors(procs); len(left) > 0 {
		t.Errorf("processes left after the nodes stopped: %v", left)
	}
	for _, pid := range pids {
		if left := cgroupsOwnedBy(pid); len(left) > 0 {
			t.Errorf("cgroups of node pid %d left after it stopped: %v", pid, left)
		}
	}
	for m := range mountinfo(t) {
		if !mountsBefore[m] && !strings.Contains(m, "/run/netns") {
			t.Errorf("mount left: %s", m)
		}
	}
}
