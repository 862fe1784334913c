package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
)

// sseEvent is one Server-Sent Event as a client reads it.
type sseEvent struct {
	id, name, data string
}

func (e sseEvent) String() string { return e.id + " " + e.name + " " + e.data }

// agentEvents reads the events of agent run id from srv, after the one
// lastID names ("" from the first), until the stream ends or stop
// returns true for an event (then it closes the stream); it returns the
// HTTP status and the events.
func agentEvents(t *testing.T, srv *server, id, lastID string, stop func(sseEvent) bool) (int, []sseEvent) {
	t.Helper()
	req, err := http.NewRequest("GET", srv.URL+"/v1/agent-runs/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("GET the events of %s: %v", id, err)
	}
	defer resp.Body.Close()
	var events []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.name == "" {
				continue // a retry: or a comment
			}
			events = append(events, cur)
			if stop != nil && stop(cur) {
				return resp.StatusCode, events
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the events of %s: %v", id, err)
	}
	return resp.StatusCode, events
}

// startAgentRun starts an agent run on srv and returns its ID.
func startAgentRun(t *testing.T, srv *server, body string) string {
	t.Helper()
	r := srv.do(t, "POST", "/v1/agent-runs", "application/json", strings.NewReader(body))
	var run api.AgentRun
	if r.Status != http.StatusAccepted || json.Unmarshal(r.Body, &run) != nil || run.ID == "" {
		t.Fatalf("POST /v1/agent-runs: %d %s", r.Status, clip(r.Body))
	}
	return run.ID
}

func getAgentRun(t *testing.T, srv *server, id string) (api.AgentRun, string) {
	t.Helper()
	r := srv.do(t, "GET", "/v1/agent-runs/"+id, "", nil)
	var run api.AgentRun
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &run) != nil {
		t.Fatalf("GET /v1/agent-runs/%s: %d %s", id, r.Status, clip(r.Body))
	}
	return run, string(r.Body)
}

