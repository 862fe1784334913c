package e2bapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"connectrpc.com/connect"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// fsCellTimeoutMS bounds a file operation's cell once it runs.
const fsCellTimeoutMS = 60_000

// fsCell is the platform's cell for the file operations a session has no
// method for: make a directory (with its parents), move, and remove (a
// directory with everything in it, as E2B does). It is the platform's own
// code, so no code policy checks it (Cell.Unchecked); the paths it takes
// were validated in Go (envdWorkPath: relative, no "..") and arrive as a JSON
// string literal decoded with json.loads, never spliced into the code.
// It also refuses a path whose parent resolves (through a symbolic link
// the sandbox's code made) outside the working directory: these
// operations act on the working directory only.
//
// Its value is a code, read by fsResult: 0 done, 1 the path exists,
// 2 not found, 3 a parent is not a directory, 4 outside the working
// directory. Any other failure is an exception, mapped by its type.
const fsCell = `def _crucible_envd_fs(spec):
    import json, os, shutil
    spec = json.loads(spec)
    root = os.path.realpath("/work")
    def inside(p):
        parent = os.path.realpath(os.path.dirname(p))
        return parent == root or parent.startswith(root + os.sep)
    path = os.path.join(root, spec["path"])
    if not inside(path):
        return 4
    op = spec["op"]
    if op == "mkdir":
        if os.path.lexists(path):
            return 1
        try:
            os.makedirs(path)
        except (FileExistsError, NotADirectoryError):
            return 3
        return 0
    if not os.path.lexists(path):
        return 2
    if op == "remove":
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        return 0
    to = os.path.join(root, spec["to"])
    if not inside(to):
        return 4
    try:
        os.makedirs(os.path.dirname(to), exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        return 3
    os.rename(path, to)
    return 0
globals().pop("_crucible_envd_fs")(%s)
`

// fsOp is what fsCell decodes.
type fsOp struct {
	Op   string `json:"op"` // mkdir, move or remove
	Path string `json:"path"`
	To   string `json:"to,omitempty"`
}

// runFSCell runs op in sb's session and turns its outcome into a Connect
// error (nil when done); name and to are the request's paths, for the
// messages. The cell runs under a context of its own: a client that gives
// up while the cell waits for its turn (behind a running command) must not
// cancel it as it starts, and the operation is short once it runs.
func runFSCell(ctx context.Context, sb envdSandbox, op fsOp, name, to string) error {
	res, err := sb.session().Exec(context.WithoutCancel(ctx), sandbox.Cell{
		Code: fmt.Sprintf(fsCell, envdPyString(envdJSON(op))), TimeoutMS: fsCellTimeoutMS, Unchecked: true,
	})
	if err != nil {
		return envdSessionError(err)
	}
	return fsResult(res, op.Op, name, to)
}

// fsResult maps an fsCell's result to the Connect error E2B's SDK
// expects: AlreadyExists (makeDir answers false), NotFound, or
// InvalidArgument naming the field.
func fsResult(res sandbox.Result, op, name, to string) error {
	fail := func(code connect.Code, format string, a ...any) error {
		return connect.NewError(code, fmt.Errorf(format, a...))
	}
	switch res.Status {
	case sandbox.StatusOK:
	case sandbox.StatusError:
		if res.Error == nil {
			return fail(connect.CodeInternal, "%s %q failed", op, name)
		}
		code := connect.CodeInvalidArgument
		switch res.Error.Type {
		case "FileNotFoundError":
			code = connect.CodeNotFound
		case "FileExistsError":
			code = connect.CodeAlreadyExists
		case "PermissionError":
			code = connect.CodePermissionDenied
		}
		return fail(code, "%s %q: %s: %s", op, name, res.Error.Type, res.Error.Message)
	default:
		return fail(connect.CodeInternal, "%s %q: the operation's cell ended %s: %s", op, name, res.Status, res.Reason)
	}
	n, err := strconv.Atoi(res.Value)
	if err != nil {
		return fail(connect.CodeInternal, "%s %q: no outcome (value %q)", op, name, res.Value)
	}
	field := "path"
	if op == "move" {
		field = "source"
	}
	switch n {
	case 0:
		return nil
	case 1:
		return fail(connect.CodeAlreadyExists, "path %q: already exists", name)
	case 2:
		return fail(connect.CodeNotFound, "%s %q: no such file or directory", field, name)
	case 3:
		if op == "move" {
			name, field = to, "destination"
		}
		return fail(connect.CodeInvalidArgument, "%s %q: a parent of it is not a directory", field, name)
	case 4:
		return fail(connect.CodeInvalidArgument, "%s %q: must resolve inside %s; a symbolic link leads out of it", field, name, envdHome)
	}
	return errors.New(op + ": unknown outcome " + res.Value)
}
