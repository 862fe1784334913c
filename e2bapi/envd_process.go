package e2bapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// keepaliveEvery is the longest a command's stream stays silent: a
// keepalive event goes out when nothing else has for this long, or for
// the shorter interval the client asks in its Keepalive-Ping-Interval
// header (seconds; E2B's SDK asks 50).
const keepaliveEvery = 5 * time.Second

// minCommandTimeout is the shortest timeout a command's cell gets. The
// session interrupts a cell past its timeout with a SIGINT that its kernel
// ignores until it has started the cell: a timeout of a few milliseconds
// could fire before, leaving the cell uninterruptible and the session to
// be killed. A caller that asks less still sees its call end at its own
// deadline; the command ends within this.
const minCommandTimeout = time.Second

// mountProcess serves process.Process.
//
// A command runs as one cell of the sandbox's session, for as long as the
// command runs (envd_command.go). Cells run one at a time: while a
// command runs, the sandbox's next command, runCode and file operations
// that need a cell (MakeDir, Move, Remove) wait their turn; a background
// command is one whose caller does not wait, not one that runs beside
// others. Between cells the session's processes are frozen by design, so
// nothing runs in the background of a sandbox.
func (e *envd) mountProcess(mux *http.ServeMux) {
	opts := envdHandlerOptions()
	mux.Handle("/process.Process/Start", connect.NewServerStreamHandler("/process.Process/Start", e.start, opts...))
	mux.Handle("/process.Process/Connect", connect.NewServerStreamHandler("/process.Process/Connect", e.connect, opts...))
	mux.Handle("/process.Process/List", connect.NewUnaryHandler("/process.Process/List", e.list, opts...))
	mux.Handle("/process.Process/SendSignal", connect.NewUnaryHandler("/process.Process/SendSignal", e.sendSignal, opts...))
	const noStdin = "a command's stdin is /dev/null here"
	mux.Handle("/process.Process/SendInput", connect.NewUnaryHandler("/process.Process/SendInput",
		func(context.Context, *connect.Request[sendInputRequest]) (*connect.Response[sendInputResponse], error) {
			return nil, envdUnimplemented("process.Process/SendInput", noStdin)
		}, opts...))
	mux.Handle("/process.Process/CloseStdin", connect.NewUnaryHandler("/process.Process/CloseStdin",
		func(context.Context, *connect.Request[closeStdinRequest]) (*connect.Response[closeStdinResponse], error) {
			return nil, envdUnimplemented("process.Process/CloseStdin", noStdin)
		}, opts...))
	mux.Handle("/process.Process/StreamInput", connect.NewClientStreamHandler("/process.Process/StreamInput",
		func(context.Context, *connect.ClientStream[streamInputRequest]) (*connect.Response[streamInputResp], error) {
			return nil, envdUnimplemented("process.Process/StreamInput", noStdin)
		}, opts...))
	mux.Handle("/process.Process/Update", connect.NewUnaryHandler("/process.Process/Update",
		func(context.Context, *connect.Request[updateRequest]) (*connect.Response[updateResponse], error) {
			return nil, envdUnimplemented("process.Process/Update", "there are no pseudo-terminals to resize")
		}, opts...))
}

// start runs a command (commands.run): a start event with its pid at
// once, then its output as it comes, then its end. The command's timeout
// is the call's (E2B's timeoutMs travels as the Connect timeout; without
// one, the session's wall-time limit). The command does not end with the
// stream: a caller that disconnects can Connect again or kill it.
func (e *envd) start(ctx context.Context, req *connect.Request[startRequest], stream *connect.ServerStream[startResponse]) error {
	sb, err := e.sandbox(ctx)
	if err != nil {
		return err
	}
	m := req.Msg
	switch {
	case m.Process == nil || m.Process.Cmd == "":
		return connect.NewError(connect.CodeInvalidArgument, errors.New("process.cmd: must name the program to run"))
	case m.Pty != nil:
		return envdUnimplemented("a pseudo-terminal (pty)", "commands run with pipes, stdin /dev/null")
	case m.Stdin != nil && *m.Stdin:
		return envdUnimplemented("stdin: true", "a command's stdin is /dev/null here")
	}
	deadline, _ := ctx.Deadline()
	pt := e.procs.of(sb)
	p, err := pt.add(*m.Process, m.Tag)
	if err != nil {
		return err
	}
	f, _ := p.follow() // a new process's first follower: never refused
	go e.run(sb, pt, p, deadline)
	return envdFollow(ctx, req.Header(), p, f, func(ev processEvent) error { return stream.Send(&startResponse{Event: ev}) })
}

