package sandbox

import "context"

// Runtime runs requests in sandboxes. Implementations must be safe for
// concurrent use.
//
// Run validates the request and returns an *InputError without running
// anything if it is invalid. Otherwise it runs the code in a fresh sandbox
// and returns the Result; when Run returns, every process of the run is dead
// and nothing of the sandbox remains on the host. A platform failure returns
// a Result with StatusInternal and a *PlatformError. Cancelling ctx kills the
// run (StatusKilled).
type Runtime interface {
	Run(ctx context.Context, req Request) (Result, error)
}
