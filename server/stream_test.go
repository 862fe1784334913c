package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// event is one Server-Sent Event and when it arrived.
type event struct {
	name string
	id   string // its id: field, "" without one
	data []byte
	at   time.Time
}

// stream posts body to path and reads the event stream to its end.
func (ts *testServer) stream(path string, body any) []event {
	ts.Helper()
	j, _ := json.Marshal(body)
	return ts.events("POST", path, bytes.NewReader(j))
}

// events sends a request and reads the event stream it answers to its end.
func (ts *testServer) events(method, path string, body io.Reader) []event {
	ts.Helper()
	var header http.Header
	if body != nil {
		header = http.Header{"Content-Type": {"application/json"}}
	}
	resp := ts.open(method, path, body, header)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		ts.Fatalf("%s %s: status %d, Content-Type %q", method, path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return ts.readAll(newEventScanner(resp.Body))
}

// open sends a request with header's fields added and returns its answer,
// whose body the caller closes.
func (ts *testServer) open(method, path string, body io.Reader, header http.Header) *http.Response {
	ts.Helper()
	req, _ := http.NewRequest(method, ts.http.URL+path, body)
	for k, v := range header {
		req.Header[k] = v
	}
	if ts.key != "" {
		req.Header.Set("Authorization", "Bearer "+ts.key)
	}
	resp, err := ts.http.Client().Do(req)
	if err != nil {
		ts.Fatal(err)
	}
	return resp
}

// newEventScanner returns a scanner of an event stream's lines.
func newEventScanner(body io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return sc
}

// readAll reads the events of sc to the end of the stream.
func (ts *testServer) readAll(sc *bufio.Scanner) []event {
	ts.Helper()
	var events []event
	for {
		e, ok := ts.next(sc)
		if !ok {
			return events
		}
		events = append(events, e)
	}
}

// next reads the next event of sc; false at the end of the stream.
func (ts *testServer) next(sc *bufio.Scanner) (event, bool) {
	ts.Helper()
	var cur event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name != "" {
				cur.at = time.Now()
				return cur, true
			}
			cur = event{}
		case strings.HasPrefix(line, ":"): // a heartbeat comment
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "retry: "):
		case strings.HasPrefix(line, "data: "):
			cur.data = []byte(strings.TrimPrefix(line, "data: "))
		default:
			ts.Fatalf("unexpected line %q in the event stream", line)
		}
	}
	if err := sc.Err(); err != nil {
		ts.Fatal(err)
	}
	return event{}, false
}

// joined concatenates the decoded data of the events called name.
func joined(t *testing.T, events []event, name string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		if e.name == name {
			var d sandbox.Data
			if err := json.Unmarshal(e.data, &d); err != nil {
				t.Fatalf("%s event %s: %v", name, e.data, err)
			}
			b.Write(d)
		}
	}
	return b.String()
}

// TestStreamRun: ?stream=1 sends the run's id, then its output while it
// runs (redacted), then the same result a plain request gets.
func TestStreamRun(t *testing.T) {
	ts := newTestServer(t, nil)
	code := `import sys, time
print("first", flush=True)
time.sleep(0.8)
print("key AKIAIOSFODNN7EXAMPLE", flush=True)
print("oops", file=sys.stderr, flush=True)
print("no newline at the end", end="")`
	events := ts.stream("/v1/runs?stream=1&cache=0", python(code))
	if len(events) < 3 || events[0].name != "run" || events[len(events)-1].name != "result" {
		t.Fatalf("events %v: want run first and result last", names(events))
	}
	var res api.RunResponse
	if err := json.Unmarshal(events[len(events)-1].data, &res); err != nil {
		t.Fatal(err)
	}
	var started struct{ ID, Status string }
	_ = json.Unmarshal(events[0].data, &started)
	if started.ID == "" || started.ID != res.ID || started.Status != "queued" {
		t.Errorf("run event %s, result id %s", events[0].data, res.ID)
	}
	if res.Status != sandbox.StatusOK {
		t.Fatalf("result %+v", res)
	}
	checkIDs(t, events)
	stdout, stderr := joined(t, events, "stdout"), joined(t, events, "stderr")
	if stdout != string(res.Stdout) || stderr != string(res.Stderr) {
		t.Errorf("streamed stdout %q / stderr %q differ from the result's %q / %q", stdout, stderr, res.Stdout, res.Stderr)
	}
	if strings.Contains(stdout, "AKIA") || !strings.Contains(stdout, "[REDACTED:") {
		t.Errorf("streamed stdout not redacted: %q", stdout)
	}
	// The first line arrived while the program still slept.
	var first time.Time
	for _, e := range events {
		if e.name == "stdout" {
			first = e.at
			break
		}
	}
	if gap := events[len(events)-1].at.Sub(first); gap < 400*time.Millisecond {
		t.Errorf("first output only %v before the result: not streamed while running", gap)
	}
	if rec := ts.record(res.ID); rec.Status != sandbox.StatusOK || string(rec.Stdout) != stdout {
		t.Errorf("record %+v", rec)
	}
	// A cache hit streams its stored output too.
	ts.run("/v1/runs", python("print('cached')"))
	hit := ts.stream("/v1/runs?stream=1", python("print('cached')"))
	if joined(t, hit, "stdout") != "cached\n" || hit[len(hit)-1].name != "result" {
		t.Errorf("cached stream %v", names(hit))
	}

	ts.do("POST", "/v1/runs?stream=1&async=1", python("1")).wantError(t, http.StatusBadRequest, "invalid_request")
	ts.do("POST", "/v1/runs?stream=2", python("1")).wantError(t, http.StatusBadRequest, "invalid_request")
	ts.do("POST", "/v1/runs?stream=1", map[string]any{"language": "cobol"}).wantError(t, http.StatusBadRequest, "invalid_request")
}

