package service_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// rebuildFixture is a store and a scripted model (FromPrompt: each
// question carries its programs and answer) that services share, as a
// server's processes share its database across a restart.
type rebuildFixture struct {
	st    store.Store
	model llm.Provider
	rt    service.Runtime
}

func newRebuildFixture(t *testing.T) *rebuildFixture {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "crucible.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := llmtest.OpenAI(t, llmtest.Script{Key: providerKey, FromPrompt: true, Codes: []string{"print('unscripted')"}, Answer: "unscripted"})
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: srv.URL + "/v1", APIKey: providerKey})
	if err != nil {
		t.Fatal(err)
	}
	return &rebuildFixture{st: st, model: model, rt: dataScienceRuntime(t)}
}

// service starts a service on the fixture's store: a server process.
func (f *rebuildFixture) service(t *testing.T) *service.Service {
	t.Helper()
	red, err := policy.NewRedactor(policy.DefaultRedactConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := service.Config{Runtime: f.rt, Store: f.st, Redactor: red, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cfg.Agents.Model = f.model
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Shutdown(context.Background()) })
	return svc
}

// script is a question carrying its program and answer.
func script(question, code, answer string) api.QuestionRequest {
	return api.QuestionRequest{Question: question + " [[code]]\n" + code + "\n[[/code]] [[answer]]" + answer + "[[/answer]]"}
}

// askAndWait asks req and returns the question as it ended, with the
// kinds of its events.
func askAndWait(t *testing.T, svc *service.Service, id string, req api.QuestionRequest) (api.AnalysisQuestion, []service.Event) {
	t.Helper()
	q, err := svc.AskAnalysis(context.Background(), "acme", id, req)
	if err != nil {
		t.Fatalf("AskAnalysis: %v", err)
	}
	events := followQuestion(t, svc, "acme", id, q.N, nil)
	got, err := svc.AnalysisQuestion(context.Background(), "acme", id, q.N)
	if err != nil {
		t.Fatalf("AnalysisQuestion %d: %v", q.N, err)
	}
	return got, events
}

// output is the output of q's answer.
func output(t *testing.T, q api.AnalysisQuestion) string {
	t.Helper()
	var ans service.AnalysisAnswer
	if err := json.Unmarshal(q.Answer, &ans); err != nil {
		t.Fatalf("question %d (%s: %s): answer %q: %v", q.N, q.Run.Status, q.Run.Reason, q.Answer, err)
	}
	return strings.TrimSpace(ans.Output)
}

