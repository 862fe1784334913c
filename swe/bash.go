package swe

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// bashCell is the Python cell that runs one bash command of the model in
// the agent's session (a session is a Python kernel: a cell is the only
// way to run anything there that its limits, records and redaction all
// cover). The command and the directory are one JSON document, embedded
// as a string literal and decoded with json.loads: never spliced into the
// code, so no command can change what the cell does.
//
// As e2bapi's commandCell does, the cell starts `bash -c command` in a
// session (and process group) of its own, stdin /dev/null, stdout and
// stderr both the kernel's fd 1 (one stream, in the order written, which
// the runtime reads as it comes: the caller's OnEvent sees it live). The
// value of the cell is the exit status (negative: the signal that killed
// it). When the cell is interrupted (the session sends SIGINT at the
// cell's timeout, or on a cancel: KeyboardInterrupt) it kills the whole
// process group and waits until it is gone, so nothing of the command
// runs on between the model's steps. A process that leaves the group
// (setsid) survives, frozen with the session between cells, still bound
// by the session's limits.
//
// The cell's only name is popped from the namespace as it is called.
const bashCell = `def _crucible_swe_bash(spec):
    import json, os, signal, subprocess, sys, time
    spec = json.loads(spec)
    env = dict(os.environ)
    env.update(spec["env"])
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        stream.flush()
    child = None
    try:
        child = subprocess.Popen(["bash", "-c", spec["command"]], cwd=spec["cwd"], env=env,
                                 stdin=subprocess.DEVNULL, stdout=1, stderr=1, start_new_session=True)
        return child.wait()
    except BaseException:
        if child is not None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except OSError:
                pass
            child.wait()
            for _ in range(200):
                try:
                    os.killpg(child.pid, 0)
                except OSError:
                    break
                time.sleep(0.005)
        raise
globals().pop("_crucible_swe_bash")(%s)
`

// bashEnv is added to the command's environment: no pager waits for a
// terminal that is not there, and Python writes no bytecode beside the
// repository's sources (the model's git status stays its own changes).
var bashEnv = map[string]string{"PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb", "PYTHONDONTWRITEBYTECODE": "1"}

// bashCode returns the cell that runs command from dir.
func bashCode(command, dir string) string {
	spec, err := json.Marshal(map[string]any{"command": command, "cwd": dir, "env": bashEnv})
	if err != nil { // strings only: cannot fail
		panic(err)
	}
	lit, _ := json.Marshal(string(spec)) // a JSON string literal is a Python one
	return fmt.Sprintf(bashCell, lit)
}

// bash runs a command of the model after approval and describes its
// result: the output (head and tail within maxToolOutput) and the exit
// code, or how the sandbox ended it.
func (l *loop) bash(ctx context.Context, command string) toolOutcome {
	if end := l.approve(ctx, command); end != nil {
		return toolOutcome{end: end}
	}
	l.emit(StepTool, "bash: "+firstLine(command))
	res, err := l.exec(ctx, bashCode(command, modelRepoRoot), l.cfg.CallTimeout, true)
	if err != nil {
		if ctx.Err() != nil {
			return toolOutcome{end: l.contextEnding(ctx)}
		}
		return toolOutcome{end: &ending{status: StatusFailed, reason: "the sandbox failed: " + err.Error()}}
	}
	return toolOutcome{out: describeBash(res, l.cfg.CallTimeout)}
}

// exec runs a cell in the agent's session within timeout, counting the
// time. A cell that runs the model's command (model) streams its output
// to OnEvent and is checked by the session's code policy, as e2bapi's
// command cell is: the command is the model's code, so a policy that
// blocks subprocess blocks every bash call. The platform's own cells
// (view, search, edit: fixed code given the model's input only as data)
// are Unchecked, as e2bapi's file cells are.
func (l *loop) exec(ctx context.Context, code string, timeout time.Duration, model bool) (sandbox.Result, error) {
	cell := sandbox.Cell{Code: code, TimeoutMS: max(timeout.Milliseconds(), 1), Unchecked: !model}
	if model && l.cfg.OnEvent != nil {
		step := l.res.Trace.Budget.Steps
		cell.OnOutput = func(s sandbox.Stream, chunk []byte) {
			l.cfg.OnEvent(Event{Kind: StepTool, Step: step, Output: []byte(l.redact(string(chunk))), Stream: s})
		}
	}
	start := time.Now()
	res, err := l.ws.sess.Exec(ctx, cell)
	l.res.Trace.Budget.ExecMS += millis(time.Since(start))
	return res, err
}

// describeBash renders a bash cell's result for the model.
func describeBash(res sandbox.Result, timeout time.Duration) string {
	out := string(res.Stdout) + string(res.Stderr)
	var b strings.Builder
	switch {
	case res.Status == sandbox.StatusOK:
		code, err := strconv.Atoi(strings.TrimSpace(res.Value))
		switch {
		case err != nil:
			fmt.Fprintf(&b, "exit code: unknown (%s)", res.Value)
		case code < 0:
			fmt.Fprintf(&b, "killed by signal %s", syscall.Signal(-code))
		default:
			fmt.Fprintf(&b, "exit code: %d", code)
		}
	case res.Status == sandbox.StatusTimeout:
		fmt.Fprintf(&b, "the command was stopped after %s (the time limit of one call): make it faster, or run less at once", timeout)
	default:
		fmt.Fprintf(&b, "the command did not finish: %s", res.Status)
		if res.Reason != "" {
			b.WriteString(" (" + res.Reason + ")")
		}
		if res.Error != nil && res.Status != sandbox.StatusError {
			b.WriteString(": " + res.Error.Message)
		}
	}
	if res.StdoutTruncated || res.StderrTruncated {
		b.WriteString("\n(the output went over the sandbox's output limit and was cut there)")
	}
	if strings.TrimSpace(out) == "" {
		b.WriteString("\n(no output)")
		return b.String()
	}
	return b.String() + "\noutput:\n" + clipText(strings.TrimRight(out, "\n"), maxToolOutput)
}

// approve asks Config.Approve about a command; a refusal, or a failure
// to ask, ends the run.
func (l *loop) approve(ctx context.Context, command string) *ending {
	if l.cfg.Approve == nil {
		return nil
	}
	ok, err := l.cfg.Approve(ctx, command)
	switch {
	case err != nil:
		return &ending{status: StatusFailed, reason: "asking for approval failed: " + err.Error()}
	case !ok:
		return &ending{status: StatusDenied, reason: "a person refused the command: " + clipText(command, 200)}
	}
	return nil
}
