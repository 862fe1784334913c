package eval

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// internalRetries is how often a sample whose run failed for platform
// reasons is tried again before it is reported as OutcomeInternal.
const internalRetries = 2

// Runner evaluates samples, each in a fresh sandbox of Runtime.
type Runner struct {
	// Runtime runs the programs.
	Runtime sandbox.Runtime
	// Concurrency is how many samples run at once (at least 1).
	Concurrency int
	// Limits apply to every sample; zero fields take the sandbox defaults.
	Limits sandbox.Limits
	// OnResult, if set, is called with each result as it arrives, one
	// call at a time.
	OnResult func(SampleResult)
}

// Run evaluates samples against problems and returns one result per
// sample, in sample order. Every problem must have at least one sample. If
// ctx is cancelled, Run stops starting samples and returns ctx's error
// with the results so far (unjudged samples have an empty Outcome, which
// Summarize counts as OutcomeNotRun).
func (r *Runner) Run(ctx context.Context, problems []Problem, samples []Sample) ([]SampleResult, error) {
	if err := checkCoverage(problems, samples); err != nil {
		return nil, err
	}
	if err := r.Limits.Validate(); err != nil {
		return nil, err
	}
	byID := make(map[string]*Problem, len(problems))
	for i := range problems {
		byID[problems[i].TaskID] = &problems[i]
	}
	for _, s := range samples {
		if byID[s.TaskID] == nil {
			return nil, fmt.Errorf("sample %d: task_id %q is not among the problems", s.Index, s.TaskID)
		}
	}
	workers := max(r.Concurrency, 1)
	results := make([]SampleResult, len(samples))
	for i, s := range samples { // unjudged results still say which sample
		results[i] = SampleResult{TaskID: s.TaskID, Sample: s.Index, Line: s.Line}
	}
	jobs := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				res := r.evaluate(ctx, byID[samples[i].TaskID], samples[i])
				mu.Lock()
				results[i] = res
				if r.OnResult != nil {
					r.OnResult(res)
				}
				mu.Unlock()
			}
		})
	}
	var err error
feed:
	for i := range samples {
		select {
		case jobs <- i:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	return results, err
}

// evaluate runs one sample, retrying platform failures.
func (r *Runner) evaluate(ctx context.Context, p *Problem, s Sample) SampleResult {
	out := SampleResult{TaskID: s.TaskID, Sample: s.Index, Line: s.Line}
	for attempt := 0; ; attempt++ {
		sentinel := newSentinel()
		req := sandbox.Request{Language: sandbox.Python, Code: Program(*p, s, sentinel), Limits: r.Limits}
		res, err := r.Runtime.Run(ctx, req)
		out.Outcome, out.Reason = judge(res, sentinel)
		if err != nil && out.Outcome != OutcomeInternal {
			out.Outcome, out.Reason = OutcomeInternal, err.Error()
		}
		var input *sandbox.InputError
		if errors.As(err, &input) { // e.g. a program over the code size limit
			out.Outcome, out.Reason = OutcomeFailed, err.Error()
		}
		out.Status, out.ExitCode, out.WallMS = res.Status, res.ExitCode, res.Metrics.WallMS
		out.Error = res.Error
		if out.Error != nil {
			out.Error.Traceback = "" // type, message and line say enough per sample
		}
		if out.Outcome != OutcomeInternal || attempt == internalRetries || ctx.Err() != nil {
			break
		}
	}
	out.Passed = out.Outcome == OutcomePassed
	return out
}
