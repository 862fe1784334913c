package e2bapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

func envdPtr[T any](v T) *T { return &v }

// TestEnvdStart runs commands through process.Process/Start over a real
// session: exit codes, both streams, the environment (the sandbox's under
// the request's), the working directory, and input that tries to break out
// of the cell that embeds it.
func TestEnvdStart(t *testing.T) {
	f := newEnvdFixture(t, nil, map[string]string{"FROM_SANDBOX": "sbx", "BOTH": "sandbox"})
	hostile := `"); import os; os.system("touch /work/pwned") #` + "\n" + `'''"""\" \u0022 %s {}`
	cases := []struct {
		name           string
		cmd            string
		mod            func(*startRequest)
		stdout, stderr string
		exit           int32
		exited         bool
		errHas         string // what the end's error says, when set
	}{
		{name: "exit code and both streams", cmd: "echo hi; echo err >&2; exit 3", stdout: "hi\n", stderr: "err\n", exit: 3, exited: true},
		{name: "success", cmd: "echo ok", stdout: "ok\n", exited: true},
		{name: "environment", cmd: `echo "$FROM_SANDBOX $BOTH $FROM_REQUEST"`,
			mod:    func(r *startRequest) { r.Process.Envs = map[string]string{"BOTH": "request", "FROM_REQUEST": "req"} },
			stdout: "sbx request req\n", exited: true},
		{name: "default working directory", cmd: "pwd -P", stdout: "/work\n", exited: true},
		{name: "working directory", cmd: "mkdir -p /work/sub && cd /work/sub && pwd -P",
			stdout: "/work/sub\n", exited: true},
		{name: "cwd asked", cmd: "pwd -P", mod: func(r *startRequest) { r.Process.Cwd = envdPtr("/tmp") }, stdout: "/tmp\n", exited: true},
		{name: "cwd under /home/user", cmd: "pwd -P", mod: func(r *startRequest) { r.Process.Cwd = envdPtr("/home/user/sub") }, stdout: "/work/sub\n", exited: true},
		{name: "hostile input stays data", cmd: `printf '%s' "$H"; test ! -e /work/pwned`,
			mod:    func(r *startRequest) { r.Process.Envs = map[string]string{"H": hostile} },
			stdout: hostile, exited: true},
		{name: "killed by a signal", cmd: "kill -TERM $$", exit: -1},
		{name: "a missing cwd", cmd: "echo no", mod: func(r *startRequest) { r.Process.Cwd = envdPtr("/nonexistent") }, exit: -1,
			errHas: "the command could not start: FileNotFoundError"},
		{name: "past the output limit", cmd: "head -c 3000000 /dev/zero; sleep 20", exit: -1, errHas: "output limit of 1MiB reached"},
		{name: "the sleep counter sees a sleep", cmd: "sleep 5 & sleep 0.3; " + countSleeps + "; kill %1", stdout: "1\n", exited: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			evs, err := f.run(ctx, c.cmd, c.mod)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			o := envdOutcomeOf(t, evs)
			if o.end == nil {
				t.Fatalf("no end event: %+v", evs)
			}
			if c.errHas != "" {
				if !strings.Contains(envdDeref(o.end.Error), c.errHas) {
					t.Errorf("end error %q, want it to say %q", envdDeref(o.end.Error), c.errHas)
				}
				c.stdout = o.stdout // not the point of these cases
			}
			if o.stdout != c.stdout || o.stderr != c.stderr {
				t.Errorf("stdout %q stderr %q, want %q and %q", o.stdout, o.stderr, c.stdout, c.stderr)
			}
			if o.end.ExitCode != c.exit || o.end.Exited != c.exited {
				t.Errorf("end %+v (error %v), want exit code %d exited %v", *o.end, envdDeref(o.end.Error), c.exit, c.exited)
			}
			if (c.exit != 0) != (o.end.Error != nil) {
				t.Errorf("end error %v for exit code %d", envdDeref(o.end.Error), o.end.ExitCode)
			}
		})
	}
}

// countSleeps prints how many sleep processes the sandbox has.
const countSleeps = "cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^sleep$' || true"

