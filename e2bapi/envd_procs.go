package e2bapi

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"

	"connectrpc.com/connect"
)

// maxQueuedBytes bounds the output queued for one follower of a process
// (a Start or Connect stream) that reads slower than the process writes:
// past it the follower's stream ends with an error saying output was lost,
// and the process goes on.
const maxQueuedBytes = 4 << 20

// maxMarkerSearch bounds the stderr held back while looking for
// startedMarker; past it, the cell is taken to run.
const maxMarkerSearch = 64 << 10

// procTables holds the process table of each sandbox, by session ID.
type procTables struct {
	mu     sync.Mutex
	tables map[string]*procTable
}

func newProcTables() *procTables { return &procTables{tables: map[string]*procTable{}} }

// of returns the table of sb's session, made on first use and forgotten
// when the session ends.
func (t *procTables) of(sb envdSandbox) *procTable {
	ss := sb.session()
	t.mu.Lock()
	defer t.mu.Unlock()
	if pt, ok := t.tables[ss.ID()]; ok {
		return pt
	}
	pt := &procTable{procs: map[uint32]*envdProcess{}, turn: make(chan struct{}, 1)}
	t.tables[ss.ID()] = pt
	if done := ss.Done(); done != nil {
		go func() {
			<-done
			t.mu.Lock()
			delete(t.tables, ss.ID())
			t.mu.Unlock()
		}()
	}
	return pt
}

// procTable is a sandbox's commands: those running and those waiting for
// their turn. A session runs one cell at a time, so its commands run one
// at a time too, in turn (the turn semaphore), each for as long as its
// cell runs.
type procTable struct {
	mu      sync.Mutex
	nextPid uint32
	procs   map[uint32]*envdProcess
	turn    chan struct{}
}

// maxProcesses bounds a sandbox's commands running or waiting their turn:
// each waiting one holds a stream and a goroutine of the server, and the
// caller decides how many it starts.
const maxProcesses = 32

// add registers a new process of config, with its own pid, or refuses it
// when maxProcesses are already there.
func (pt *procTable) add(config processConfig, tag *string) (*envdProcess, error) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if len(pt.procs) >= maxProcesses {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
			"process: at most %d commands may run or wait their turn in a sandbox at once; wait for one to end or kill one", maxProcesses))
	}
	pt.nextPid++
	ctx, cancel := context.WithCancel(context.Background())
	p := &envdProcess{pid: pt.nextPid, config: config, tag: tag, ctx: ctx, cancel: cancel, followers: map[*follower]struct{}{}}
	pt.procs[p.pid] = p
	return p, nil
}

// remove forgets an ended process.
func (pt *procTable) remove(p *envdProcess) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	delete(pt.procs, p.pid)
}

// find returns the process sel names, or nil.
func (pt *procTable) find(sel *processSelector) *envdProcess {
	if sel == nil {
		return nil
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if sel.Pid != nil {
		return pt.procs[uint32(*sel.Pid)]
	}
	if sel.Tag != nil {
		for _, p := range pt.procs {
			if p.tag != nil && *p.tag == *sel.Tag {
				return p
			}
		}
	}
	return nil
}

// list describes the processes, by pid.
func (pt *procTable) list() []processInfo {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	out := make([]processInfo, 0, len(pt.procs))
	for _, p := range pt.procs {
		out = append(out, processInfo{Config: p.config, Pid: p.pid, Tag: p.tag})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out
}

// envdProcess is a command of a sandbox: its cell runs under ctx, which
// cancel ends (SendSignal), and its events go to its followers.
type envdProcess struct {
	pid    uint32
	config processConfig
	tag    *string
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	followers map[*follower]struct{}
	end       *endEvent // set once the process has ended
	inCell    bool      // its cell was handed to the session
	started   bool      // its cell runs: startedMarker came
	killed    bool      // a kill waits for started
	prefix    []byte    // the start of stderr, until startedMarker is whole
}

// kill ends the process: at once if its cell waits for its turn or runs;
// once it runs, if the session has it but the kernel may not have started
// it yet. A session interrupts a cell by sending its kernel SIGINT, which
// the kernel ignores between cells, so a cell cancelled before the kernel
// starts it would run on, uninterruptible, until the session kills the
// whole sandbox for not yielding: that is when a command queued behind
// another cell (runCode) is killed.
func (p *envdProcess) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killed = true
	if !p.inCell || p.started {
		p.cancel()
	}
}

// handedToSession marks the process's cell given to the session, unless
// it was killed already: then it says false, and the cell must not run.
func (p *envdProcess) handedToSession() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inCell = true
	return !p.killed
}

