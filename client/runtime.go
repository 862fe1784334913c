package client

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// A Client is a sandbox runtime whose sandboxes are on a server: whatever
// runs code through these interfaces (the agent, an evaluation, the
// conformance suite) can use a remote server in place of a local runtime.
var (
	_ sandbox.Runtime        = (*Client)(nil)
	_ sandbox.SessionRuntime = (*Client)(nil)
	_ sandbox.Session        = (*Session)(nil)
)

// cancelConfirmTimeout bounds how long Run waits, once its ctx is
// cancelled, for the server to confirm that the run ended.
const cancelConfirmTimeout = 15 * time.Second

// Run runs req on the server and returns its Result, as sandbox.Runtime
// says (use CreateRun for the run's record ID and the server's cache):
//
//   - The server always runs the code: Run bypasses its cache (cache=0),
//     since a runtime runs what it is given, and a program that reads the
//     clock or random numbers means something else when answered from a
//     cache.
//   - A request the server refuses as invalid is returned as an *APIError
//     for which sandbox.IsInputError holds (errors.As gives the
//     *sandbox.InputError, with Field and Rule), with a zero Result;
//     nothing ran.
//   - Any other failure (the server failing, refusing with 429 because its
//     queue is full, or unreachable) returns a Result with StatusInternal
//     and a *sandbox.PlatformError wrapping the cause (an *APIError when
//     the server answered). So does a run the server reports as internal.
//   - Cancelling ctx kills the run: the server kills a run whose client
//     went away, and Run then waits (up to 15 seconds) for the server to
//     report its end and returns that Result, normally StatusKilled, with
//     a nil error. Cancelled before the server answered at all, Run
//     returns StatusKilled at once: whatever the server received it
//     cancels, but there is no run ID to wait for.
//
// Run streams the run (?stream=1), whether or not req.OnOutput is set, to
// learn its ID before it starts; OnOutput, when set, receives the redacted
// output as CreateRun describes.
func (c *Client) Run(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	onOutput := req.OnOutput
	if onOutput == nil {
		onOutput = func(sandbox.Stream, []byte) {}
	}
	var id string
	var resp api.RunResponse
	r := request{method: "POST", path: "/v1/runs", query: url.Values{"cache": {"0"}}}
	err := c.stream(ctx, r, req, events{output: onOutput, run: func(s string) { id = s }, result: &resp})
	switch {
	case err == nil:
		return resp.Result, internalError("run "+resp.ID, resp.Result)
	case ctx.Err() != nil:
		return c.cancelled(ctx, id, req)
	case sandbox.IsInputError(err):
		return sandbox.Result{}, err
	}
	res := failedResult(req)
	res.Reason = err.Error()
	return res, &sandbox.PlatformError{Op: "run on the server", Err: err}
}

// cancelled is Run's answer once its ctx ended before the result came:
// the result of run id, which the server is killing, once it ended.
func (c *Client) cancelled(ctx context.Context, id string, req sandbox.Request) (sandbox.Result, error) {
	res := failedResult(req)
	if id == "" {
		res.Status, res.Reason = sandbox.StatusKilled, "run cancelled before the server answered: "+ctx.Err().Error()
		return res, nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelConfirmTimeout)
	defer cancel()
	end, err := c.FollowRun(wctx, id, nil)
	if err != nil {
		res.Reason = fmt.Sprintf("run %s cancelled (%v), and its end could not be confirmed: %v", id, ctx.Err(), err)
		return res, &sandbox.PlatformError{Op: "confirm the end of cancelled run " + id, Err: err}
	}
	return end.Result, internalError("run "+id, end.Result)
}

// internalError returns the *sandbox.PlatformError a runtime returns with
// res if res has StatusInternal, and nil otherwise.
func internalError(op string, res sandbox.Result) error {
	if res.Status != sandbox.StatusInternal {
		return nil
	}
	reason := res.Reason
	if reason == "" {
		reason = "the server reports an internal failure"
	}
	return &sandbox.PlatformError{Op: op, Err: errors.New(reason)}
}

// failedResult is the Result of req when it has none of its own:
// StatusInternal, no program run.
func failedResult(req sandbox.Request) sandbox.Result {
	return sandbox.Result{
		Status:   sandbox.StatusInternal,
		ExitCode: -1,
		Language: req.Language.Canonical(),
		CodeHash: sandbox.CodeHash(req.Code),
		Limits:   req.Limits.WithDefaults(),
	}
}
