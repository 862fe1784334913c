package client

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// RunOption adjusts one CreateRun or RunAsync call.
type RunOption func(url.Values)

// UseCache lets the server answer from its result cache when an identical
// earlier run of the tenant is there, and cache this run's result
// (?cache=1). Without it the code always runs: caching is opt-in, since a
// program that reads the clock or draws random numbers means something new
// at every run.
func UseCache() RunOption {
	return func(q url.Values) { q.Set("cache", "1") }
}

func runQuery(opts []RunOption) url.Values {
	q := url.Values{}
	for _, opt := range opts {
		opt(q)
	}
	return q
}

// CreateRun runs req and waits for its result (POST /v1/runs), which
// comes with the ID of the run's record and whether the server answered
// from its cache (see UseCache). A program that fails is not an error: it
// is a result with Status "error", "timeout" and so on. Errors are
// requests the server refused (an *APIError, such as 400 with Field naming
// the invalid field, or 429 when its queue is full) and transport
// failures. Cancelling ctx closes the request, and the server then kills
// the run; use Run for the sandbox.Runtime contract, which also waits for
// that.
//
// When req.OnOutput is set, the run is streamed (?stream=1): OnOutput
// receives the redacted output while the program runs, from the calling
// goroutine, and the result is the same. A dropped stream is not resumed:
// the server kills a run whose stream's connection closed, as it does on
// a cancel. To have a run outlive a dropped connection, start it with
// RunAsync and follow it with FollowRun, which resumes.
func (c *Client) CreateRun(ctx context.Context, req sandbox.Request, opts ...RunOption) (*api.RunResponse, error) {
	var res api.RunResponse
	r := request{method: "POST", path: "/v1/runs", query: runQuery(opts)}
	var err error
	if req.OnOutput != nil {
		err = c.stream(ctx, r, req, events{output: req.OnOutput, result: &res})
	} else {
		err = c.call(ctx, r, req, &res)
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// FollowRun follows run id (GET /v1/runs/{id}/events) until it ends,
// passing its output to onOutput as it comes, and returns its result. A
// run started with RunAsync is followed live from its start, whenever
// FollowRun is called; a run that already ended is replayed from its
// record (its artifacts then come without contents: see Artifact).
// onOutput may be nil.
//
// A connection that drops before the result is resumed with Last-Event-ID
// (at once, then after the server's retry: delay), at most 3 times in a
// row without a new event; the run goes on meanwhile. onOutput gets each
// byte of output once: resumed after the run's end with output on both
// streams, the server answers the result alone, and the output not yet
// passed on is passed from it.
func (c *Client) FollowRun(ctx context.Context, id string, onOutput sandbox.OutputFunc) (*api.RunResponse, error) {
	if onOutput == nil {
		onOutput = func(sandbox.Stream, []byte) {}
	}
	var res api.RunResponse
	r := request{method: "GET", path: "/v1/runs/" + url.PathEscape(id) + "/events"}
	if err := c.readStream(ctx, r, events{output: onOutput, result: &res, resumable: true}); err != nil {
		return nil, err
	}
	return &res, nil
}

// Artifact returns the content of the artifact called name of run id (GET
// /v1/runs/{id}/artifacts/{name}), as listed in its record's Artifacts;
// IsNotFound reports an unknown run or artifact, or one whose content was
// omitted.
func (c *Client) Artifact(ctx context.Context, id, name string) ([]byte, error) {
	resp, err := c.send(ctx, request{method: "GET", path: "/v1/runs/" + url.PathEscape(id) + "/artifacts/" + escapePath(name)})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: GET artifact %s of %s: %w", name, id, err)
	}
	return b, nil
}

// RunAsync queues req and returns the ID of its record at once (POST
// /v1/runs?async=1); follow it with FollowRun, WaitRun or GetRun. A cache
// hit's record is already finished.
func (c *Client) RunAsync(ctx context.Context, req sandbox.Request, opts ...RunOption) (id string, err error) {
	q := runQuery(opts)
	q.Set("async", "1")
	var ans api.RunAccepted
	if err := c.call(ctx, request{method: "POST", path: "/v1/runs", query: q}, req, &ans); err != nil {
		return "", err
	}
	if ans.ID == "" {
		return "", fmt.Errorf("client: POST /v1/runs: the answer has no run id")
	}
	return ans.ID, nil
}

// GetRun returns the record of run id (GET /v1/runs/{id}); IsNotFound
// reports an unknown id.
func (c *Client) GetRun(ctx context.Context, id string) (*api.Run, error) {
	var run api.Run
	if err := c.call(ctx, request{method: "GET", path: "/v1/runs/" + url.PathEscape(id)}, nil, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// DefaultPoll is WaitRun's polling interval when it is given none.
const DefaultPoll = 250 * time.Millisecond

// WaitRun polls run id every poll (DefaultPoll when poll <= 0) until it
// reaches a terminal status, and returns its record. Every status but
// "queued" and "running" is terminal: ok, error, timeout, cpu_limit,
// memory_limit, output_limit, killed, blocked, internal and interrupted.
// It returns ctx's error if ctx ends first, and GetRun's error if a poll
// fails.
func (c *Client) WaitRun(ctx context.Context, id string, poll time.Duration) (*api.Run, error) {
	if poll <= 0 {
		poll = DefaultPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		run, err := c.GetRun(ctx, id)
		if err != nil {
			return nil, err
		}
		if run.Status != api.StatusQueued && run.Status != api.StatusRunning {
			return run, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// ListOptions select the runs ListRuns returns. Zero fields select
// everything.
type ListOptions struct {
	// Status keeps only runs with this status, such as "ok" or "queued".
	Status string
	// Language keeps only runs of this language.
	Language string
	// Since keeps only runs created at or after this time.
	Since time.Time
	// Limit is the page size; the server's default (50) when zero, at most
	// its maximum (500).
	Limit int
	// Cursor continues a listing: the next value a previous call returned.
	Cursor string
}

// ListRuns returns one page of runs, newest first (GET /v1/runs), and the
// cursor of the next page, "" after the last one: pass it as
// ListOptions.Cursor to continue.
func (c *Client) ListRuns(ctx context.Context, opts ListOptions) (runs []api.Run, next string, err error) {
	q := url.Values{}
	if opts.Status != "" {
		q.Set("status", opts.Status)
	}
	if opts.Language != "" {
		q.Set("language", opts.Language)
	}
	if !opts.Since.IsZero() {
		q.Set("since", opts.Since.UTC().Format(time.RFC3339Nano))
	}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	var page api.RunList
	if err := c.call(ctx, request{method: "GET", path: "/v1/runs", query: q}, nil, &page); err != nil {
		return nil, "", err
	}
	return page.Runs, page.Next, nil
}
