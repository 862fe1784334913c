package main

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// The local socket: a `crucible serve` listens on a unix socket in the
// state directory, and `crucible run` on the same host sends its run there,
// to the server's prestarted and warm sandboxes, instead of building a
// sandbox of its own. Only the same user may use it, on both sides: the
// socket is 0600 in a directory of root's, the server checks each caller's
// uid (SO_PEERCRED), and the command checks the socket's owner and the
// server's uid before it sends anything. The run is a local run served
// elsewhere: not recorded, not redacted, the same checks, limits and hints
// as `crucible run` itself, and the same output, exit code and files.
//
// The exchange, on one connection: the command writes one localRunRequest
// (JSON); the server answers with localRunFrames (JSON, one after the
// other): output while the program runs, then the outcome. The command
// half-closes the connection to cancel the run (Ctrl-C): the server kills
// it and still answers its outcome.

// defaultSocket is where `crucible serve` listens and `crucible run`
// looks, unless socketEnv names another path.
const defaultSocket = "/run/crucible/serve.sock"

// socketEnv names the variable that moves the local socket, for both
// commands.
const socketEnv = "CRUCIBLE_SOCKET"

// localEnv names the variable that, set to anything but "" or "0", makes
// `crucible run` run locally, as --local does.
const localEnv = "CRUCIBLE_LOCAL"

// maxDelegatedPayload is the most code, standard input and input files a
// run may carry to be sent to the server; a larger one runs locally (the
// same result, without copying it through the socket).
const maxDelegatedPayload = 64 << 20

// maxLocalRequestBytes bounds the request the server reads: the payload
// above in base64, plus room for the rest.
const maxLocalRequestBytes = maxDelegatedPayload/3*4 + 1<<20

// socketPath is the local socket's path: $CRUCIBLE_SOCKET, else the default.
func socketPath() string { return cmp.Or(os.Getenv(socketEnv), defaultSocket) }

// runtimeKey says which sandboxes a run needs: the root filesystem (""
// for the host's directories), the image's digest, and the image store
// whose images the hints of its errors name. A server runs it only with a
// runtime of the same key, as the command itself would have built.
type runtimeKey struct {
	RootFS string `json:"rootfs"`
	Digest string `json:"digest"`
	Store  string `json:"store"`
}

// newRuntimeKey is the key of a runtime built for a root filesystem, an
// image digest and an image store, the paths made absolute.
func newRuntimeKey(rootfs, digest, store string) (runtimeKey, error) {
	k := runtimeKey{Digest: digest}
	var err error
	if rootfs != "" {
		if k.RootFS, err = filepath.Abs(rootfs); err != nil {
			return k, err
		}
	}
	k.Store, err = filepath.Abs(store)
	return k, err
}

// localRunRequest is what `crucible run` sends.
type localRunRequest struct {
	Runtime runtimeKey      `json:"runtime"`
	Request sandbox.Request `json:"request"`
}

// localRunFrame is one message of the server's answer; one field is set.
type localRunFrame struct {
	// Refused says the server cannot run the request here (it has no
	// runtime of that key): nothing ran, the command runs it itself.
	Refused string `json:"refused,omitempty"`
	// Output is a chunk of the program's output, as it ran.
	Output *localOutput `json:"output,omitempty"`
	// Result ends the answer: how the run ended, with InputError or
	// Error if the service returned one.
	Result *sandbox.Result `json:"result,omitempty"`
	// InputError is the service's *sandbox.InputError: the request was
	// wrong and nothing ran.
	InputError *sandbox.InputError `json:"input_error,omitempty"`
	// Error is any other error of the service, a platform failure.
	Error string `json:"error,omitempty"`
}

// localOutput is a chunk of output.
type localOutput struct {
	Stream sandbox.Stream `json:"stream"`
	Data   sandbox.Data   `json:"data"`
}

// errOtherUser is a peer of another user than this process's.
var errOtherUser = errors.New("the other end of the local socket is another user's")

// samePeer checks that conn's peer is this process's own user.
func samePeer(conn *net.UnixConn) error {
	uid, err := peerUID(conn)
	if err != nil {
		return err
	}
	if uid != os.Geteuid() {
		return fmt.Errorf("%w (uid %d)", errOtherUser, uid)
	}
	return nil
}
