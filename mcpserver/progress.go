package mcpserver

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// progressQueue bounds the output chunks waiting to be sent as progress
// notifications: a program's output must never block the run on a slow
// client, so chunks beyond it are dropped (the result still holds all).
const progressQueue = 64

// progress sends a running program's output to the client as progress
// notifications, when the call asked for them (a progress token).
type progress struct {
	ch   chan string
	done chan struct{}

	mu     sync.Mutex
	closed bool
}

// newProgress starts sending req's progress; nil when the call has no
// progress token. Stop it with stop.
func newProgress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	p := &progress{ch: make(chan string, progressQueue), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		n := 0
		for msg := range p.ch {
			n++
			// A client that went away ends the call's ctx; errors here
			// only mean that notification was lost.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg})
		}
	}()
	return p
}

// output is a sandbox.OutputFunc queueing each chunk; it never blocks.
func (p *progress) output(stream sandbox.Stream, chunk []byte) {
	p.send(string(stream) + ": " + text(chunk))
}

// send queues msg; it never blocks, and does nothing on a nil p.
func (p *progress) send(msg string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	select {
	case p.ch <- msg:
	default: // dropped: the client is behind
	}
}

// stop ends the notifications once those queued are sent.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	close(p.ch)
	p.mu.Unlock()
	<-p.done
}

// onOutput returns p's OutputFunc, nil for no progress.
func (p *progress) onOutput() sandbox.OutputFunc {
	if p == nil {
		return nil
	}
	return p.output
}
