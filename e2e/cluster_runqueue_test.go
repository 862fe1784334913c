package e2e

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/cluster"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// startRunNode starts a cluster node offering the host's image with
// slots run slots.
func startRunNode(t *testing.T, id, db, nats string, slots int) *server {
	t.Helper()
	cfg := configFlag(t, `{"max_concurrent": `+strconv.Itoa(slots)+`}`)
	return startServer(t, id, db, append([]string{"--cluster", nats, "--node-id", id, "--image", "host", "--warm", "0"}, cfg...)...)
}

// runsExecuted is how many runs s executed, from its metrics
// (crucible_runs_total, every status): a node counts the runs it
// executes, not those it queued for another.
func runsExecuted(t *testing.T, s *server) int {
	t.Helper()
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "crucible_runs_total{") {
			v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			n += int(v)
		}
	}
	return n
}

// TestClusterRunQueue runs two real crucible serve nodes sharing a real
// Postgres store and Debian's nats-server. Node A has one run slot, kept
// busy: runs sent to A are executed by B (their records name B, one
// record each, their output streamed to the client through A), but for
// one too big for a NATS message, which waits for A's slot. B killed
// with SIGKILL mid-run, the client through A gets "lost" with B named,
// the record reads lost and no node runs it again. A run pulled by a
// node that dies before starting it is run by another (B, restarted),
// and B's restart leaves A's running run alone. Cut off from NATS, A
// refuses runs with 503 (the others take it for dead).
func TestClusterRunQueue(t *testing.T) {
	testenv.Root(t)
	db := startPostgres(t)
	nats, natsProc := startNATSServer(t)
	a := startRunNode(t, "node-a", db, nats, 1)
	b := startRunNode(t, "node-b", db, nats, 2)
	ctx := context.Background()
	sdk := func(s *server) *client.Client {
		c, err := client.New(s.URL, client.WithHTTPClient(&http.Client{Timeout: 90 * time.Second}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ca := sdk(a)
	record := func(id string) *api.Run {
		t.Helper()
		r, err := ca.GetRun(ctx, id)
		if err != nil {
			t.Fatalf("GetRun %s through A: %v", id, err)
		}
		return r
	}
	// busy takes A's one slot with a run of secs seconds.
	busy := func(secs int) string {
		t.Helper()
		id, err := ca.RunAsync(ctx, sandbox.Request{Language: sandbox.Bash, Code: "sleep " + strconv.Itoa(secs),
			Limits: sandbox.Limits{WallTimeMS: int64(secs+30) * 1000}})
		if err != nil {
			t.Fatal(err)
		}
		if !poll(10*time.Second, func() bool { return record(id).Status == api.StatusRunning }) {
			t.Fatalf("A's busy run %s did not start: %+v", id, record(id))
		}
		if r := record(id); r.Node != "node-a" {
			t.Fatalf("the run A started on its free slot names node %q, want node-a", r.Node)
		}
		return id
	}

	blocker := busy(12)
	t.Run("busy A: B executes, output through A", func(t *testing.T) {
		var mu sync.Mutex
		var out strings.Builder
		var ids []string
		for i := range 3 {
			res, err := ca.CreateRun(ctx, sandbox.Request{Language: sandbox.Bash, Code: "echo first " + strconv.Itoa(i) + "; sleep 0.5; echo second",
				OnOutput: func(_ sandbox.Stream, b []byte) { mu.Lock(); out.Write(b); mu.Unlock() }})
			if err != nil {
				t.Fatalf("run %d through busy A: %v", i, err)
			}
			if res.Result.Status != sandbox.StatusOK || string(res.Result.Stdout) != "first "+strconv.Itoa(i)+"\nsecond\n" {
				t.Errorf("run %d: %s %q %q", i, res.Result.Status, res.Result.Stdout, res.Result.Reason)
			}
			ids = append(ids, res.ID)
		}
		if got := out.String(); got != "first 0\nsecond\nfirst 1\nsecond\nfirst 2\nsecond\n" {
			t.Errorf("output streamed through A: %q", got)
		}
		for _, id := range ids {
			if r := record(id); r.Node != "node-b" || r.Status != sandbox.StatusOK {
				t.Errorf("record %s: node %q status %s, want node-b ok", id, r.Node, r.Status)
			}
		}
		list, _, err := ca.ListRuns(ctx, client.ListOptions{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for _, r := range list {
			seen[r.ID]++
		}
		for _, id := range append(ids, blocker) {
			if seen[id] != 1 {
				t.Errorf("run %s has %d records, want 1", id, seen[id])
			}
		}
		if len(list) != 4 {
			t.Errorf("%d records, want 4 (the busy run and three)", len(list))
		}
		if n := runsExecuted(t, b); n != 3 {
			t.Errorf("B executed %d runs, want 3", n)
		}
	})

	t.Run("too big for a message: waits for A's slot", func(t *testing.T) {
		big := strings.Repeat("x", 1200<<10) // over NATS's 1 MiB
		res, err := ca.CreateRun(ctx, sandbox.Request{Language: sandbox.Bash, Code: "wc -c < big",
			Files: []sandbox.File{{Name: "big", Content: sandbox.Data(big)}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Result.Status != sandbox.StatusOK || strings.TrimSpace(string(res.Result.Stdout)) != strconv.Itoa(len(big)) {
			t.Errorf("big run: %s %q %q", res.Result.Status, res.Result.Stdout, res.Result.Reason)
		}
		if r := record(res.ID); r.Node != "node-a" {
			t.Errorf("the big run ran on %q, want node-a (its front)", r.Node)
		}
		if r := record(blocker); r.Status != sandbox.StatusOK {
			t.Errorf("the big run finished before A's busy run: busy run %s", r.Status)
		}
	})

	t.Run("executor killed mid-run: lost, not run again", func(t *testing.T) {
		busyA := busy(25)
		executedA := runsExecuted(t, a)
		started := make(chan struct{})
		var once sync.Once
		type answer struct {
			res *api.RunResponse
			err error
		}
		done := make(chan answer, 1)
		go func() {
			res, err := ca.CreateRun(ctx, sandbox.Request{Language: sandbox.Bash, Code: "echo started; sleep 60",
				Limits:   sandbox.Limits{WallTimeMS: 90_000},
				OnOutput: func(sandbox.Stream, []byte) { once.Do(func() { close(started) }) }})
			done <- answer{res, err}
		}()
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the run's output never came through A")
		}
		if err := b.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		var ans answer
		select {
		case ans = <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("no answer through A within 30 s of the executor's death")
		}
		t.Logf("lost answered %v after the kill", time.Since(killed).Round(time.Millisecond))
		if ans.err != nil {
			t.Fatalf("run through A: %v", ans.err)
		}
		if ans.res.Result.Status != api.StatusLost || !strings.Contains(ans.res.Result.Reason, "node node-b") {
			t.Errorf("answer: %s %q, want lost naming node-b", ans.res.Result.Status, ans.res.Result.Reason)
		}
		r := record(ans.res.ID)
		if r.Status != api.StatusLost || r.Node != "node-b" || !strings.Contains(r.Reason, "died") {
			t.Errorf("record: %s on %q, %q", r.Status, r.Node, r.Reason)
		}
		// Past the queue's ack wait, once A's slot is free again: no node
		// ran it again, and its record still reads lost.
		if !poll(40*time.Second, func() bool { return record(busyA).FinishedAt != nil }) {
			t.Fatal("A's busy run did not end")
		}
		time.Sleep(cluster.RunAckWait + 2*time.Second)
		if n := runsExecuted(t, a); n != executedA+1 {
			t.Errorf("A executed %d runs since, want 1 (its own busy run)", n-executedA)
		}
		if r := record(ans.res.ID); r.Status != api.StatusLost {
			t.Errorf("the lost run later reads %s", r.Status)
		}
	})

	t.Run("pulled by a node that died before starting: run by another", func(t *testing.T) {
		busyA := busy(20)
		id, err := ca.RunAsync(ctx, sandbox.Request{Language: sandbox.Bash, Code: "echo rescued"})
		if err != nil {
			t.Fatal(err)
		}
		// A node that takes the run and dies before acknowledging it: a
		// NATS client pulling from the image's consumer as a node does.
		nc, err := natsgo.Connect(nats)
		if err != nil {
			t.Fatal(err)
		}
		js, _ := jetstream.New(nc)
		cons, err := js.Consumer(ctx, cluster.RunsStream, "runs-host")
		if err != nil {
			t.Fatal(err)
		}
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			if !strings.Contains(string(m.Data()), id) {
				t.Fatalf("pulled another run: %.200s", m.Data())
			}
		}
		if got != 1 {
			t.Fatalf("pulled %d runs (%v), want the queued one", got, batch.Error())
		}
		nc.Close() // dies, never acknowledging it
		b2 := startRunNode(t, "node-b", db, nats, 2)
		if !poll(30*time.Second, func() bool { return record(id).FinishedAt != nil }) {
			t.Fatalf("the run was not run by another node: %+v", record(id))
		}
		if r := record(id); r.Status != sandbox.StatusOK || r.Node != "node-b" || string(r.Stdout) != "rescued\n" {
			t.Errorf("rescued run: %s on %q, %q", r.Status, r.Node, r.Stdout)
		}
		if n := runsExecuted(t, b2); n != 1 {
			t.Errorf("the new B executed %d runs, want 1", n)
		}
		// B's new process settled its own runs only: A's still runs.
		if r := record(busyA); r.Status != api.StatusRunning {
			t.Errorf("A's running run reads %s after B restarted, want running", r.Status)
		}

	})

	t.Run("cut off from NATS: 503", func(t *testing.T) {
		_ = natsProc.Process.Kill()
		_ = natsProc.Wait()
		time.Sleep(cluster.NodeTTL + time.Second) // A knows it is cut off
		_, err := ca.CreateRun(ctx, sandbox.Request{Language: sandbox.Bash, Code: "echo cut off"})
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable || !strings.Contains(apiErr.Message, "cannot reach the cluster") {
			t.Errorf("a run on a cut-off node: %v, want 503 saying it cannot reach the cluster", err)
		}
	})
}