// closeSessionOf closes the session of analysis id, as its idle expiry
// would, and waits until the service no longer holds the analysis.
func closeSessionOf(t *testing.T, svc *service.Service, id string) {
	t.Helper()
	ctx := context.Background()
	a, err := svc.Analysis(ctx, "acme", id)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := svc.Session("acme", a.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, err := svc.Analysis(ctx, "acme", id)
		if err != nil {
			t.Fatalf("the analysis after its session closed: %v; want it read from the store", err)
		}
		if a.SessionID == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the analysis still names session %s 10s after it closed", a.SessionID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rebuilds are the session_rebuilt events of events.
func rebuilds(events []service.Event) []*api.AnalysisRebuild {
	var out []*api.AnalysisRebuild
	for _, e := range events {
		if e.Kind == service.EventSessionRebuilt && e.Agent != nil {
			out = append(out, e.Agent.Rebuild)
		}
	}
	return out
}

// TestAnalysisRebuild drives the reopening of an analysis in real
// sessions of the data-science image: its session closed (as an idle
// expiry closes it) leaves it readable and reopenable, a question then
// rebuilds its state (a variable of an earlier question, a DataFrame
// changed in place, a variable of a cell run in the session directly;
// failed programs are not replayed), concurrent questions rebuild once, a service started
// anew on the same store (a restart) reopens it too; a stored cell that
// fails when replayed ends the question failed naming the cell, with no
// session left open; an analysis whose cells overflowed says it cannot be
// rebuilt; and a deleted analysis is gone from the store.
func TestAnalysisRebuild(t *testing.T) {
	f := newRebuildFixture(t)
	top := t // services outlive the subtest that starts them
	ctx := context.Background()
	svc := f.service(t)
	a, err := svc.CreateAnalysis(ctx, "acme", service.AnalysisSpec{
		Datasets: []service.Dataset{{Name: "points.csv", Content: []byte("x,y\n0,10\n1,20\n2,30\n3,40\n")}}}, nil)
	if err != nil {
		t.Fatalf("CreateAnalysis: %v", err)
	}
	q1, _ := askAndWait(t, svc, a.ID, script("Keep x above 1, double y.", "df2 = df[df.x > 1].copy()\ndf2['y'] = df2.y * 2\nprint(len(df2))", "2 rows."))
	if got := output(t, q1); got != "2" {
		t.Fatalf("question 1 printed %q, want 2", got)
	}
	// A failed program is not replayed: it would fail again.
	q2, _ := askAndWait(t, svc, a.ID, api.QuestionRequest{Question: "Sum y. [[code]]total = int(df2.y.sum()) + undefined_name[[/code]]" +
		" [[code]]total = int(df2.y.sum())\nprint(total)[[/code]] [[answer]]140[[/answer]]"})
	if got := output(t, q2); got != "140" {
		t.Fatalf("question 2 printed %q, want 140", got)
	}

	// A cell a client runs in the analysis's session builds its state too.
	sess, err := svc.Session("acme", a.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := sess.Exec(ctx, sandbox.Cell{Code: "extra = 7"}); err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("a cell in the analysis's session: %v %v", res.Status, err)
	}
	if res, _ := sess.Exec(ctx, sandbox.Cell{Code: "raise ValueError('not kept')"}); res.Status != sandbox.StatusError {
		t.Fatalf("a failing cell ended %s", res.Status)
	}

	t.Run("session closed", func(t *testing.T) {
		closeSessionOf(t, svc, a.ID)
		conv, err := svc.AnalysisQuestions(ctx, "acme", a.ID)
		if err != nil || len(conv) != 2 || string(conv[0].Answer) != string(q1.Answer) {
			t.Fatalf("the conversation from the store: %d questions, %v", len(conv), err)
		}
		const askers = 4
		var wg sync.WaitGroup
		results := make([]error, askers)
		ns := make([]int, askers)
		start := make(chan struct{})
		for i := range askers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				q, err := svc.AskAnalysis(ctx, "acme", a.ID, script("What is total now?", "print(total, len(df2), int(df2.y.max()), extra)", "140"))
				results[i], ns[i] = err, q.N
			}()
		}
		close(start)
		wg.Wait()
		asked := -1
		for i, err := range results {
			switch {
			case err == nil && asked < 0:
				asked = i
			case err != nil && kindOf(err) == service.KindConflict:
			default:
				t.Fatalf("%d questions at once: %v; want one asked and the others refused with a conflict", askers, results)
			}
		}
		if asked < 0 {
			t.Fatalf("%d questions at once: %v; want one asked", askers, results)
		}
		events := followQuestion(t, svc, "acme", a.ID, ns[asked], nil)
		q, err := svc.AnalysisQuestion(ctx, "acme", a.ID, ns[asked])
		if err != nil {
			t.Fatal(err)
		}
		if got := output(t, q); got != "140 2 80 7" {
			t.Errorf("the question after the rebuild printed %q, want 140 2 80 7 (total, df2 and extra rebuilt)", got)
		}
		rb := rebuilds(events)
		if len(rb) != 1 || rb[0].Cells != 3 || rb[0].Datasets != 1 {
			t.Errorf("session_rebuilt events %+v; want one, of 1 dataset and 3 cells (the failed ones not replayed)", rb)
		}
		info, err := svc.Analysis(ctx, "acme", a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if info.RebuiltAt == nil || info.RebuiltCells != 3 || info.SessionID == "" || info.SessionID != rb[0].SessionID {
			t.Errorf("the analysis after the rebuild: rebuilt %v from %d cells, session %q; want 3 cells in %s", info.RebuiltAt, info.RebuiltCells, info.SessionID, rb[0].SessionID)
		}
		if n := len(svc.Sessions("acme")); n != 1 {
			t.Errorf("the tenant holds %d sessions after the rebuild, want 1", n)
		}
	})

	t.Run("restart", func(t *testing.T) {
		if err := svc.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		again := f.service(top)
		info, err := again.Analysis(ctx, "acme", a.ID)
		if err != nil {
			t.Fatalf("the analysis in a new service: %v", err)
		}
		if info.SessionID != "" || info.Questions != 3 || info.RebuiltCells != 3 || info.ProfileText != a.ProfileText {
			t.Errorf("the analysis in a new service: session %q, %d questions, rebuilt from %d cells; want none, 3, 3", info.SessionID, info.Questions, info.RebuiltCells)
		}
		var kinds []service.EventKind
		for _, e := range followQuestion(t, again, "acme", a.ID, 1, nil) {
			kinds = append(kinds, e.Kind)
		}
		if !slices.Contains(kinds, service.EventCode) || !slices.Contains(kinds, service.EventAnswer) || kinds[len(kinds)-1] != service.EventResult {
			t.Errorf("question 1's events after a restart: %v; want its stored events: code, answer, result", kinds)
		}
		if old, err := again.AnalysisQuestion(ctx, "acme", a.ID, 1); err != nil || len(old.Run.Trace) == 0 || string(old.Answer) != string(q1.Answer) {
			t.Errorf("question 1 after a restart: trace %d bytes, answer kept %v (%v); want its trace and answer", len(old.Run.Trace), string(old.Answer) == string(q1.Answer), err)
		}
		q, events := askAndWait(t, again, a.ID, script("And now?", "print(total + 1)", "141"))
		if got := output(t, q); got != "141" || len(rebuilds(events)) != 1 {
			t.Errorf("after a restart, the question printed %q with %d rebuilds; want 141 after one", got, len(rebuilds(events)))
		}
		if q.N != 4 {
			t.Errorf("the question after a restart is numbered %d, want 4", q.N)
		}
		svc = again
	})

	t.Run("replay fails", func(t *testing.T) {
		b, err := svc.CreateAnalysis(ctx, "acme", service.AnalysisSpec{
			Datasets: []service.Dataset{{Name: "t.csv", Content: []byte("v\n1\n")}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		askAndWait(t, svc, b.ID, script("Set k.", "k = 1\nprint(k)", "1"))
		// A cell that succeeded once but fails when replayed (what it read
		// from outside changed): written as the service would have.
		bad := &store.AnalysisQuestion{N: 2, Question: "q", RunID: "agr_x", Run: json.RawMessage(`{"id":"agr_x","status":"answered"}`)}
		if err := f.st.AddAnalysisQuestion(ctx, "acme", b.ID, bad, nil, store.AnalysisCells{Code: []string{"import os\nassert os.path.exists('/tmp/gone'), 'the file is gone'"}}, 50); err != nil {
			t.Fatal(err)
		}
		closeSessionOf(t, svc, b.ID)
		open := len(svc.Sessions("acme"))
		q, events := askAndWait(t, svc, b.ID, script("What is k?", "print(k)", "1"))
		if q.Run.Status != "failed" || !strings.Contains(q.Run.Reason, "replaying cell 2 of 2") || !strings.Contains(q.Run.Reason, "the file is gone") ||
			!strings.Contains(q.Run.Reason, "nothing was rebuilt") {
			t.Errorf("a question whose rebuild fails ended %s: %q; want failed, naming cell 2 of 2 and its error", q.Run.Status, q.Run.Reason)
		}
		if len(rebuilds(events)) != 0 {
			t.Errorf("a failed rebuild published session_rebuilt")
		}
		info, err := svc.Analysis(ctx, "acme", b.ID)
		if err != nil || info.SessionID != "" || info.RebuiltAt != nil {
			t.Errorf("after a failed rebuild the analysis reads session %q, rebuilt %v (%v); want neither", info.SessionID, info.RebuiltAt, err)
		}
		if n := len(svc.Sessions("acme")); n != open {
			t.Errorf("the tenant holds %d sessions after a failed rebuild, %d before: its session was left open", n, open)
		}
		if err := svc.DeleteAnalysis(ctx, "acme", b.ID); err != nil {
			t.Fatalf("delete an analysis without a session: %v", err)
		}
		if _, err := f.st.GetAnalysis(ctx, "acme", b.ID); err != store.ErrNotFound {
			t.Errorf("the deleted analysis is still stored: %v", err)
		}
		if _, err := f.service(top).Analysis(ctx, "acme", b.ID); kindOf(err) != service.KindNotFound {
			t.Errorf("a deleted analysis in a new service: %v, want not found", err)
		}
	})

	t.Run("cells overflowed", func(t *testing.T) {
		c, err := svc.CreateAnalysis(ctx, "acme", service.AnalysisSpec{
			Datasets: []service.Dataset{{Name: "t.csv", Content: []byte("v\n1\n")}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		over := &store.AnalysisQuestion{N: 1, Question: "q", RunID: "agr_y", Run: json.RawMessage(`{}`)}
		if err := f.st.AddAnalysisQuestion(ctx, "acme", c.ID, over, nil, store.AnalysisCells{Overflow: true}, 50); err != nil {
			t.Fatal(err)
		}
		closeSessionOf(t, svc, c.ID)
		q, _ := askAndWait(t, svc, c.ID, script("Anything?", "print(1)", "1"))
		if q.Run.Status != "failed" || !strings.Contains(q.Run.Reason, "more cells than are kept") {
			t.Errorf("an analysis whose cells overflowed: %s %q; want failed, saying so", q.Run.Status, q.Run.Reason)
		}
	})
}
