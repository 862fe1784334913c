package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// These tests need no root: a fake server answers as the real one does (or
// fails as it might), and they check that the client keeps the
// sandbox.Runtime and sandbox.Session contracts over each answer.

// fakeServer serves each case under its own path prefix: the client of
// case "x" has base URL <server>/x, and handle gets the path after it.
func fakeServer(t *testing.T, handle func(name string, w http.ResponseWriter, r *http.Request)) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// As the real server does: reading the body lets net/http notice
		// the client going away (r.Context() then ends).
		_, _ = io.Copy(io.Discard, r.Body)
		name, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
		path, err := url.PathUnescape("/" + rest)
		if err != nil {
			t.Errorf("%s: %v", r.URL, err)
		}
		r.URL.Path, r.URL.RawPath = path, "/"+rest
		handle(name, w, r)
	}))
	t.Cleanup(hs.Close)
	return hs
}

func fakeClient(t *testing.T, hs *httptest.Server, name string) *client.Client {
	t.Helper()
	c, err := client.New(hs.URL + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// events answers an event stream of the given "name data" events.
func events(w http.ResponseWriter, evs ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range evs {
		name, data, _ := strings.Cut(ev, " ")
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	}
}

// pathName is a case's name as a path segment.
func pathName(name string) string { return strings.ReplaceAll(name, " ", "-") }

func jsonError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}

const runEvent = `run {"id":"r1","status":"queued"}`

func TestRunErrors(t *testing.T) {
	type want struct {
		status   sandbox.Status // of the Result; "" for a zero Result
		input    string         // the InputError's field, if one
		platform bool           // a *sandbox.PlatformError
		api      int            // the *APIError's status, if one
		stdout   string         // what OnOutput got
	}
	cases := []struct {
		name   string
		handle func(w http.ResponseWriter, r *http.Request)
		want   want
	}{
		{"ok", func(w http.ResponseWriter, r *http.Request) {
			if q := r.URL.Query(); q.Get("cache") != "0" || q.Get("stream") != "1" {
				jsonError(w, 400, `{"error":{"code":"invalid_request","message":"want cache=0 and stream=1, got `+r.URL.RawQuery+`"}}`)
				return
			}
			events(w, runEvent, `stdout "hi\n"`, `result {"id":"r1","cache_hit":false,"status":"ok","exit_code":0,"stdout":"hi\n"}`)
		}, want{status: sandbox.StatusOK, stdout: "hi\n"}},
		{"invalid field", func(w http.ResponseWriter, r *http.Request) {
			jsonError(w, 400, `{"error":{"code":"invalid_request","message":"invalid request: limits.memory_bytes: too big","field":"limits.memory_bytes","rule":"too big"}}`)
		}, want{input: "limits.memory_bytes", api: 400}},
		{"body too large", func(w http.ResponseWriter, r *http.Request) {
			jsonError(w, 413, `{"error":{"code":"payload_too_large","message":"the body exceeds the limit of 10 bytes"}}`)
		}, want{input: "body", api: 413}},
		{"server error", func(w http.ResponseWriter, r *http.Request) {
			jsonError(w, 500, `{"error":{"code":"internal","message":"internal server error"}}`)
		}, want{status: sandbox.StatusInternal, platform: true, api: 500}},
		{"queue full", func(w http.ResponseWriter, r *http.Request) {
			jsonError(w, 429, `{"error":{"code":"too_many_requests","message":"the run queue is full"}}`)
		}, want{status: sandbox.StatusInternal, platform: true, api: 429}},
		{"proxy page", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>502</html>")
		}, want{status: sandbox.StatusInternal, platform: true, api: 502}},
		{"error event", func(w http.ResponseWriter, r *http.Request) {
			events(w, runEvent, `stdout "part"`, `error {"code":"internal","message":"internal server error"}`)
		}, want{status: sandbox.StatusInternal, platform: true, api: 500, stdout: "part"}},
		{"internal result", func(w http.ResponseWriter, r *http.Request) {
			events(w, runEvent, `result {"id":"r1","status":"internal","reason":"create cgroup: no space","exit_code":-1}`)
		}, want{status: sandbox.StatusInternal, platform: true}},
		{"stream cut", func(w http.ResponseWriter, r *http.Request) {
			events(w, runEvent, `stdout "part"`)
		}, want{status: sandbox.StatusInternal, platform: true, stdout: "part"}},
	}
	hs := fakeServer(t, func(name string, w http.ResponseWriter, r *http.Request) {
		for _, tc := range cases {
			if pathName(tc.name) == name {
				tc.handle(w, r)
				return
			}
		}
		t.Errorf("no case %q", name)
	})
	check := func(t *testing.T, res sandbox.Result, err error, stdout string, w want) {
		t.Helper()
		if res.Status != w.status {
			t.Errorf("status %q (reason %q), want %q", res.Status, res.Reason, w.status)
		}
		var ie *sandbox.InputError
		if got := errors.As(err, &ie); got != (w.input != "") || got != sandbox.IsInputError(err) || (got && ie.Field != w.input) {
			t.Errorf("err %v: InputError %+v, want field %q", err, ie, w.input)
		}
		var pe *sandbox.PlatformError
		if errors.As(err, &pe) != w.platform {
			t.Errorf("err %v: PlatformError %v, want %v", err, pe != nil, w.platform)
		}
		var ae *client.APIError
		if got := errors.As(err, &ae); got != (w.api != 0) || (got && ae.Status != w.api) {
			t.Errorf("err %v: APIError %+v, want status %d", err, ae, w.api)
		}
		if w.status == sandbox.StatusOK && err != nil {
			t.Errorf("err %v, want none", err)
		}
		if stdout != w.stdout {
			t.Errorf("OnOutput got %q, want %q", stdout, w.stdout)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			req := sandbox.Request{Language: sandbox.Python, Code: "print('hi')",
				OnOutput: func(_ sandbox.Stream, b []byte) { out.Write(b) }}
			res, err := fakeClient(t, hs, pathName(tc.name)).Run(context.Background(), req)
			check(t, res, err, out.String(), tc.want)
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		c, err := client.New(dead.URL)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Run(context.Background(), sandbox.Request{Language: sandbox.Python, Code: "1"})
		check(t, res, err, "", want{status: sandbox.StatusInternal, platform: true})
	})
}

