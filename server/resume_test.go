package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// step is one step of a scriptRuntime's run: output, or a wait for gate.
type step struct {
	stream sandbox.Stream
	text   string
	gate   chan struct{}
}

// scriptRuntime runs every request as its script: it writes the output
// steps and waits at each gate until the test closes it. It has no
// sessions.
type scriptRuntime struct{ script []step }

func (s *scriptRuntime) Run(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	res := sandbox.Result{Status: sandbox.StatusOK, Language: req.Language, Limits: req.Limits.WithDefaults(),
		Stdout: sandbox.Data{}, Stderr: sandbox.Data{}}
	for _, st := range s.script {
		if st.gate != nil {
			select {
			case <-st.gate:
			case <-ctx.Done():
				res.Status, res.ExitCode = sandbox.StatusKilled, -1
				return res, nil
			}
			continue
		}
		if req.OnOutput != nil {
			req.OnOutput(st.stream, []byte(st.text))
		}
		if st.stream == sandbox.StreamStdout {
			res.Stdout = append(res.Stdout, st.text...)
		} else {
			res.Stderr = append(res.Stderr, st.text...)
		}
	}
	return res, nil
}

func (*scriptRuntime) NewSession(context.Context, sandbox.SessionRequest) (sandbox.Session, error) {
	return nil, sandbox.ErrSessionClosed
}

// newScriptServer starts a server on rt and the store st, without root.
func newScriptServer(t *testing.T, rt *scriptRuntime, st store.Store) *testServer {
	t.Helper()
	srv, svc := newServer(t, config{Config: service.Config{Runtime: rt, Store: st}})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &testServer{T: t, srv: srv, svc: svc, http: hs, store: st}
}

// summary is an event as the resume tests compare it: name, id, and the
// output it carries (its data for other events).
func summary(t *testing.T, events []event) []string {
	t.Helper()
	var s []string
	for _, e := range events {
		text := string(e.data)
		switch e.name {
		case "stdout", "stderr":
			var d sandbox.Data
			if err := json.Unmarshal(e.data, &d); err != nil {
				t.Fatalf("%s event %s: %v", e.name, e.data, err)
			}
			text = string(d)
		case "run", "result":
			text = ""
		}
		s = append(s, e.name+" "+e.id+" "+strings.TrimSuffix(text, "\n"))
	}
	return s
}

