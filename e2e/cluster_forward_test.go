package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// startForwardNode starts a cluster node offering the data-science
// image, with the scripted model of config.
func startForwardNode(t *testing.T, id, db, nats string, config []string) *server {
	t.Helper()
	return startServer(t, id, db, append([]string{"--cluster", nats, "--node-id", id, "--image", "datascience", "--warm", "0"}, config...)...)
}

// switchingTransport sends every request to the server target names at
// the time: an MCP client that initialized on one node goes on through
// another.
type switchingTransport struct{ target atomic.Pointer[string] }

func (s *switchingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Host = strings.TrimPrefix(*s.target.Load(), "http://")
	r.Host = r.URL.Host
	return http.DefaultTransport.RoundTrip(r)
}

// TestClusterForward: two real nodes (crucible serve --cluster, one
// Postgres, Debian's nats-server, a scripted model). What node A holds
// is used through node B: an analysis created on A answers a question
// with a chart through B; an agent run started on A is followed, approved
// and its events resumed by Last-Event-ID through B; an E2B sandbox
// created on A by E2B's SDK runs its code through B; an MCP session
// initialized on A calls its tools through B; GET /v1/sessions through B
// lists A's session. Then A is killed with SIGKILL: through B, the
// session answers 410, the analysis is rebuilt on B (session_rebuilt,
// its state back) and answers, and an agent run A left waiting for an
// approval reads interrupted, saying node-a died, and its stream resumed
// through B ends with that result; the answered question's events replay
// through B from the store.
func TestClusterForward(t *testing.T) {
	testenv.Root(t)
	testenv.Image(t, "datascience")
	const key = "sk-scripted-model-key-cluster-forward"
	model := llmtest.OpenAI(t, llmtest.Script{Key: key, FromPrompt: true,
		Codes: []string{"print('this task has no script')"}, Answer: "No script."})
	t.Setenv("CRUCIBLE_TEST_MODEL_KEY", key)
	config := configFlag(t, fmt.Sprintf(`{"model": {"provider": "openai", "model": "scripted", "base_url": %q, "api_key_env": "CRUCIBLE_TEST_MODEL_KEY"}}`, model.URL+"/v1"))
	db := startPostgres(t)
	nats, _ := startNATSServer(t)
	a := startForwardNode(t, "node-a", db, nats, config)
	b := startForwardNode(t, "node-b", db, nats, config)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	// An analysis created on A, asked through B.
	csv := []byte("x,y\n0,10\n1,20\n2,30\n3,40\n4,50\n")
	an, err := a.Client.CreateAnalysis(ctx, api.AnalysisRequest{Image: "datascience", Datasets: []api.AnalysisDataset{{Name: "points.csv", Content: csv}}})
	if err != nil {
		t.Fatalf("create the analysis on node A: %v", err)
	}
	q1, err := b.Client.Ask(ctx, an.ID, api.QuestionRequest{Question: "Plot y against x where x > 1. " +
		"[[code]]\ndf2 = df[df.x > 1]\nimport matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot(df2.x, df2.y)\nprint(len(df2), 'rows')\n[[/code]]" +
		" [[answer]]3 rows.[[/answer]]"}, nil)
	if err != nil {
		t.Fatalf("ask through node B: %v", err)
	}
	if ans := decodeAnswer(t, "question 1", q1); !answered(q1) || len(ans.Charts) != 1 || !strings.Contains(ans.Output, "3 rows") {
		t.Fatalf("question 1 through node B ended %s (%s), output %q, %d charts; want an answer with a chart", q1.Run.Status, q1.Run.Reason, ans.Output, len(ans.Charts))
	} else if png, err := b.Client.AnalysisFile(ctx, an.ID, ans.Charts[0].Name, 1); err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("the chart through node B: %d bytes, %v", len(png), err)
	}
	if got, err := b.Client.GetAnalysis(ctx, an.ID); err != nil || got.SessionID != an.SessionID || got.RebuiltAt != nil {
		t.Errorf("the analysis through node B: session %q rebuilt %v (%v); want node A's session %s, not rebuilt", got.SessionID, got.RebuiltAt, err, an.SessionID)
	}

	// An agent run started on A, approved and resumed through B.
	run := startAgentRun(t, a, `{"task": "Print a greeting. [[code]]print('hello')[[/code]] [[answer]]hello[[/answer]]", "text_mode": true, "approve": true}`)
	var approval api.AgentApproval
	_, before := agentEvents(t, b, run, "", func(e sseEvent) bool { return e.name == "approval" })
	last := before[len(before)-1]
	if last.name != "approval" || json.Unmarshal([]byte(last.data), &approval) != nil || approval.ID == "" {
		t.Fatalf("no approval in the run's stream through node B: %v", before)
	}
	if _, err := b.Client.Approve(ctx, run, approval.ID, true, "fine"); err != nil {
		t.Fatalf("approve through node B: %v", err)
	}
	status, after := agentEvents(t, b, run, last.id, nil)
	if status != 200 || len(after) == 0 || after[0].id == last.id || after[len(after)-1].name != "result" || !strings.Contains(after[len(after)-1].data, `"answered"`) {
		t.Fatalf("the events after %s through node B: %d %v; want those after the approval, to the result (answered)", last.id, status, after)
	}
	waiting := startAgentRun(t, a, `{"task": "Wait for me. [[code]]print('never')[[/code]] [[answer]]never[[/answer]]", "text_mode": true, "approve": true}`)
	_, waited := agentEvents(t, b, waiting, "", func(e sseEvent) bool { return e.name == "approval" })

	// An E2B sandbox created on A by E2B's SDK (the control plane is
	// never forwarded: A holds it), its data plane through B, which holds
	// nothing of it (without forwarding it answers 502, not running).
	clients := testenv.E2BClients(t)
	// No key exists: on loopback every caller is the default tenant, and
	// the SDK's key need only have E2B's shape.
	e2bKey := "e2b_" + strings.Repeat("0", 64)
	e := &e2bServer{server: a, Clients: clients}
	var sbx struct {
		SandboxID, Read string
		Text, Error     *string
	}
	env := append(e.e2bEnv(e2bKey), "E2B_SANDBOX_URL="+b.URL+"/e2b")
	e.runScript(t, "tests/e2e/cluster_forward.mjs", env, 3*time.Minute, &sbx)
	if sbx.Text == nil || *sbx.Text != "42" || sbx.Error != nil || sbx.Read != "41" {
		t.Errorf("the E2B sandbox through node B: %+v; want x + 1 = 42 and the file read back", sbx)
	}

	// An MCP session initialized on A, its tools called through B.
	sw := &switchingTransport{}
	sw.target.Store(&a.URL)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: a.URL + "/mcp", HTTPClient: &http.Client{Transport: sw}}, nil)
	if err != nil {
		t.Fatalf("initialize MCP on node A: %v", err)
	}
	defer cs.Close()
	sw.target.Store(&b.URL)
	mcpCall := func(tool string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("MCP %s through node B: %+v, %v", tool, res, err)
		}
		out, _ := json.Marshal(res.StructuredContent)
		return string(out)
	}
	var created struct{ ID string }
	_ = json.Unmarshal([]byte(mcpCall("session_create", map[string]any{"image": "datascience"})), &created)
	mcpCall("session_exec", map[string]any{"session": created.ID, "code": "x = 41"})
	if out := mcpCall("session_exec", map[string]any{"session": created.ID, "code": "print(x + 1)"}); !strings.Contains(out, "42") {
		t.Errorf("MCP session_exec through node B: %s; want 42", out)
	}

	// A session on A, listed through B.
	sess, err := a.Client.NewSession(ctx, sandbox.SessionRequest{Image: "datascience"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := b.Client.ListSessions(ctx)
	if err != nil || !slices.ContainsFunc(list, func(s api.SessionInfo) bool { return s.ID == sess.ID() }) {
		t.Errorf("GET /v1/sessions through node B: %d sessions, %v; want node A's %s among them", len(list), err, sess.ID())
	}

	// A dies.
	a.Kill9()
	killed := time.Now()
	var apiErr *client.APIError
	for {
		_, err := b.Client.AttachSession(sess.ID()).Exec(ctx, sandbox.Cell{Code: "1"})
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusGone {
			break
		}
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("the session of node A through node B %v after the kill: %v; want 410", time.Since(killed), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("node A's session answered 410 through node B %v after the kill", time.Since(killed).Round(time.Millisecond))

	var rebuild *api.AnalysisRebuild
	var kinds []string
	asked := time.Now()
	q2, err := b.Client.Ask(ctx, an.ID, api.QuestionRequest{Question: "How many rows in df2? [[code]]print(len(df2), int(df2.y.sum()))[[/code]] [[answer]]3, 120.[[/answer]]"},
		func(e client.AgentEvent) {
			kinds = append(kinds, e.Kind)
			if e.Rebuild != nil {
				rebuild = e.Rebuild
			}
		})
	if err != nil {
		t.Fatalf("ask through node B after node A died: %v", err)
	}
	if ans := decodeAnswer(t, "question 2", q2); !answered(q2) || strings.TrimSpace(ans.Output) != "3 120" || rebuild == nil || rebuild.Cells != 1 {
		t.Fatalf("question 2 through node B after node A died: %s (%s), output %q, events %v, rebuild %+v; want df2 rebuilt on B (3 120)",
			q2.Run.Status, q2.Run.Reason, ans.Output, kinds, rebuild)
	}
	if got, err := b.Client.GetAnalysis(ctx, an.ID); err != nil || got.RebuiltAt == nil || got.SessionID != rebuild.SessionID {
		t.Errorf("the analysis after its rebuild on node B: rebuilt %v, session %q (%v); want rebuilt in %s", got.RebuiltAt, got.SessionID, err, rebuild.SessionID)
	}
	t.Logf("through node B after node A died: the analysis taken over and its session rebuilt (1 dataset, 1 cell) in %d ms; the question that rebuilt it answered in %v",
		rebuild.DurationMS, time.Since(asked).Round(time.Millisecond))
	if !strings.Contains(b.Logs(), "took over an analysis of a dead node") {
		t.Errorf("node B's log does not say it took the analysis over")
	}

	got, _ := getAgentRun(t, b, waiting)
	if got.Status != api.AgentInterrupted || !strings.Contains(got.Reason, "node-a died") {
		t.Errorf("the run node A left waiting, through node B: %s %q; want interrupted, its node node-a died", got.Status, got.Reason)
	}
	// Its stream, resumed through B from the approval: from the store now,
	// to the result that says why it ended.
	status, resumed := agentEvents(t, b, waiting, waited[len(waited)-1].id, nil)
	if status != 200 || len(resumed) != 1 || resumed[0].name != "result" || !strings.Contains(resumed[0].data, "node-a died") {
		t.Errorf("the waiting run's events after %s through node B once node A died: %d %v; want its result, interrupted", waited[len(waited)-1].id, status, resumed)
	}
	// The first question's events, through B from the store.
	var replayed []string
	if q, err := b.Client.FollowQuestion(ctx, an.ID, 1, func(e client.AgentEvent) { replayed = append(replayed, e.Kind) }); err != nil ||
		!bytes.Equal(q.Answer, q1.Answer) || !slices.Contains(replayed, "code") {
		t.Errorf("question 1's events through node B after node A died: %v (%v); want its stored events, code and answer", replayed, err)
	}
	if _, err := b.Client.Approve(ctx, waiting, "apr_x", true, ""); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict && apiErr.Status != http.StatusNotFound {
		t.Errorf("an approval of the interrupted run through node B: %v; want it refused", err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "session_exec", Arguments: map[string]any{"session": created.ID, "code": "1"}}); err == nil {
		t.Errorf("the MCP session of the dead node still answers through node B")
	}
}