// TestRunCancel checks that a cancelled Run returns the run's end as the
// server reports it, after the server saw the client go (and so killed
// the run), not before.
func TestRunCancel(t *testing.T) {
	var disconnected atomic.Bool
	gone := make(chan struct{})
	var follows atomic.Int32
	hs := fakeServer(t, func(name string, w http.ResponseWriter, r *http.Request) {
		switch {
		case name == "headers-first" && r.Method == "POST":
			events(w, runEvent, `stdout "started\n"`)
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the client went away: the server kills the run
			disconnected.Store(true)
			close(gone)
		case name == "headers-first" && r.URL.Path == "/v1/runs/r1/events":
			follows.Add(1)
			select {
			case <-gone:
			case <-time.After(5 * time.Second):
				t.Errorf("the client followed the run, but never closed its POST")
			}
			events(w, runEvent, `stdout "started\n"`,
				`result {"id":"r1","status":"killed","reason":"run cancelled: context canceled","exit_code":-1,"signal":"SIGKILL","stdout":"started\n"}`)
		case name == "no-confirmation" && r.Method == "POST":
			events(w, runEvent)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case name == "no-confirmation":
			jsonError(w, 500, `{"error":{"code":"internal","message":"internal server error"}}`)
		case name == "no-answer":
			<-r.Context().Done() // queued before it answers anything
		default:
			t.Errorf("unexpected %s %s of case %s", r.Method, r.URL.Path, name)
		}
	})
	for _, tc := range []struct {
		name     string
		status   sandbox.Status
		platform bool
		reason   string
	}{
		{"headers-first", sandbox.StatusKilled, false, "run cancelled"},
		{"no-confirmation", sandbox.StatusInternal, true, "could not be confirmed"},
		{"no-answer", sandbox.StatusKilled, false, "before the server answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			var out strings.Builder
			start := time.Now()
			res, err := fakeClient(t, hs, tc.name).Run(ctx, sandbox.Request{Language: sandbox.Python, Code: "import time\ntime.sleep(60)",
				OnOutput: func(_ sandbox.Stream, b []byte) { out.Write(b) }})
			var pe *sandbox.PlatformError
			if res.Status != tc.status || errors.As(err, &pe) != tc.platform || (err != nil && !tc.platform) || !strings.Contains(res.Reason, tc.reason) {
				t.Errorf("Run: status %s reason %q err %v; want status %s, reason with %q, platform error %v", res.Status, res.Reason, err, tc.status, tc.reason, tc.platform)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("Run returned %s after its start, its context ended after 200ms", d)
			}
			if tc.name == "headers-first" {
				if !disconnected.Load() || follows.Load() != 1 {
					t.Errorf("Run returned with the POST closed %v, the run followed %d times; want true, 1", disconnected.Load(), follows.Load())
				}
				if out.String() != "started\n" {
					t.Errorf("OnOutput got %q; want the output before the cancel, once", out.String())
				}
			}
		})
	}
}

