package docker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"

	"github.com/crucible-sandbox/crucible/sandbox/lang"
)

// The program is started by a launcher, launcherScript, run by an exec as
// the run's uid, in /work, with the exec's stdin, stdout and stderr
// attached: it reads the program's argv from its stdin, NUL-terminated
// elements ended by an empty one, runs it, and once it ends kills every
// process the program's uid still has in the container. Bash reads a pipe
// a byte at a time, so what follows the argv on the stdin, the request's
// stdin, is left to the program.
//
// A pooled container's launcher is started when the pool makes the
// container (creating and starting an exec cost 80 to 100 ms here, more
// than the Python program it runs); a cold run's, once its container is
// up. Before the run the launcher only waits: no program of this uid runs
// in the container yet.
//
// Why it kills what the program left: background processes would hold the
// program's output pipes open, and the exec's output stream would not end
// with the program (the daemon waits for them, two seconds even once they
// are gone); the native sandbox likewise ends with its program. kill(-1)
// reaches exactly the uid's processes (the uid is this container's alone,
// and docker-init and the waiting process are root's), never the launcher
// itself. Neither its command line nor its environment holds the
// program's (the argv came on its stdin, the container has no
// environment), so it tells nothing of it. The program runs as the same
// uid and can signal the launcher: the catchable signals run an empty
// handler (handlers, unlike ignored signals, are reset at exec, so the
// program gets the default dispositions), and a program that stops or
// kills its launcher only ends its own run early, as killed. The exit
// status is the program's, 128 plus the signal's number for a program a
// signal ended, and comes from the daemon (ExecInspect), not from
// anything the program could write.
const launcherScript = `trap : HUP INT QUIT TERM USR1 USR2 ALRM PIPE
args=()
while IFS= read -r -d '' a && [ -n "$a" ]; do args+=("$a"); done
[ ${#args[@]} -gt 0 ] || exit 126
"${args[@]}"
s=$?
kill -KILL -1 2>/dev/null
exit $s
`

// launcher is the host's end of a launcher exec.
type launcher struct {
	id   string // the exec's
	conn types.HijackedResponse
}

// startLauncher starts the launcher of container id as uid.
func (r *Runtime) startLauncher(ctx context.Context, id string, uid int) (*launcher, error) {
	ex, err := r.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		User: strconv.Itoa(uid) + ":" + strconv.Itoa(uid), AttachStdin: true, AttachStdout: true, AttachStderr: true,
		WorkingDir: lang.WorkDir, Cmd: []string{"/bin/bash", "--noprofile", "--norc", "-c", launcherScript},
	})
	if err != nil {
		return nil, fmt.Errorf("create the launcher: %w", err)
	}
	conn, err := r.cli.ContainerExecAttach(context.WithoutCancel(ctx), ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("start the launcher: %w", err)
	}
	return &launcher{id: ex.ID, conn: conn}, nil
}

// launchArgs encodes argv for the launcher. No element can be empty or
// hold a NUL: a request's environment and code are validated to hold none
// (sandbox.Request.Validate), and the interpreter's argv is package lang's.
func launchArgs(argv []string) ([]byte, error) {
	var b strings.Builder
	for _, a := range argv {
		if a == "" || strings.IndexByte(a, 0) >= 0 {
			return nil, errors.New("launcher: an argument is empty or holds a NUL byte: " + strconv.Quote(a))
		}
		b.WriteString(a)
		b.WriteByte(0)
	}
	b.WriteByte(0)
	return []byte(b.String()), nil
}