// TestResumeRun: every event of a run's stream has an id (its position in
// the run: 1 + the output bytes through it, the result one more), and GET
// /v1/runs/{id}/events with Last-Event-ID (or ?after) gives only the events
// after it, live or from the record once the run's feed is gone.
func TestResumeRun(t *testing.T) {
	gate := make(chan struct{})
	openGate := sync.OnceFunc(func() { close(gate) })
	rt := &scriptRuntime{script: []step{
		{stream: sandbox.StreamStdout, text: "one\n"},
		{stream: sandbox.StreamStderr, text: "warn\n"},
		{gate: gate},
		{stream: sandbox.StreamStdout, text: "two\n"},
	}}
	st := openStore(t)
	ts := newScriptServer(t, rt, st)
	t.Cleanup(openGate) // before the server's shutdown
	r := ts.do("POST", "/v1/runs?async=1", python("x"))
	var acc api.RunAccepted
	r.json(t, &acc)
	path := "/v1/runs/" + acc.ID + "/events"

	// A follower reads the events so far, ids included.
	first := ts.open("GET", path, nil, nil)
	sc := newEventScanner(first.Body)
	var seen []event
	for range 3 {
		e, ok := ts.next(sc)
		if !ok {
			t.Fatalf("the stream ended after %v", summary(t, seen))
		}
		seen = append(seen, e)
	}
	first.Body.Close()
	if got, want := summary(t, seen), []string{"run 1 ", "stdout 5 one", "stderr 10 warn"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first events %q, want %q", got, want)
	}

	// Resuming while the run waits: only the later events, live.
	resume := func(header http.Header, query string) *http.Response {
		resp := ts.open("GET", path+query, nil, header)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("resume %v %s: status %d", header, query, resp.StatusCode)
		}
		return resp
	}
	byHeader := resume(http.Header{"Last-Event-Id": {"5"}}, "")
	defer byHeader.Body.Close()
	byQuery := resume(nil, "?after=10")
	defer byQuery.Body.Close()
	headerWins := resume(http.Header{"Last-Event-Id": {"10"}}, "?after=0")
	defer headerWins.Body.Close()
	hsc := newEventScanner(byHeader.Body)
	if e, ok := ts.next(hsc); !ok || e.name != "stderr" || e.id != "10" {
		t.Fatalf("after Last-Event-ID 5: first event %+v, want stderr 10", e)
	}
	for _, c := range []struct {
		name string
		val  string
		want string
	}{
		{"Last-Event-ID", "abc", "a non-negative integer"},
		{"Last-Event-ID", "-3", "a non-negative integer"},
		{"Last-Event-ID", "99", "beyond"},
		{"after", "x", "a non-negative integer"},
	} {
		var resp response
		if c.name == "after" {
			resp = ts.do("GET", path+"?after="+c.val, nil)
		} else {
			req := ts.open("GET", path, nil, http.Header{"Last-Event-Id": {c.val}})
			var b bytes.Buffer
			_, _ = b.ReadFrom(req.Body)
			req.Body.Close()
			resp = response{status: req.StatusCode, header: req.Header, body: b.Bytes()}
		}
		e := resp.wantError(t, http.StatusBadRequest, "invalid_request")
		if e.Error.Field != c.name || !strings.Contains(e.Error.Rule, c.want) {
			t.Errorf("%s: %s: error %+v, want field %s and a rule saying %q", c.name, c.val, e.Error, c.name, c.want)
		}
	}
	openGate()
	rest := []string{"stdout 14 two", "result 15 "}
	if got := summary(t, ts.readAll(hsc)); !reflect.DeepEqual(got, rest) {
		t.Errorf("after Last-Event-ID 5, then: %q, want %q", got, rest)
	}
	for name, resp := range map[string]*http.Response{"?after=10": byQuery, "Last-Event-ID 10 with ?after=0": headerWins} {
		if got := summary(t, ts.readAll(newEventScanner(resp.Body))); !reflect.DeepEqual(got, rest) {
			t.Errorf("%s: %q, want %q", name, got, rest)
		}
	}

	// A streamed run has the same ids.
	streamed := summary(t, ts.stream("/v1/runs?stream=1", python("x")))
	if want := []string{"run 1 ", "stdout 5 one", "stderr 10 warn", "stdout 14 two", "result 15 "}; !reflect.DeepEqual(streamed, want) {
		t.Errorf("POST ?stream=1: %q, want %q", streamed, want)
	}

	// Once the feed is gone (here: another server on the same store), the
	// record answers, with ids that continue the live ones.
	later := newScriptServer(t, rt, st)
	for _, c := range []struct {
		last string
		want []string
	}{
		{"", []string{"run 1 ", "stdout 9 one\ntwo", "stderr 14 warn", "result 15 "}},
		{"1", []string{"stdout 9 one\ntwo", "stderr 14 warn", "result 15 "}},
		{"5", []string{"result 15 "}}, // the split of the rest between stdout and stderr is not kept
	} {
		var h http.Header
		if c.last != "" {
			h = http.Header{"Last-Event-Id": {c.last}}
		}
		resp := later.open("GET", path, nil, h)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("from the record, Last-Event-ID %q: status %d", c.last, resp.StatusCode)
		}
		got := summary(t, later.readAll(newEventScanner(resp.Body)))
		resp.Body.Close()
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("from the record, Last-Event-ID %q: %q, want %q", c.last, got, c.want)
		}
	}
	// After the last event there is nothing to send: 204, which also stops
	// an EventSource from reconnecting.
	for _, s := range []*testServer{ts, later} {
		resp := s.open("GET", path, nil, http.Header{"Last-Event-Id": {"15"}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("Last-Event-ID of the result: status %d, want 204", resp.StatusCode)
		}
	}
}