// TestRestartAgentRuns: agent runs outlive their server. A real
// `crucible serve` with a --db file and a scripted model runs one agent
// run to its end and leaves another waiting for an approval; it is
// killed with SIGKILL and a new server starts on the same file. The
// ended run reads as it did (answer, trace), its stream replays with
// the same events and IDs and resumes with Last-Event-ID from its
// middle; the waiting run reads interrupted, its reason naming the
// approval, its stream ending with a result that says so, and its
// approval is refused with a 409.
func TestRestartAgentRuns(t *testing.T) {
	crucibleBinary(t)
	const key = "sk-scripted-model-for-the-restart"
	model := llmtest.OpenAI(t, llmtest.Script{Key: key, FromPrompt: true,
		Codes: []string{"print('this task scripts no program')"}, Answer: "this task scripts no answer"})
	t.Setenv("CRUCIBLE_TEST_MODEL_KEY", key)
	db := filepath.Join(t.TempDir(), "runs.db")
	config := configFlag(t, fmt.Sprintf(`{"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"}}`, model.URL+"/v1"))
	first := startServer(t, "server 1", db, config...)

	done := startAgentRun(t, first, `{"task": "Add 2 and 3. [[code]]print(2 + 3)[[/code]] [[answer]]2 + 3 = 5[[/answer]]", "text_mode": true}`)
	_, live := agentEvents(t, first, done, "", nil)
	if n := len(live); n < 3 || live[0].name != "agent_run" || live[n-1].name != "result" {
		t.Fatalf("the run's stream: %v", live)
	}
	ended, endedJSON := getAgentRun(t, first, done)
	if ended.Status != "answered" || ended.Answer != "2 + 3 = 5" || len(ended.Trace) == 0 {
		t.Fatalf("the run ended as %s", clip([]byte(endedJSON)))
	}
	_, replay := agentEvents(t, first, done, "", nil) // as an ended run's stream replays

	waiting := startAgentRun(t, first, `{"task": "Print a greeting. [[code]]print('hello')[[/code]] [[answer]]hello[[/answer]]", "text_mode": true, "approve": true}`)
	var approval api.AgentApproval
	_, before := agentEvents(t, first, waiting, "", func(e sseEvent) bool { return e.name == "approval" })
	if last := before[len(before)-1]; last.name != "approval" || json.Unmarshal([]byte(last.data), &approval) != nil || approval.ID == "" {
		t.Fatalf("no approval in the waiting run's stream: %v", before)
	}
	if run, _ := getAgentRun(t, first, waiting); run.Status != api.AgentAwaitingApproval {
		t.Fatalf("the waiting run is %s, want awaiting_approval", run.Status)
	}

	first.Kill9()
	second := startServer(t, "server 2", db, config...)

	t.Run("the ended run", func(t *testing.T) {
		if _, got := getAgentRun(t, second, done); got != endedJSON {
			t.Errorf("after the restart GET answers\n%s\nbefore it answered\n%s", clip([]byte(got)), clip([]byte(endedJSON)))
		}
		status, got := agentEvents(t, second, done, "", nil)
		if status != http.StatusOK || !sameEvents(got, replay) {
			t.Errorf("after the restart the stream (%d) is\n%s\nbefore it was\n%s", status, listEvents(got), listEvents(replay))
		}
		mid := len(replay) / 2
		if _, tail := agentEvents(t, second, done, replay[mid].id, nil); !sameEvents(tail, replay[mid+1:]) {
			t.Errorf("resumed after %s: \n%s\nwant\n%s", replay[mid].id, listEvents(tail), listEvents(replay[mid+1:]))
		}
		if status, _ := agentEvents(t, second, done, replay[len(replay)-1].id, nil); status != http.StatusNoContent {
			t.Errorf("after the result: %d, want 204", status)
		}
	})

	t.Run("the interrupted run", func(t *testing.T) {
		run, body := getAgentRun(t, second, waiting)
		if run.Status != api.AgentInterrupted || !strings.Contains(run.Reason, approval.ID) || run.FinishedAt == nil || run.PendingApproval != nil {
			t.Errorf("after the restart the waiting run is %s; want interrupted, its reason naming %s", clip([]byte(body)), approval.ID)
		}
		r := second.do(t, "POST", "/v1/agent-runs/"+waiting+"/approvals/"+approval.ID, "application/json", strings.NewReader(`{"approve": true}`))
		checkAPIError(t, "approving the interrupted run's approval", r, http.StatusConflict, api.CodeConflict, "approval_id")
		if !strings.Contains(string(r.Body), "interrupted") {
			t.Errorf("the refusal does not say the run was interrupted: %s", r.Body)
		}
		_, events := agentEvents(t, second, waiting, "", nil)
		names := make([]string, len(events))
		for i, e := range events {
			names[i] = e.name
		}
		if n := len(events); n < 3 || names[0] != "agent_run" || !strings.Contains(strings.Join(names, " "), "approval") ||
			names[n-1] != "result" || !strings.Contains(events[n-1].data, `"status":"interrupted"`) {
			t.Errorf("the interrupted run's stream:\n%s\nwant agent_run ... approval ... result (interrupted)", listEvents(events))
		}
		// Resumed after the approval, as the client that saw it would.
		if _, tail := agentEvents(t, second, waiting, before[len(before)-1].id, nil); len(tail) == 0 || tail[len(tail)-1].name != "result" {
			t.Errorf("resumed after the approval: %s, want the result", listEvents(tail))
		}
	})

	t.Run("the list", func(t *testing.T) {
		r := second.do(t, "GET", "/v1/agent-runs?limit=1", "", nil)
		var page api.AgentRunList
		if r.Status != http.StatusOK || json.Unmarshal(r.Body, &page) != nil || len(page.AgentRuns) != 1 || page.AgentRuns[0].ID != waiting || page.Next == "" {
			t.Fatalf("GET /v1/agent-runs?limit=1: %d %s; want the waiting run and a next page", r.Status, clip(r.Body))
		}
		r = second.do(t, "GET", "/v1/agent-runs?limit=1&cursor="+page.Next, "", nil)
		if json.Unmarshal(r.Body, &page) != nil || len(page.AgentRuns) != 1 || page.AgentRuns[0].ID != done || page.AgentRuns[0].Trace != nil {
			t.Errorf("the next page: %d %s; want the ended run, without its trace", r.Status, clip(r.Body))
		}
	})
}

// sameEvents reports whether a and b are the same events: IDs, names
// and data.
func sameEvents(a, b []sseEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func listEvents(events []sseEvent) string {
	var b strings.Builder
	for _, e := range events {
		line := e.String()
		if len(line) > 200 {
			line = line[:200] + "..."
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
