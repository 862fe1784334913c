package swe

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// DefaultBenchConcurrency is how many tasks a benchmark runs at once
// when BenchConfig.Concurrency is zero.
const DefaultBenchConcurrency = 2

// BenchConfig configures a benchmark run.
type BenchConfig struct {
	// Config is every task's run configuration (model, sandbox, image,
	// limits, budgets). Each task gets its own ID (Config.ID, if set, is
	// its prefix) and OnEvent is not used: OnResult reports progress.
	Config Config
	// Concurrency bounds the tasks run at once (default
	// DefaultBenchConcurrency).
	Concurrency int
	// OnResult, if set, is called with each task's result as it ends,
	// from the task's goroutine (one call at a time).
	OnResult func(BenchResult)
	// Before, if set, holds each task's tests on the pristine repository,
	// run once for every benchmark given the same cache: comparing
	// models (or scripted behaviours) on the same tasks then runs each
	// task's tests before once, not once per model. Nil runs them in
	// every run.
	Before *BeforeCache
}

// BeforeCache holds tasks' tests on their pristine repositories, by task
// name: a task's repository, test command and tests are the same in
// every benchmark that shares the cache (only the model differs). Safe
// for concurrent use; a run that failed is not kept.
type BeforeCache struct {
	mu      sync.Mutex
	entries map[string]*beforeEntry
}

// beforeEntry is one task's tests before: done is closed once rep and
// err are set.
type beforeEntry struct {
	done chan struct{}
	rep  *TestReport
	err  error
}

// NewBeforeCache returns an empty cache.
func NewBeforeCache() *BeforeCache { return &BeforeCache{entries: map[string]*beforeEntry{}} }

// get returns task's tests before, running them (Verify with no change)
// if no run of them is kept or under way; callers for the same task
// wait for the one run.
func (c *BeforeCache) get(ctx context.Context, cfg Config, t BenchTask) (*TestReport, error) {
	c.mu.Lock()
	e, ok := c.entries[t.Name]
	if !ok {
		e = &beforeEntry{done: make(chan struct{})}
		c.entries[t.Name] = e
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-e.done:
			if e.err == nil {
				return e.rep, nil
			}
			return c.get(ctx, cfg, t) // the failed run was dropped: run again
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e.rep, e.err = Verify(ctx, cfg, t.Task, "")
	if e.err != nil {
		c.mu.Lock()
		delete(c.entries, t.Name)
		c.mu.Unlock()
	}
	close(e.done)
	return e.rep, e.err
}

// BenchResult is one task's outcome.
type BenchResult struct {
	Name     string `json:"name"`
	Resolved bool   `json:"resolved"`
	Status   Status `json:"status"`
	// Reason is the run's reason, or the platform's error.
	Reason string `json:"reason,omitempty"`
	// Failing are the tests that failed (or were missing) after the
	// change, in the fresh sandbox; Broken those of them that passed
	// before.
	Failing []string `json:"failing,omitempty"`
	Broken  []string `json:"broken,omitempty"`
	// ApplyError says why the diff did not apply.
	ApplyError string `json:"apply_error,omitempty"`
	// TestEdits are the test files the diff changes.
	TestEdits []string `json:"test_edits,omitempty"`
	Submitted bool     `json:"submitted"`
	Steps     int      `json:"steps"`
	Tokens    int      `json:"tokens"`
	// DurationMS times the task, verification included.
	DurationMS float64 `json:"duration_ms"`
	// Result is the whole run (nil when it failed to start).
	Result *Result `json:"-"`
}

// BenchReport is a benchmark's outcome: every task's result, in the
// tasks' order, and the summary.
type BenchReport struct {
	Results  []BenchResult  `json:"results"`
	Resolved int            `json:"resolved"`
	Total    int            `json:"total"`
	ByStatus map[Status]int `json:"by_status"`
	// DurationMS is the benchmark's wall time.
	DurationMS float64 `json:"duration_ms"`
	// Concurrency is how many tasks ran at once.
	Concurrency int `json:"concurrency"`
}

// Bench runs every task with Run, at most cfg.Concurrency at once, and
// reports each one resolved or not with the reason. A task whose run
// fails (the platform, not the model) counts as failed and the others go
// on; the error is ctx's only, when it ended the benchmark early (the
// report then holds the tasks that ended).
func Bench(ctx context.Context, cfg BenchConfig, tasks []BenchTask) (*BenchReport, error) {
	k := cfg.Concurrency
	switch {
	case k == 0:
		k = DefaultBenchConcurrency
	case k < 0:
		return nil, fmt.Errorf("concurrency must be at least 1, got %d", k)
	}
	if cfg.Config.Model == nil || cfg.Config.Sandbox == nil {
		return nil, fmt.Errorf("bench: Config.Model and Config.Sandbox are required")
	}
	seen := map[string]bool{}
	for _, t := range tasks {
		if seen[t.Name] {
			return nil, fmt.Errorf("bench: task %q is listed twice", t.Name)
		}
		seen[t.Name] = true
	}
	start := time.Now()
	results := make([]BenchResult, len(tasks))
	done := make([]bool, len(tasks))
	var mu sync.Mutex // OnResult, done
	sem := make(chan struct{}, k)
	var wg sync.WaitGroup
	for i, t := range tasks {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := benchOne(ctx, cfg.Config, cfg.Before, t)
			if ctx.Err() != nil && r.Status == StatusFailed {
				return // cut short by the caller: not a result
			}
			mu.Lock()
			defer mu.Unlock()
			results[i], done[i] = r, true
			if cfg.OnResult != nil {
				cfg.OnResult(r)
			}
		}()
	}
	wg.Wait()
	rep := &BenchReport{ByStatus: map[Status]int{}, Concurrency: k, DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	for i, r := range results {
		if !done[i] {
			continue
		}
		rep.Results = append(rep.Results, r)
		rep.Total++
		rep.ByStatus[r.Status]++
		if r.Resolved {
			rep.Resolved++
		}
	}
	return rep, ctx.Err()
}

// benchOne runs one task and sums its outcome up.
func benchOne(ctx context.Context, cfg Config, before *BeforeCache, t BenchTask) BenchResult {
	if cfg.ID != "" {
		cfg.ID += "-" + t.Name
	}
	cfg.OnEvent = nil
	if before != nil {
		cfg.testsBefore = func(ctx context.Context) (*TestReport, error) { return before.get(ctx, cfg, t) }
	}
	start := time.Now()
	res, err := Run(ctx, cfg, t.Task)
	r := BenchResult{Name: t.Name, DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if err != nil {
		r.Status, r.Reason = StatusFailed, err.Error()
		return r
	}
	r.Result = res
	r.Status, r.Reason = res.Status, res.Reason
	r.Resolved = res.Status == StatusResolved
	r.Broken, r.TestEdits, r.Submitted = res.Broken, res.TestEdits, res.Submitted
	r.Steps, r.Tokens = res.Trace.Budget.Steps, res.Trace.Budget.Tokens
	if res.After != nil {
		r.ApplyError = res.After.ApplyError
		for _, c := range res.After.Cases {
			if c.Outcome == TestFailed || c.Outcome == TestMissing {
				r.Failing = append(r.Failing, c.ID)
			}
		}
		sort.Strings(r.Failing)
	}
	return r
}