// run runs p's cell when its turn comes, publishing its output and its
// end, and forgets p. A command killed while it waits, or whose
// deadline (zero: none) passes meanwhile, never runs; one that runs gets
// what is left of its deadline.
func (e *envd) run(sb envdSandbox, pt *procTable, p *envdProcess, deadline time.Time) {
	defer pt.remove(p)
	defer p.cancel()
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case pt.turn <- struct{}{}:
		defer func() { <-pt.turn }()
	case <-p.ctx.Done():
		p.finish(commandEnd(sandbox.Result{Status: sandbox.StatusKilled}, nil))
		return
	case <-expired:
		p.finish(commandEnd(sandbox.Result{Status: sandbox.StatusTimeout}, nil))
		return
	}
	if !p.handedToSession() { // killed as its turn came
		p.finish(commandEnd(sandbox.Result{Status: sandbox.StatusKilled}, nil))
		return
	}
	var timeoutMS int64
	if !deadline.IsZero() {
		left := time.Until(deadline)
		if left <= 0 { // its caller's timeout passed while it waited
			p.finish(commandEnd(sandbox.Result{Status: sandbox.StatusTimeout}, nil))
			return
		}
		timeoutMS = max(left.Milliseconds(), minCommandTimeout.Milliseconds())
	}
	// The command is the caller's code, not the platform's: the cell is
	// not Unchecked, so the session's code policy checks it, and one that
	// blocks subprocess blocks every command, its reason the end's error.
	cell := sandbox.Cell{
		Code:      commandCode(p.config, sb.envVars()),
		TimeoutMS: timeoutMS,
		OnOutput:  func(s sandbox.Stream, chunk []byte) { p.output(s == sandbox.StreamStdout, chunk) },
	}
	res, err := sb.session().Exec(p.ctx, cell)
	var ie *sandbox.InputError
	if errors.As(err, &ie) && ie.Field == "timeout_ms" {
		// Longer than this server lets any cell run (E2B's SDK asks 60 s
		// unless told otherwise): the sandbox's own wall-time limit
		// instead. The refusal came before anything ran.
		cell.TimeoutMS = 0
		res, err = sb.session().Exec(p.ctx, cell)
	}
	p.finish(commandEnd(res, err))
}

// envdFollow sends a start event for p, then f's events until p's end, with
// keepalives while there are none. It returns when the end is sent, when
// the stream's context ends, or with an error when f lost output.
func envdFollow(ctx context.Context, h http.Header, p *envdProcess, f *follower, send func(processEvent) error) error {
	defer p.unfollow(f)
	if err := send(processEvent{Start: &startEvent{Pid: p.pid}}); err != nil {
		return err
	}
	every := keepaliveEvery
	if s, err := strconv.Atoi(h.Get("Keepalive-Ping-Interval")); err == nil && s > 0 && time.Duration(s)*time.Second < every {
		every = time.Duration(s) * time.Second
	}
	idle := time.NewTimer(every)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle.C:
			if err := send(processEvent{Keepalive: &struct{}{}}); err != nil {
				return err
			}
		case <-f.wake:
			evs, lagged := f.take()
			if lagged {
				return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
					"process %d: this stream fell more than %d bytes of output behind and lost some; the command goes on", p.pid, maxQueuedBytes))
			}
			for _, ev := range evs {
				if d, ok := ctx.Deadline(); ok && ev.End != nil && !time.Now().Before(d) {
					// The caller's timeout has passed: it ends the call as
					// deadline_exceeded (what E2B's SDK turns into its
					// TimeoutError) even when the command's end, caused by
					// the same timeout, is ready a moment before the
					// stream's context says so.
					return connect.NewError(connect.CodeDeadlineExceeded, context.DeadlineExceeded)
				}
				if err := send(ev); err != nil {
					return err
				}
				if ev.End != nil {
					return nil
				}
			}
		}
		idle.Reset(every)
	}
}

// connect re-attaches to a running command: a start event, then its
// events from now on (not those already sent), as Start's stream goes on.
func (e *envd) connect(ctx context.Context, req *connect.Request[connectRequest], stream *connect.ServerStream[connectResponse]) error {
	sb, err := e.sandbox(ctx)
	if err != nil {
		return err
	}
	p, err := e.process(sb, req.Msg.Process)
	if err != nil {
		return err
	}
	f, err := p.follow()
	if err != nil {
		return err
	}
	return envdFollow(ctx, req.Header(), p, f, func(ev processEvent) error { return stream.Send(&connectResponse{Event: ev}) })
}

// list lists the sandbox's commands, running or waiting their turn.
func (e *envd) list(ctx context.Context, _ *connect.Request[processListRequest]) (*connect.Response[processListResponse], error) {
	sb, err := e.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&processListResponse{Processes: e.procs.of(sb).list()}), nil
}

// sendSignal ends a command (handle.kill()): its cell is cancelled, the
// session interrupts it, and the cell kills the command's process group
// with SIGKILL (for SIGTERM as well: the cell has one way to end it).
func (e *envd) sendSignal(ctx context.Context, req *connect.Request[sendSignalRequest]) (*connect.Response[sendSignalResponse], error) {
	sb, err := e.sandbox(ctx)
	if err != nil {
		return nil, err
	}
	if s := req.Msg.Signal; s != signalSIGKILL && s != signalSIGTERM {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("signal: must be SIGNAL_SIGKILL or SIGNAL_SIGTERM, got %d", s))
	}
	p, err := e.process(sb, req.Msg.Process)
	if err != nil {
		return nil, err
	}
	p.kill()
	return connect.NewResponse(&sendSignalResponse{}), nil
}

// process returns the sandbox's command sel names: CodeNotFound if there
// is none (it ended, or never was).
func (e *envd) process(sb envdSandbox, sel *processSelector) (*envdProcess, error) {
	if sel == nil || (sel.Pid == nil && sel.Tag == nil) {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("process: must name a process by pid or tag"))
	}
	if p := e.procs.of(sb).find(sel); p != nil {
		return p, nil
	}
	if sel.Pid != nil {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process with pid %d not found (it ended, or never ran)", *sel.Pid))
	}
	return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("process with tag %q not found (it ended, or never ran)", *sel.Tag))
}
