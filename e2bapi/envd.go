package e2bapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/crucible-sandbox/crucible/service"
)

// envdSandbox is the sandbox an envd request acts on.
type envdSandbox interface {
	session() *service.Session
	envVars() map[string]string // the sandbox's environment (E2B envVars)
}

// envdError is an error lookup returns to be answered with a Connect
// code of its own; any other error is answered as CodeNotFound.
type envdError struct {
	code connect.Code
	msg  string
}

// Error is the message.
func (e envdError) Error() string { return e.msg }

// newEnvdRPC returns the handler of the envd Connect services; lookup finds
// the sandbox a request names (it checks the E2b-Sandbox-Id header and the
// access token) or returns an error to answer (an envdError with its code,
// any other error as CodeNotFound); it returns a sandbox whenever its
// error is nil.
//
// The services are process.Process (envd_process.go) and
// filesystem.Filesystem (envd_fs.go), at E2B's procedure paths
// (/process.Process/Start, /filesystem.Filesystem/Stat, ...), speaking the
// Connect protocol with JSON through envdCodec.
func newEnvdRPC(lookup func(r *http.Request) (envdSandbox, error)) http.Handler {
	e := &envd{procs: newProcTables()}
	mux := http.NewServeMux()
	e.mountProcess(mux)
	e.mountFilesystem(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// connect's handlers see the request only through its headers:
		// the sandbox (or why there is none) rides in the context, and
		// each RPC answers a failed lookup as a Connect error, in the
		// shape its protocol (unary or stream) needs.
		//
		// The request message must arrive within envdBodyTimeout, so a
		// client that trickles it cannot hold a handler; the deadline is
		// lifted once it is read (sandbox): it bounds the request, not
		// the stream that answers it.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(envdBodyTimeout))
		sb, err := lookup(r)
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sandboxKey{}, lookedUp{sb, err, rc})))
	})
}

// envd serves the envd services over the sandboxes lookup finds.
type envd struct {
	procs *procTables
}

type sandboxKey struct{}

type lookedUp struct {
	sb  envdSandbox
	err error
	rc  *http.ResponseController
}

// envdBodyTimeout bounds the reading of a request's message.
var envdBodyTimeout = 30 * time.Second

// envdHandlerOptions are the options of every envd RPC handler.
func envdHandlerOptions() []connect.HandlerOption {
	return []connect.HandlerOption{connect.WithCodec(envdCodec{})}
}

// sandbox returns the sandbox the request named, or the Connect error to
// answer. Every RPC calls it first, once connect has read its message.
func (e *envd) sandbox(ctx context.Context) (envdSandbox, error) {
	l, _ := ctx.Value(sandboxKey{}).(lookedUp)
	if l.rc != nil { // connect has read the request's message
		_ = l.rc.SetReadDeadline(time.Time{})
	}
	if l.err != nil {
		var ee envdError
		if errors.As(l.err, &ee) {
			return nil, connect.NewError(ee.code, errors.New(ee.msg))
		}
		return nil, connect.NewError(connect.CodeNotFound, l.err)
	}
	if l.sb == nil || l.sb.session() == nil {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("no sandbox named by the E2b-Sandbox-Id header"))
	}
	return l.sb, nil
}

// envdUnimplemented answers an RPC this envd does not offer, saying why.
func envdUnimplemented(procedure, why string) error {
	return connect.NewError(connect.CodeUnimplemented, errors.New(procedure+" is not supported by Crucible's envd: "+why))
}