// TestStreamCell: a session cell streams like a run, and variables persist
// across streamed and plain cells.
func TestStreamCell(t *testing.T) {
	ts := newTestServer(t, nil)
	r := ts.do("POST", "/v1/sessions", map[string]any{"language": "python"})
	var sess struct{ ID string }
	r.json(t, &sess)
	exec := "/v1/sessions/" + sess.ID + "/exec"
	ts.do("POST", exec, map[string]any{"code": "x = 6"})
	events := ts.stream(exec+"?stream=1", map[string]any{"code": "import time\nprint(x, flush=True)\ntime.sleep(0.5)\nprint(x * 7)\nx * 7"})
	if len(events) == 0 || events[len(events)-1].name != "result" {
		t.Fatalf("events %v", names(events))
	}
	var res sandbox.Result
	_ = json.Unmarshal(events[len(events)-1].data, &res)
	if got := joined(t, events, "stdout"); got != "6\n42\n" || string(res.Stdout) != got || res.Value != "42" {
		t.Errorf("streamed %q, result stdout %q value %q", got, res.Stdout, res.Value)
	}
	for _, e := range events {
		if e.id != "" {
			t.Errorf("a cell's %s event has id %q: a cell cannot be resumed", e.name, e.id)
		}
	}
	ts.do("DELETE", "/v1/sessions/"+sess.ID, nil)
	ts.do("POST", exec+"?stream=1", map[string]any{"code": "1"}).wantError(t, http.StatusGone, "session_closed")
}

// TestFollowRun: GET /v1/runs/{id}/events follows an async run live from
// its first event, for several clients at once; after the run it replays
// the record; another tenant gets 404.
func TestFollowRun(t *testing.T) {
	base := newTestServer(t, nil)
	ts := base.as(base.newKey("alice"))
	code := "import time\nfor i in range(4):\n    print('line', i, flush=True)\n    time.sleep(0.25)"
	r := ts.do("POST", "/v1/runs?async=1&cache=0", python(code))
	var acc struct{ ID string }
	r.json(t, &acc)
	if r.status != http.StatusAccepted || acc.ID == "" {
		t.Fatalf("async: %d %s", r.status, r.body)
	}
	var wg sync.WaitGroup
	got := make([][]event, 2)
	for i := range got {
		wg.Go(func() { got[i] = ts.events("GET", "/v1/runs/"+acc.ID+"/events", nil) })
	}
	wg.Wait()
	want := "line 0\nline 1\nline 2\nline 3\n"
	for i, events := range got {
		if len(events) < 3 || events[0].name != "run" || events[len(events)-1].name != "result" {
			t.Fatalf("follower %d: events %v", i, names(events))
		}
		if out := joined(t, events, "stdout"); out != want {
			t.Errorf("follower %d: stdout %q, want %q", i, out, want)
		}
		checkIDs(t, events)
		var chunks int
		for _, e := range events {
			if e.name == "stdout" {
				chunks++
			}
		}
		if chunks < 2 {
			t.Errorf("follower %d: the output came in %d event(s), not live", i, chunks)
		}
	}
	// After the end: the record, replayed.
	late := ts.events("GET", "/v1/runs/"+acc.ID+"/events", nil)
	var res api.RunResponse
	_ = json.Unmarshal(late[len(late)-1].data, &res)
	if joined(t, late, "stdout") != want || res.Status != sandbox.StatusOK || res.ID != acc.ID {
		t.Errorf("late follower: %v, result %+v", names(late), res)
	}
	checkIDs(t, late)
	base.as(base.newKey("bob")).do("GET", "/v1/runs/"+acc.ID+"/events", nil).wantError(t, http.StatusNotFound, "not_found")
	ts.do("GET", "/v1/runs/nope/events", nil).wantError(t, http.StatusNotFound, "not_found")
}

// checkIDs checks a run's event ids: 1 for the run event, then 1 + the
// output bytes so far after each output event, the result one more.
func checkIDs(t *testing.T, events []event) {
	t.Helper()
	pos := int64(1)
	for i, e := range events {
		switch e.name {
		case "stdout", "stderr":
			var d sandbox.Data
			_ = json.Unmarshal(e.data, &d)
			pos += int64(len(d))
		case "result":
			pos++
		}
		if e.id != strconv.FormatInt(pos, 10) {
			t.Errorf("event %d (%s): id %q, want %d", i, e.name, e.id, pos)
		}
	}
}

func names(events []event) []string {
	var n []string
	for _, e := range events {
		n = append(n, e.name)
	}
	return n
}
