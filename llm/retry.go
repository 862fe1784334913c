package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryPolicy is how Complete retries transient failures: 408, 429 and 5xx
// responses, timeouts and connection errors; never another 4xx, a
// malformed reply or a cancelled context. A Retry-After header sets the
// wait; otherwise it is exponential backoff with jitter.
//
// Both SDKs can retry by themselves, but they also retry 409 Conflict, let
// an x-should-retry response header override the status code and bound
// only the number of attempts, not the total time. So their retries are
// turned off (option.WithMaxRetries(0)) and this policy, shared by both
// providers, is used instead.
type retryPolicy struct {
	attempts   int           // attempts in all, at least 1
	baseDelay  time.Duration // backoff before the first retry, doubled for each next one
	maxDelay   time.Duration // cap on one computed backoff (not on Retry-After)
	maxElapsed time.Duration // no retry starts later than this after the first attempt
}

// newRetryPolicy returns the default policy with Config.MaxRetries applied.
func newRetryPolicy(maxRetries int) retryPolicy {
	p := retryPolicy{attempts: 4, baseDelay: 500 * time.Millisecond, maxDelay: 30 * time.Second, maxElapsed: 10 * time.Minute}
	switch {
	case maxRetries < 0:
		p.attempts = 1
	case maxRetries > 0:
		p.attempts = maxRetries + 1
	}
	return p
}

// observer records the HTTP response of one attempt, if there was one.
// Its observe method is an SDK middleware (option.Middleware, the same
// function type in both SDKs), so retries are decided on the status and
// headers actually received, whatever error type the SDK makes of them.
type observer struct {
	status int
	header http.Header
}

func (o *observer) observe(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if res != nil {
		o.status, o.header = res.StatusCode, res.Header
	}
	return res, err
}

// do runs attempt until it succeeds, fails for good, runs out of attempts
// or time, or ctx ends.
func (p retryPolicy) do(ctx context.Context, attempt func(context.Context, *observer) error) error {
	start := time.Now()
	for n := 1; ; n++ {
		var obs observer
		err := attempt(ctx, &obs)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return stopped(ctx, err)
		case !retryable(obs.status, err):
			return err
		case n >= p.attempts:
			return fmt.Errorf("giving up after %d attempts: %w", n, err)
		}
		delay, ok := retryAfter(obs.header, time.Now())
		if !ok {
			delay = p.backoff(n)
		}
		if time.Since(start)+delay > p.maxElapsed {
			return fmt.Errorf("giving up after %d attempts: retrying in %v would pass the %v limit: %w",
				n, delay.Round(time.Millisecond), p.maxElapsed, err)
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return stopped(ctx, err)
		case <-timer.C:
		}
	}
}

// stopped is the error for a context that ended; it mentions the last
// attempt's error unless that is the context's own.
func stopped(ctx context.Context, last error) error {
	if errors.Is(last, ctx.Err()) {
		return last
	}
	return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
}

// retryable reports whether an attempt that got status (0 if no response
// came) and failed with err may succeed if tried again.
func retryable(status int, err error) bool {
	switch {
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return true
	case status >= 400:
		return false
	}
	// Transport failures: *url.Error, *net.OpError and an attempt's own
	// timeout (context.DeadlineExceeded) all implement net.Error; a reply
	// that cannot be decoded does not.
	var netErr net.Error
	return errors.As(err, &netErr)
}

// backoff returns the wait before retry n (1 for the first): baseDelay
// doubled n-1 times, capped at maxDelay, then jittered to between half and
// all of it.
func (p retryPolicy) backoff(n int) time.Duration {
	d := p.baseDelay
	for i := 1; i < n && d < p.maxDelay; i++ {
		d *= 2
	}
	d = min(d, p.maxDelay)
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads a Retry-After header: seconds (fractions accepted, as
// the SDKs do) or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		// Cap absurd values (and +Inf) well inside time.Duration's range.
		return time.Duration(math.Min(secs, 1e6) * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
