package service

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestAdmissionTryRunAndWaitFree: tryRun takes a free slot or none
// (cluster mode's "here, now, or the cluster's queue"); waitFree, which
// a puller of the cluster's queue calls, returns while a slot is free,
// blocks while none is, wakes when one frees and returns false once
// admission closed.
func TestAdmissionTryRunAndWaitFree(t *testing.T) {
	a := newAdmission(1, 2, prometheus.NewGauge(prometheus.GaugeOpts{Name: "depth"}))
	ctx := context.Background()
	if !a.waitFree(ctx) {
		t.Fatal("waitFree with a free slot = false")
	}
	first, err := a.enter(func() {})
	if err != nil {
		t.Fatal(err)
	}
	if !first.tryRun() {
		t.Fatal("tryRun with a free slot = false")
	}
	if err := first.wait(ctx); err != nil {
		t.Fatalf("wait after tryRun: %v", err)
	}
	second, err := a.enter(func() {})
	if err != nil {
		t.Fatal(err)
	}
	if second.tryRun() {
		t.Fatal("tryRun with no free slot = true")
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if a.waitFree(short) {
		t.Fatal("waitFree with no free slot = true")
	}
	freed := make(chan bool)
	go func() { freed <- a.waitFree(ctx) }()
	time.Sleep(50 * time.Millisecond)
	second.leave() // a place, not a slot: waitFree sleeps on
	select {
	case <-freed:
		t.Fatal("waitFree woke when a queued run left")
	case <-time.After(100 * time.Millisecond):
	}
	first.leave()
	select {
	case ok := <-freed:
		if !ok {
			t.Fatal("waitFree = false when a slot freed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waitFree did not wake when the slot freed")
	}
	third, _ := a.enter(func() {})
	third.tryRun()
	go func() { freed <- a.waitFree(ctx) }()
	drained := a.close()
	select {
	case ok := <-freed:
		if ok {
			t.Fatal("waitFree = true after close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waitFree did not return at close")
	}
	third.leave()
	<-drained
}
