package e2bapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// commandCell is the Python cell that runs one E2B command in the
// session's interpreter: a session is a Python kernel, and a cell is the
// only way to run anything in it that the session's limits, records and
// redaction all cover. The command's cmd, args, cwd and environment are
// one JSON document, embedded as a string literal and decoded with
// json.loads: never spliced into the code, so no input can change what
// the cell does.
//
// The cell starts the process in a session (and process group) of its
// own, stdin /dev/null, its stdout and stderr the kernel's fds 1 and 2:
// the session's output streams, which the runtime reads as they are
// written, so output reaches the caller while the command runs. The cell
// waits and its value is the exit status (negative: the signal that
// killed it). When the cell is interrupted (the session sends SIGINT on a
// cancel or a timeout: KeyboardInterrupt), it kills the whole process
// group and waits (up to a second) until the group is gone, reaped, so
// nothing of the command is left when the cell ends. A process that
// leaves the group (setsid) survives the cell, and is frozen with the
// session between cells as everything a cell leaves behind is.
//
// The command's environment is the interpreter's (the session's own, set
// by the platform from an allowlist: never the host's), then the
// sandbox's envVars, then the request's envs.
//
// Before it starts the command the cell writes startedMarker to fd 2 (the
// command has not run yet, so it cannot have written it): it tells the
// host that the cell runs, and so that a cancel now interrupts it (see
// envdProcess.kill). The host cuts it out of the stream.
//
// The cell's only name is popped from the namespace as it is called: a
// command leaves nothing in the interpreter of the sandbox's runCode but
// "_", the exit status, as any expression cell does.
const commandCell = `def _crucible_envd_command(spec):
    import json, os, signal, subprocess, sys, time
    spec = json.loads(spec)
    home = "/home/user"
    if not os.path.isdir(home):
        home = "/work"  # an image without /home/user: the working directory itself
    cwd = spec["cwd"] or home
    if home == "/work" and (cwd == "/home/user" or cwd.startswith("/home/user/")):
        cwd = "/work" + cwd[len("/home/user"):]
    env = dict(os.environ)
    env.update(spec["env"])
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        stream.flush()
    os.write(2, %s.encode())
    child = None
    try:
        child = subprocess.Popen([spec["cmd"]] + spec["args"], cwd=cwd, env=env,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        return child.wait()
    except BaseException:
        if child is not None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except OSError:
                pass
            child.wait()
            for _ in range(200):  # until the sandbox's init has reaped the rest of the group
                try:
                    os.killpg(child.pid, 0)
                except OSError:
                    break
                time.sleep(0.005)
        raise
globals().pop("_crucible_envd_command")(%s)
`

// startedMarker is what commandCell writes first to stderr.
const startedMarker = "[crucible-envd: command started]\n"

// commandSpec is what commandCell decodes.
type commandSpec struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args"`
	Cwd  string            `json:"cwd"`
	Env  map[string]string `json:"env"`
}

// commandCode returns the cell that runs config with the sandbox's
// environment sandboxEnv under the request's own (which wins).
func commandCode(config processConfig, sandboxEnv map[string]string) string {
	spec := commandSpec{Cmd: config.Cmd, Args: config.Args, Env: map[string]string{}}
	if spec.Args == nil {
		spec.Args = []string{}
	}
	if config.Cwd != nil {
		spec.Cwd = *config.Cwd
		if spec.Cwd != "" && !strings.HasPrefix(spec.Cwd, "/") {
			spec.Cwd = "/home/user/" + spec.Cwd // relative to the home directory
		}
	}
	for k, v := range sandboxEnv {
		spec.Env[k] = v
	}
	for k, v := range config.Envs {
		spec.Env[k] = v
	}
	return fmt.Sprintf(commandCell, envdPyString(startedMarker), envdPyString(envdJSON(spec)))
}

// envdPyString returns s as a Python string literal. A JSON string literal is
// one, as encoding/json writes it: its only escapes (\" \\ \n \r \t \b \f
// and \uXXXX) mean the same in Python, and it never writes \/.
func envdPyString(s string) string { return envdJSON(s) }

// envdJSON is v as JSON; v is one of ours, which always encodes.
func envdJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil { // maps and strings: cannot fail
		panic(err)
	}
	return string(b)
}

// commandEnd says how a command's cell ended, as E2B's end event does
// (exit code, exited, status, error: what CommandExitError shows). err is
// the session's error, when the cell could not run at all.
func commandEnd(res sandbox.Result, err error) endEvent {
	failed := func(status, msg string) endEvent {
		return endEvent{ExitCode: -1, Status: status, Error: &msg}
	}
	if err != nil {
		return failed("error", "the command could not run: "+err.Error())
	}
	switch res.Status {
	case sandbox.StatusOK:
		code, perr := strconv.Atoi(res.Value)
		if perr != nil {
			return failed("error", "the command's wrapper gave no exit status (value "+strconv.Quote(res.Value)+")")
		}
		if code < 0 {
			msg := "signal: " + syscall.Signal(-code).String()
			return endEvent{ExitCode: -1, Status: msg, Error: &msg}
		}
		end := endEvent{ExitCode: int32(code), Exited: true, Status: "exit status " + strconv.Itoa(code)}
		if code != 0 {
			end.Error = &end.Status
		}
		return end
	case sandbox.StatusKilled:
		return failed("signal: killed", "signal: killed")
	case sandbox.StatusTimeout:
		if res.Limits.WallTimeMS == 0 {
			return failed("timeout", "the command's timeout passed while it waited for its turn; it did not run")
		}
		return failed("timeout", fmt.Sprintf("the command ran past its timeout of %d ms and was killed", res.Limits.WallTimeMS))
	case sandbox.StatusBlocked:
		return failed("blocked", res.Reason)
	case sandbox.StatusError:
		msg := "the command could not start"
		if res.Error != nil {
			msg += ": " + res.Error.Type + ": " + res.Error.Message
		}
		return failed("error", msg)
	default: // cpu_limit, memory_limit, output_limit, internal
		return failed(string(res.Status), res.Reason)
	}
}
