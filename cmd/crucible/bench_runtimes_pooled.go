//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/service"
)

// pooledRuntime is a runtime keeping sandboxes ready for its pooled rows.
// settle waits until they are ready again and at rest; close closes the
// runtime; detail says what a run takes.
type pooledRuntime struct {
	rt     service.Runtime
	detail string
	settle func(context.Context)
	close  func()
}

// pooledDirect is the pooled row: runs called on the runtime open
// starts.
func pooledDirect(open func(context.Context, *benchEnv) (*pooledRuntime, error)) func(context.Context, *benchEnv) (*benchSubject, error) {
	return func(ctx context.Context, e *benchEnv) (*benchSubject, error) {
		p, err := open(ctx, e)
		if err != nil {
			return nil, err
		}
		return &benchSubject{detail: p.detail, call: directCall(p.rt, e.req, e.want), settle: p.settle, close: p.close}, nil
	}
}

// pooledAPI is the pooled row through the API, the row of issue 26's
// targets: the runtime open starts, served by an API server in this
// process (startBenchServer); a run is the Go SDK's POST
// /v1/runs?cache=0, timed from the request to its answer. A run refused
// (429: with one client, the server is never full) and a run during which
// the server logged a warning or an error fail.
func pooledAPI(open func(context.Context, *benchEnv) (*pooledRuntime, error)) func(context.Context, *benchEnv) (*benchSubject, error) {
	return func(ctx context.Context, e *benchEnv) (*benchSubject, error) {
		p, err := open(ctx, e)
		if err != nil {
			return nil, err
		}
		srv, err := startBenchServer(ctx, p.rt, benchServerConfig{clients: 1})
		if err != nil {
			p.close()
			return nil, fmt.Errorf("the API server: %w", err)
		}
		api := apiCall(srv.client, e.req, e.want)
		return &benchSubject{
			detail: p.detail + ", through the API: POST /v1/runs?cache=0 from the Go SDK to a server in this process on loopback",
			call: func(ctx context.Context) outcome {
				o := api(ctx)
				if o.rejected {
					o = outcome{err: errors.New("the server refused the run: 429 Too Many Requests")}
				}
				if n, samples := srv.logs.take().summary(); o.err == nil && n > 0 {
					o.err = fmt.Errorf("the server logged %d warnings or errors, first: %s", n, samples[0].Error)
				}
				return o
			},
			settle: p.settle,
			close:  func() { srv.close(); p.close() },
		}, nil
	}
}

// nativePooled is a native runtime keeping one warm zygote slot and one
// prestarted sandbox, as crucible serve keeps them (a Python run takes the
// slot).
func nativePooled(_ context.Context, e *benchEnv) (*pooledRuntime, error) {
	rt, err := nativeRuntime(e, func(o *linux.Options) { o.Warm, o.Prestart = 1, 1 })
	if err != nil {
		return nil, err
	}
	return &pooledRuntime{
		rt:     rt,
		detail: "--warm 1 --prestart 1: a warm zygote slot's forked child",
		settle: func(ctx context.Context) {
			waitUntil(ctx, func() bool {
				p, w := rt.PoolStats(), rt.WarmStats()
				return p.Ready >= p.Size && w.Ready >= w.Size
			})
		},
		close: func() { rt.Close() },
	}, nil
}
