package e2bapi

import (
	"bytes"

	"strings"
	"testing"

	"connectrpc.com/connect"
)

// TestEnvdProcessOutput checks what a follower of a process gets from the
// session's output: the start marker stripped however the chunks fall,
// stdout untouched, and a kill held until the marker says the cell runs.
func TestEnvdProcessOutput(t *testing.T) {
	type chunk struct {
		stdout bool
		data   string
	}
	m := startedMarker
	cases := []struct {
		name           string
		chunks         []chunk
		stdout, stderr string
	}{
		{"marker alone", []chunk{{false, m}, {false, "err"}}, "", "err"},
		{"marker with output", []chunk{{false, m + "err\n"}}, "", "err\n"},
		{"marker split", []chunk{{false, m[:3]}, {false, m[3:10]}, {false, m[10:] + "x"}}, "", "x"},
		{"stdout before the marker", []chunk{{true, "out"}, {false, m}, {false, "e"}}, "out", "e"},
		{"the marker again later is output", []chunk{{false, m}, {false, m}}, "", m},
		{"a leftover process wrote first", []chunk{{false, "old\n" + m[:5]}, {false, m[5:] + "new"}}, "", "old\nnew"},
	}
	for _, c := range cases {
		pt := &procTable{procs: map[uint32]*envdProcess{}, turn: make(chan struct{}, 1)}
		p := mustAdd(t, pt)
		f, _ := p.follow()
		for _, ch := range c.chunks {
			p.output(ch.stdout, []byte(ch.data))
		}
		p.finish(endEvent{Exited: true})
		evs, lagged := f.take()
		var out, errs bytes.Buffer
		for _, ev := range evs {
			if ev.Data != nil {
				out.Write(ev.Data.Stdout)
				errs.Write(ev.Data.Stderr)
			}
		}
		if out.String() != c.stdout || errs.String() != c.stderr || lagged || evs[len(evs)-1].End == nil {
			t.Errorf("%s: stdout %q stderr %q lagged %v, want %q and %q, then the end", c.name, out.String(), errs.String(), lagged, c.stdout, c.stderr)
		}
	}

	// A kill before the cell runs waits for the marker.
	pt := &procTable{procs: map[uint32]*envdProcess{}, turn: make(chan struct{}, 1)}
	p := mustAdd(t, pt)
	if !p.handedToSession() {
		t.Fatal("handedToSession refused a live process")
	}
	p.kill()
	if p.ctx.Err() != nil {
		t.Error("a kill cancelled a cell the kernel may not have started")
	}
	p.output(false, []byte(m))
	if p.ctx.Err() == nil {
		t.Error("the kill did not cancel the cell once it ran")
	}
	// A kill while the process waits for its turn cancels at once, and
	// its cell never runs.
	q := mustAdd(t, pt)
	q.kill()
	if q.ctx.Err() == nil || q.handedToSession() {
		t.Error("a process killed while waiting was not cancelled, or would still run")
	}
}

// TestEnvdFollowerBound checks that a follower that does not read holds
// at most maxQueuedBytes of output, says it lost some, and still gets the
// end.
func TestEnvdFollowerBound(t *testing.T) {
	pt := &procTable{procs: map[uint32]*envdProcess{}, turn: make(chan struct{}, 1)}
	p := mustAdd(t, pt)
	p.output(false, []byte(startedMarker))
	f, _ := p.follow()
	chunk := []byte(strings.Repeat("x", 64<<10))
	for i := 0; i < 2*maxQueuedBytes/len(chunk); i++ {
		p.output(true, chunk)
	}
	p.finish(endEvent{})
	evs, lagged := f.take()
	held := 0
	for _, ev := range evs {
		if ev.Data != nil {
			held += len(ev.Data.Stdout)
		}
	}
	if !lagged || held > maxQueuedBytes || evs[len(evs)-1].End == nil {
		t.Errorf("lagged %v, held %d bytes (bound %d), last event %+v", lagged, held, maxQueuedBytes, evs[len(evs)-1])
	}
}

// mustAdd adds a process to pt, failing t if it is refused.
func mustAdd(t *testing.T, pt *procTable) *envdProcess {
	t.Helper()
	p, err := pt.add(processConfig{Cmd: "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEnvdProcessCap checks a sandbox holds at most maxProcesses commands
// running or waiting: one more is refused as resource exhausted, and an
// ended one makes room.
func TestEnvdProcessCap(t *testing.T) {
	pt := &procTable{procs: map[uint32]*envdProcess{}, turn: make(chan struct{}, 1)}
	var first *envdProcess
	for i := 0; i < maxProcesses; i++ {
		p := mustAdd(t, pt)
		if first == nil {
			first = p
		}
	}
	_, err := pt.add(processConfig{Cmd: "one more"}, nil)
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "process: at most") {
		t.Fatalf("command %d: %v, want resource exhausted naming process", maxProcesses+1, err)
	}
	pt.remove(first)
	mustAdd(t, pt)
}

// TestEnvdFollowerCap checks at most maxFollowers streams follow one
// command, and one that stops following makes room.
func TestEnvdFollowerCap(t *testing.T) {
	pt := &procTable{procs: map[uint32]*envdProcess{}, turn: make(chan struct{}, 1)}
	p := mustAdd(t, pt)
	var first *follower
	for i := 0; i < maxFollowers; i++ {
		f, err := p.follow()
		if err != nil {
			t.Fatalf("follower %d: %v", i+1, err)
		}
		if first == nil {
			first = f
		}
	}
	if _, err := p.follow(); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("follower %d: %v, want resource exhausted", maxFollowers+1, err)
	}
	p.unfollow(first)
	if _, err := p.follow(); err != nil {
		t.Fatalf("a follower after one left: %v", err)
	}
}