func envdDeref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestEnvdStreamsAsItComes checks that output reaches the stream while the
// command still runs, with keepalives while it is silent.
func TestEnvdStreamsAsItComes(t *testing.T) {
	f := newEnvdFixture(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connectClientStart(f)
	req := connect.NewRequest(&startRequest{Process: &processConfig{Cmd: "/bin/bash", Args: []string{"-l", "-c", "echo first; sleep 2.5; echo second"}}})
	for k, v := range f.headers() {
		req.Header()[k] = v
	}
	req.Header().Set("Keepalive-Ping-Interval", "1")
	s, err := c.CallServerStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var evs []envdTimedEvent
	for s.Receive() {
		evs = append(evs, envdTimedEvent{s.Msg().Event, time.Now()})
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	o := envdOutcomeOf(t, evs)
	if o.stdout != "first\nsecond\n" || o.end == nil || o.end.ExitCode != 0 {
		t.Fatalf("outcome %+v", o)
	}
	var first, end time.Time
	for _, e := range evs {
		if e.ev.Data != nil && first.IsZero() {
			first = e.at
		}
		if e.ev.End != nil {
			end = e.at
		}
	}
	if gap := end.Sub(first); gap < 2*time.Second {
		t.Errorf("first output came %v before the end, want at least 2s: it was not streamed", gap)
	}
	if o.keepalives < 1 {
		t.Errorf("no keepalive during 2.5s of silence with Keepalive-Ping-Interval 1")
	}
}

func connectClientStart(f *envdFixture) *connect.Client[startRequest, startResponse] {
	return connect.NewClient[startRequest, startResponse](f.srv.Client(), f.srv.URL+"/process.Process/Start", connect.WithCodec(envdCodec{}))
}

// TestEnvdKillListConnect starts a long command, finds it in List,
// re-attaches with Connect (by its tag), kills it with SendSignal, and checks that both
// streams end at once saying it was killed, that it is gone from List,
// and that the session runs the next command.
func TestEnvdKillListConnect(t *testing.T) {
	f := newEnvdFixture(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		evs []envdTimedEvent
		err error
	}
	started := make(chan result, 1)
	go func() {
		evs, err := f.run(ctx, "echo started; sleep 30", func(r *startRequest) { r.Tag = envdPtr("sleeper") })
		started <- result{evs, err}
	}()
	var pid uint32
	deadline := time.Now().Add(20 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		l, err := envdUnary[processListRequest, processListResponse](f, ctx, "/process.Process/List", &processListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Processes) == 1 {
			p := l.Processes[0]
			if p.Config.Cmd != "/bin/bash" || len(p.Config.Args) != 3 || p.Config.Args[2] != "echo started; sleep 30" || envdDeref(p.Tag) != "sleeper" {
				t.Fatalf("List: %+v", l.Processes)
			}
			pid = p.Pid
		}
		time.Sleep(50 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("the command never showed in List")
	}
	attached := make(chan result, 1)
	go func() {
		evs, err := f.stream(ctx, "/process.Process/Connect", &connectRequest{Process: &processSelector{Tag: envdPtr("sleeper")}})
		attached <- result{evs, err}
	}()
	time.Sleep(time.Second) // the command is in its sleep; Connect has attached
	killed := time.Now()
	if _, err := envdUnary[sendSignalRequest, sendSignalResponse](f, ctx, "/process.Process/SendSignal",
		&sendSignalRequest{Process: &processSelector{Pid: envdPtr(jsonUint32(pid))}, Signal: signalSIGKILL}); err != nil {
		t.Fatalf("SendSignal: %v", err)
	}
	for name, ch := range map[string]chan result{"Start": started, "Connect": attached} {
		r := <-ch
		if r.err != nil {
			t.Fatalf("%s: %v", name, r.err)
		}
		o := envdOutcomeOf(t, r.evs)
		if o.end == nil || o.end.ExitCode != -1 || o.end.Exited || envdDeref(o.end.Error) != "signal: killed" {
			t.Errorf("%s: end %+v, want killed", name, o.end)
		}
		if o.pid != pid {
			t.Errorf("%s: start pid %d, want %d", name, o.pid, pid)
		}
	}
	if took := time.Since(killed); took > 5*time.Second {
		t.Errorf("the kill took %v to end the command", took)
	}
	if l, err := envdUnary[processListRequest, processListResponse](f, ctx, "/process.Process/List", &processListRequest{}); err != nil || len(l.Processes) != 0 {
		t.Errorf("List after the kill: %+v, %v", l, err)
	}
	_, err := envdUnary[sendSignalRequest, sendSignalResponse](f, ctx, "/process.Process/SendSignal",
		&sendSignalRequest{Process: &processSelector{Pid: envdPtr(jsonUint32(pid))}, Signal: signalSIGKILL})
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("SendSignal to an ended command: %v, want not_found", err)
	}
	// Nothing of the command is left: no sleep in the session.
	evs, err := f.run(ctx, countSleeps, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := envdOutcomeOf(t, evs); o.stdout != "0\n" {
		t.Errorf("sleep processes left after the kill: %q", o.stdout)
	}
}

// TestEnvdTimeout gives a command the Connect timeout E2B's timeoutMs
// becomes: the call ends with deadline_exceeded, the command is killed,
// and the session runs the next command.
func TestEnvdTimeout(t *testing.T) {
	f := newEnvdFixture(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.run(ctx, "sleep 20", nil)
	if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("Start past its timeout: %v, want deadline_exceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the timeout took %v", took)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	evs, err := f.run(ctx2, countSleeps, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := envdOutcomeOf(t, evs); o.stdout != "0\n" || o.end == nil || o.end.ExitCode != 0 {
		t.Errorf("after the timeout: %+v", o)
	}
}

// TestEnvdPolicy runs a command in a session whose code policy blocks
// subprocess: the command is refused with the policy's reason.
func TestEnvdPolicy(t *testing.T) {
	svc := envdService(t, func(c *service.Config) { c.Policy = sandbox.Policy{Mode: sandbox.PolicyBlock, Preset: "strict"} })
	f := newEnvdFixture(t, svc, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := f.run(ctx, "echo should-not-run", nil)
	if err != nil {
		t.Fatal(err)
	}
	o := envdOutcomeOf(t, evs)
	if o.stdout != "" || o.end == nil || o.end.ExitCode != -1 || o.end.Status != "blocked" || !strings.Contains(envdDeref(o.end.Error), "code policy") {
		t.Errorf("blocked command: %+v (error %s)", o, envdDeref(o.end.Error))
	}
}

// TestEnvdRefusals checks the RPCs' refusals: a bad sandbox or token, no
// command, stdin and pty, an unknown process, and the stdin RPCs.
func TestEnvdRefusals(t *testing.T) {
	f := newEnvdFixture(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(h http.Header, req *startRequest) error {
		c := connectClientStart(f)
		r := connect.NewRequest(req)
		for k, v := range h {
			r.Header()[k] = v
		}
		s, err := c.CallServerStream(ctx, r)
		if err != nil {
			return err
		}
		for s.Receive() {
		}
		return s.Err()
	}
	ok := &startRequest{Process: &processConfig{Cmd: "/bin/true"}}
	wrongToken := f.headers()
	wrongToken.Set("X-Access-Token", "nope")
	wrongSandbox := f.headers()
	wrongSandbox.Set("E2b-Sandbox-Id", "sess_nope")
	cases := []struct {
		name string
		err  error
		code connect.Code
		msg  string
	}{
		{"wrong token", call(wrongToken, ok), connect.CodeUnauthenticated, "X-Access-Token"},
		{"wrong sandbox", call(wrongSandbox, ok), connect.CodeNotFound, "sess_nope"},
		{"no command", call(f.headers(), &startRequest{Process: &processConfig{}}), connect.CodeInvalidArgument, "process.cmd"},
		{"stdin", call(f.headers(), &startRequest{Process: ok.Process, Stdin: envdPtr(true)}), connect.CodeUnimplemented, "/dev/null"},
		{"pty", call(f.headers(), &startRequest{Process: ok.Process, Pty: &ptyOptions{}}), connect.CodeUnimplemented, "pseudo-terminal"},
		{"unknown pid", func() error {
			_, err := envdUnary[sendSignalRequest, sendSignalResponse](f, ctx, "/process.Process/SendSignal",
				&sendSignalRequest{Process: &processSelector{Pid: envdPtr(jsonUint32(999))}, Signal: signalSIGKILL})
			return err
		}(), connect.CodeNotFound, "999"},
		{"send input", func() error {
			_, err := envdUnary[sendInputRequest, sendInputResponse](f, ctx, "/process.Process/SendInput", &sendInputRequest{})
			return err
		}(), connect.CodeUnimplemented, "stdin"},
	}
	for _, c := range cases {
		if connect.CodeOf(c.err) != c.code || !strings.Contains(c.err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v mentioning %q", c.name, c.err, c.code, c.msg)
		}
	}
	var ce *connect.Error
	if !errors.As(cases[0].err, &ce) {
		t.Errorf("not a Connect error: %v", cases[0].err)
	}
}

// TestEnvdKillQueuedCommand kills a command queued behind another cell
// of the session (a runCode): the command ends killed without running,
// and the session lives on. A cell cancelled before the kernel starts it
// loses the session's interrupt, so a kill that cancelled it at once
// would leave it uninterruptible and get the whole session killed.
func TestEnvdKillQueuedCommand(t *testing.T) {
	f := newEnvdFixture(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	busy := make(chan error, 1)
	go func() {
		_, err := f.sb.ss.Exec(ctx, sandbox.Cell{Code: "import time\ntime.sleep(2)\n1"})
		busy <- err
	}()
	time.Sleep(300 * time.Millisecond)
	ended := make(chan []envdTimedEvent, 1)
	go func() { evs, _ := f.run(ctx, "sleep 30", nil); ended <- evs }()
	var pid uint32
	for i := 0; i < 100 && pid == 0; i++ {
		time.Sleep(20 * time.Millisecond)
		if l, err := envdUnary[processListRequest, processListResponse](f, ctx, "/process.Process/List", &processListRequest{}); err == nil && len(l.Processes) == 1 {
			pid = l.Processes[0].Pid
		}
	}
	if pid == 0 {
		t.Fatal("the command never showed in List")
	}
	if _, err := envdUnary[sendSignalRequest, sendSignalResponse](f, ctx, "/process.Process/SendSignal",
		&sendSignalRequest{Process: &processSelector{Pid: envdPtr(jsonUint32(pid))}, Signal: signalSIGKILL}); err != nil {
		t.Fatal(err)
	}
	if err := <-busy; err != nil {
		t.Fatalf("the running cell: %v", err)
	}
	o := envdOutcomeOf(t, <-ended)
	if o.end == nil || envdDeref(o.end.Error) != "signal: killed" {
		t.Errorf("the killed command: %+v", o.end)
	}
	r, err := f.sb.ss.Exec(ctx, sandbox.Cell{Code: "6*7"})
	if err != nil || r.Value != "42" {
		t.Fatalf("the session after the kill: %v %q, %v", r.Status, r.Value, err)
	}
}

// TestEnvdTimeoutAboveMaximum runs a command whose timeout (E2B's default
// 60 s) is above the server's maximum wall time: it runs under the
// sandbox's own limit instead of failing.
func TestEnvdTimeoutAboveMaximum(t *testing.T) {
	svc := envdService(t, func(c *service.Config) { c.Maxima = sandbox.Limits{WallTimeMS: 10_000} })
	f := newEnvdFixture(t, svc, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	evs, err := f.run(ctx, "echo ran", nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := envdOutcomeOf(t, evs); o.stdout != "ran\n" || o.end == nil || o.end.ExitCode != 0 {
		t.Errorf("a command with a timeout above the maximum: %+v (error %s)", o, envdDeref(o.end.Error))
	}
}

// TestEnvdQueuedCommands runs commands in turn: a second command waits
// for the first (both listed meanwhile), and one whose caller's timeout
// passes while it waits never runs.
func TestEnvdQueuedCommands(t *testing.T) {
	f := newEnvdFixture(t, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first := make(chan envdOutcome, 1)
	go func() {
		evs, _ := f.run(ctx, "sleep 2; echo first", nil)
		first <- envdOutcomeOf(t, evs)
	}()
	// Each command is listed before the next is sent, so the order the
	// server sees is the order written here even when a loaded machine
	// delays a request (a fixed sleep let the late one run first).
	f.waitListed(ctx, 1)
	second := make(chan envdOutcome, 1)
	go func() {
		evs, _ := f.run(ctx, "echo second > /work/second.txt", nil)
		second <- envdOutcomeOf(t, evs)
	}()
	f.waitListed(ctx, 2)
	short, cancelShort := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancelShort()
	_, err := f.run(short, "echo late > /work/late.txt", nil)
	if connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Errorf("the command that timed out waiting: %v", err)
	}
	var l *processListResponse
	for i := 0; i < 20; i++ { // the late one leaves the table as its deadline passes
		if l, err = envdUnary[processListRequest, processListResponse](f, ctx, "/process.Process/List", &processListRequest{}); err != nil || len(l.Processes) == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil || len(l.Processes) != 2 || l.Processes[0].Config.Args[2] != "sleep 2; echo first" || l.Processes[1].Config.Args[2] != "echo second > /work/second.txt" {
		t.Errorf("List while one runs and one waits: %+v, %v", l, err)
	}
	if o := <-first; o.stdout != "first\n" {
		t.Errorf("first: %+v", o)
	}
	if o := <-second; o.end == nil || o.end.ExitCode != 0 {
		t.Errorf("second: %+v", o)
	}
	names := map[string]bool{}
	list, err := f.sb.ss.ListFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range list {
		names[fi.Name] = true
	}
	if !names["second.txt"] || names["late.txt"] {
		t.Errorf("files after: %v; want second.txt and no late.txt", names)
	}
}

// TestEnvdBodyTimeout checks that a client that trickles its request's
// message is cut off after envdBodyTimeout, and that a stream outlives
// it once its message is read.
func TestEnvdBodyTimeout(t *testing.T) {
	f := newEnvdFixture(t, nil, nil)
	old := envdBodyTimeout
	envdBodyTimeout = 500 * time.Millisecond
	t.Cleanup(func() { envdBodyTimeout = old })

	conn, err := net.Dial("tcp", strings.TrimPrefix(f.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /process.Process/List HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nE2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n\r\n{", f.sb.ss.ID(), envdTestToken)
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.ReadAll(conn) // an answer, then the connection closed; or just closed
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a trickled request held its connection for %v", took)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := f.run(ctx, "sleep 1.5; echo late", nil)
	if err != nil {
		t.Fatalf("a stream longer than the body timeout: %v", err)
	}
	if o := envdOutcomeOf(t, evs); o.stdout != "late\n" {
		t.Errorf("a stream longer than the body timeout: %+v", o)
	}
}
