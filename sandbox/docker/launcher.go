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

// A pooled container's program is started without an exec on the run's
// critical path (creating and starting one cost 80 to 100 ms here, more
// than the Python program it runs): when the pool makes the container, it
// also starts the exec that will become the program, the launcher, as the
// run's uid, in /work, with the exec's stdin, stdout and stderr attached.
// The launcher is launcherScript: it reads the program's argv from its
// stdin, NUL-terminated elements ended by an empty one, and replaces itself
// with it (exec). Bash reads a pipe a byte at a time, so what follows the
// argv on the stdin, the request's stdin, is left to the program.
//
// Everything else is as for a cold run's exec: the same uid, rlimits and
// working directory, the argv starts with `env -i`, the output is read
// from the exec's stream, and its exit code is the daemon's (ExecInspect),
// not anything the program could write. Before the run the launcher only
// waits: no program of this uid runs in the container yet.
const launcherScript = `args=()
while IFS= read -r -d '' a && [ -n "$a" ]; do args+=("$a"); done
[ ${#args[@]} -gt 0 ] || exit 126
exec "${args[@]}"
`

// launcher is the host's end of a pooled container's launcher exec.
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