// follower is a stream's view of a process's events: those published
// since it followed, queued until the stream sends them.
type follower struct {
	wake   chan struct{} // has a value when the queue may have grown
	mu     sync.Mutex
	queue  []processEvent
	bytes  int
	lagged bool // output was dropped: the queue was full
}

// follow returns a follower of the events published from now on; one of
// an ended process gets its end event at once.
//
// At most maxFollowers follow a process at once: each may queue
// maxQueuedBytes of its output.
func (p *envdProcess) follow() (*follower, error) {
	f := &follower{wake: make(chan struct{}, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.end != nil {
		f.push(processEvent{End: p.end})
		return f, nil
	}
	if len(p.followers) >= maxFollowers {
		return nil, connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
			"process %d: at most %d streams may follow a command at once", p.pid, maxFollowers))
	}
	p.followers[f] = struct{}{}
	return f, nil
}

// maxFollowers bounds the streams following one command (its Start and
// the Connects to it).
const maxFollowers = 8

// unfollow stops f's events.
func (p *envdProcess) unfollow(f *follower) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.followers, f)
}

// output publishes a chunk of the process's output. It never blocks (a
// session's output callback must not): a follower whose queue is full
// loses the chunk and is told so.
func (p *envdProcess) output(stdout bool, chunk []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !stdout && !p.started {
		// The marker is the cell's first write to stderr; a process an
		// earlier command left behind may write before it, when the
		// session thaws for this cell: that output is kept, the marker
		// cut out of it.
		p.prefix = append(p.prefix, chunk...)
		i := bytes.Index(p.prefix, []byte(startedMarker))
		if i < 0 && len(p.prefix) < maxMarkerSearch {
			return
		}
		chunk = p.prefix
		if i >= 0 {
			chunk = append(p.prefix[:i:i], p.prefix[i+len(startedMarker):]...)
		}
		p.started, p.prefix = true, nil
		if p.killed {
			p.cancel()
		}
		if len(chunk) == 0 {
			return
		}
	}
	b := append([]byte(nil), chunk...)
	ev := processEvent{Data: &dataEvent{Stderr: b}}
	if stdout {
		ev = processEvent{Data: &dataEvent{Stdout: b}}
	}
	for f := range p.followers {
		f.pushData(ev, len(b))
	}
}

// finish publishes the process's end, once.
func (p *envdProcess) finish(end endEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.end != nil {
		return
	}
	p.end = &end
	if len(p.prefix) > 0 { // stderr of a cell that never started the command
		for f := range p.followers {
			f.pushData(processEvent{Data: &dataEvent{Stderr: p.prefix}}, len(p.prefix))
		}
	}
	for f := range p.followers {
		f.push(processEvent{End: &end})
	}
	p.followers = map[*follower]struct{}{}
}

func (f *follower) push(ev processEvent) {
	f.mu.Lock()
	f.queue = append(f.queue, ev)
	f.mu.Unlock()
	f.notify()
}

func (f *follower) pushData(ev processEvent, n int) {
	f.mu.Lock()
	if f.bytes+n > maxQueuedBytes {
		f.lagged = true
	} else {
		f.queue = append(f.queue, ev)
		f.bytes += n
	}
	f.mu.Unlock()
	f.notify()
}

func (f *follower) notify() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// take returns the queued events and empties the queue.
func (f *follower) take() (evs []processEvent, lagged bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	evs, f.queue, f.bytes = f.queue, nil, 0
	return evs, f.lagged
}