func TestSessionErrors(t *testing.T) {
	var requests atomic.Int32
	hs := fakeServer(t, func(name string, w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch name + " " + r.Method + " " + r.URL.EscapedPath() {
		case "full POST /v1/sessions":
			jsonError(w, 429, `{"error":{"code":"too_many_requests","message":"too many open sessions"}}`)
		case "s POST /v1/sessions/closed%2Fone/exec", "s DELETE /v1/sessions/closed%2Fone":
			jsonError(w, 410, `{"error":{"code":"session_closed","message":"session is closed"}}`)
		case "s GET /v1/sessions/live/files/no/such.txt":
			jsonError(w, 404, `{"error":{"code":"not_found","message":"open no/such.txt: file does not exist"}}`)
		case "s POST /v1/sessions/live/exec":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"status":"internal","reason":"the kernel did not answer","exit_code":-1}`)
		case "s GET /v1/sessions/live/files":
			jsonError(w, 503, `{"error":{"code":"unavailable","message":"shutting down"}}`)
		default:
			t.Errorf("unexpected %s %s of case %s", r.Method, r.URL.EscapedPath(), name)
		}
	})
	ctx := context.Background()
	c := fakeClient(t, hs, "s")

	// AttachSession sends nothing.
	closedOne, live := c.AttachSession("closed/one"), c.AttachSession("live")
	if n := requests.Load(); n != 0 || closedOne.ID() != "closed/one" {
		t.Fatalf("AttachSession sent %d requests, ID %q", n, closedOne.ID())
	}

	_, sessErr := fakeClient(t, hs, "full").NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
	_, execClosed := closedOne.Exec(ctx, sandbox.Cell{Code: "1"})
	_, readMissing := live.ReadFile(ctx, "no/such.txt")
	res, execInternal := live.Exec(ctx, sandbox.Cell{Code: "1"})
	_, listUnavailable := live.ListFiles(ctx)
	for _, tc := range []struct {
		name   string
		err    error
		is     error // errors.Is must hold, if set
		status int   // the *APIError's, if not 0
		plat   bool  // a *sandbox.PlatformError
	}{
		{"NewSession, server full", sessErr, sandbox.ErrTooManySessions, 429, false},
		{"Exec in a closed session", execClosed, sandbox.ErrSessionClosed, 410, false},
		{"Close of a closed session", closedOne.Close(), sandbox.ErrSessionClosed, 410, false},
		{"ReadFile of a missing file", readMissing, fs.ErrNotExist, 404, false},
		{"Exec with an internal result", execInternal, nil, 0, true},
		{"ListFiles, server shutting down", listUnavailable, nil, 503, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(tc.err, tc.is) {
				t.Errorf("%v: errors.Is(%v) is false", tc.err, tc.is)
			}
			var ae *client.APIError
			if got := errors.As(tc.err, &ae); got != (tc.status != 0) || (got && ae.Status != tc.status) {
				t.Errorf("%v: APIError %+v, want status %d", tc.err, ae, tc.status)
			}
			var pe *sandbox.PlatformError
			if errors.As(tc.err, &pe) != tc.plat {
				t.Errorf("%v: PlatformError %v, want %v", tc.err, pe != nil, tc.plat)
			}
		})
	}
	if res.Status != sandbox.StatusInternal || res.Reason != "the kernel did not answer" {
		t.Errorf("Exec with an internal result: the Result %+v is lost", res)
	}
}
