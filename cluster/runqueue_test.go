package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// testQueue opens n's run queue for the image "host", with the ack wait
// given.
func testQueue(t *testing.T, n *Node, ackWait time.Duration) *RunQueue {
	t.Helper()
	q, err := n.runQueue(context.Background(), []string{"host", "image.with dots"}, ackWait)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// take pulls one run of image from q, failing t on an error.
func take(t *testing.T, q *RunQueue, image string, wait time.Duration) ([]byte, func(context.Context) error, func()) {
	t.Helper()
	job, start, giveBack, err := q.Take(image, wait)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	return job, start, giveBack
}

// TestRunQueue: a queued run goes to one node; one taken but not started
// goes to another after the ack wait (its node died before starting it);
// one started never again; one given back at once; images whose names
// are not subject tokens have queues of their own.
func TestRunQueue(t *testing.T) {
	url := startDebianNATS(t)
	a, _ := testNode(t, url, "a", "http://127.0.0.1:1")
	b, _ := testNode(t, url, "b", "http://127.0.0.1:2")
	const ackWait = 700 * time.Millisecond
	qa, qb := testQueue(t, a, ackWait), testQueue(t, b, ackWait)
	ctx := context.Background()

	t.Run("one node takes it", func(t *testing.T) {
		stop, err := qa.Enqueue(ctx, "host", "run_one", []byte("job one"), func([]byte) {})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		var mu sync.Mutex
		var got []string
		var wg sync.WaitGroup
		for _, q := range []*RunQueue{qa, qb, qa, qb} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				job, start, _, err := q.Take("host", time.Second)
				if err != nil || job == nil {
					return
				}
				if err := start(ctx); err != nil {
					t.Errorf("start: %v", err)
				}
				mu.Lock()
				got = append(got, q.NodeID()+":"+string(job))
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(got) != 1 {
			t.Fatalf("the run was taken %d times (%v), want once", len(got), got)
		}
		if job, _, _ := take(t, qb, "host", 2*ackWait); job != nil {
			t.Errorf("a started run came back after the ack wait: %q", job)
		}
	})

	t.Run("taken, not started: another node runs it", func(t *testing.T) {
		if _, err := qa.Enqueue(ctx, "host", "run_two", []byte("job two"), func([]byte) {}); err != nil {
			t.Fatal(err)
		}
		job, _, _ := take(t, qa, "host", time.Second)
		if string(job) != "job two" {
			t.Fatalf("took %q", job)
		}
		// a dies now, before starting it: b gets it once the ack wait passed.
		began := time.Now()
		job, start, _ := take(t, qb, "host", 5*ackWait)
		if string(job) != "job two" {
			t.Fatalf("b took %q, want the run a did not start", job)
		}
		if d := time.Since(began); d > 3*ackWait {
			t.Errorf("redelivered after %v, want about the ack wait %v", d, ackWait)
		}
		if err := start(ctx); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("given back: at once to another", func(t *testing.T) {
		if _, err := qa.Enqueue(ctx, "image.with dots", "run_three", []byte("job three"), func([]byte) {}); err != nil {
			t.Fatal(err)
		}
		if job, _, _ := take(t, qa, "host", 300*time.Millisecond); job != nil {
			t.Fatalf("image host's queue gave %q, a run of another image", job)
		}
		job, _, giveBack := take(t, qa, "image.with dots", time.Second)
		if string(job) != "job three" {
			t.Fatalf("took %q", job)
		}
		giveBack()
		job, start, _ := take(t, qb, "image.with dots", ackWait/2)
		if string(job) != "job three" {
			t.Fatalf("after giveBack b took %q within half the ack wait", job)
		}
		_ = start(ctx)
	})

	t.Run("too big", func(t *testing.T) {
		_, err := qa.Enqueue(ctx, "host", "run_big", make([]byte, qa.MaxJob()+1), func([]byte) {})
		if err == nil || !strings.Contains(err.Error(), "over the queue's limit") {
			t.Errorf("Enqueue of %d bytes = %v, want refused", qa.MaxJob()+1, err)
		}
	})
}

// TestRunEvents: a run's events reach its front in order, its result is
// answered, a cancel reaches its executor; without a front or an
// executor, they fail at once.
func TestRunEvents(t *testing.T) {
	url := startDebianNATS(t)
	a, _ := testNode(t, url, "a", "http://127.0.0.1:1")
	b, _ := testNode(t, url, "b", "http://127.0.0.1:2")
	qa, qb := testQueue(t, a, time.Second), testQueue(t, b, time.Second)
	ctx := context.Background()
	got := make(chan string, 100)
	stop, err := qa.Enqueue(ctx, "host", "run_ev", []byte("job"), func(b []byte) { got <- string(b) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1", "2", "3", "4", "5"}
	for _, e := range want[:4] {
		qb.Publish("run_ev", []byte(e))
	}
	if err := qb.Deliver("run_ev", []byte("5")); err != nil {
		t.Fatalf("Deliver to a listening front: %v", err)
	}
	for _, w := range want {
		select {
		case e := <-got:
			if e != w {
				t.Fatalf("event %q, want %q", e, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("event %q never came", w)
		}
	}
	stop()
	if err := qb.Deliver("run_ev", []byte("late")); !errors.Is(err, nats.ErrNoResponders) {
		t.Errorf("Deliver with no front = %v, want no responders", err)
	}

	if err := qa.Cancel(ctx, "run_ev"); err == nil {
		t.Errorf("Cancel with no executor succeeded")
	}
	cancelled := make(chan struct{}, 1)
	stopCancel, err := qb.OnCancel("run_ev", func() { cancelled <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer stopCancel()
	// The executor's acknowledgement, on the same connection, is what
	// puts the subscription in place at the server before the program
	// starts; here a flush does.
	if err := qb.n.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := qa.Cancel(ctx, "run_ev"); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the executor was not told")
	}

	if alive, err := qa.Alive(ctx, "b"); err != nil || !alive {
		t.Errorf("Alive(b) = %v, %v", alive, err)
	}
	crash(b)
	waitFor(t, 4*testTTL, "b taken for dead", func() bool { alive, err := qa.Alive(ctx, "b"); return err == nil && !alive })
}
