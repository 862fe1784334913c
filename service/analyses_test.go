package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// dataScienceRuntime returns a native runtime in the data-science image,
// closed when tb ends; it needs root and the image.
func dataScienceRuntime(tb testing.TB) *linux.Runtime {
	tb.Helper()
	testenv.Root(tb)
	img := testenv.Image(tb, "datascience")
	rt, err := linux.New(linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest})
	if err != nil {
		tb.Fatalf("linux.New: %v", err)
	}
	tb.Cleanup(func() { _ = rt.Close() })
	return rt
}

// analysisService is a service on the data-science image whose model is
// scripted (llmtest: no model can run here) to send codes in turn and
// answer with answer, and whose redaction hides secret.
func analysisService(t *testing.T, answer string, codes ...string) *service.Service {
	t.Helper()
	rt := dataScienceRuntime(t)
	return newService(t, rt, func(c *service.Config) {
		rc := policy.DefaultRedactConfig()
		rc.Secrets = []string{secret}
		red, err := policy.NewRedactor(rc)
		if err != nil {
			t.Fatal(err)
		}
		c.Redactor, c.Agents.Model = red, scriptedModel(t, answer, codes...)
	})
}

// followQuestion returns the events of question n of tenant's analysis
// id, from the first, until it ends or each returns false.
func followQuestion(t *testing.T, svc *service.Service, tenant, id string, n int, each func(service.Event) bool) []service.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	events, err := svc.AnalysisQuestionEvents(ctx, tenant, id, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	var all []service.Event
	for e := range events {
		all = append(all, e)
		if each != nil && !each(e) {
			break
		}
	}
	return all
}

// TestAnalysisQuestions drives an analysis through the service in a real
// session of the data-science image, with a scripted model: the profile
// (redacted), a question whose code prints and draws a chart (its events
// in order, its output streamed redacted, its answer as data with the
// chart's title, the chart downloaded, the cells recorded under the
// question's run), a follow-up that uses the first question's variable,
// its output replayed once it ended, a question waiting for approval while another is refused (409), then
// refused; another tenant sees nothing, and a deleted analysis is gone.
func TestAnalysisQuestions(t *testing.T) {
	ctx := context.Background()
	svc := analysisService(t, "the mean charge is 200",
		"m = df['charges'].mean()\nprint('mean', m, '"+secret+"')\nimport matplotlib.pyplot as plt\nplt.figure()\ndf['charges'].plot()\nplt.title('Charges over rows')",
		"print('again', m * 2)",
		"print('never runs')")
	csv := "charges,region,note\n100,north,plain\n300,south," + secret + "\n"
	a, err := svc.CreateAnalysis(ctx, "acme", service.AnalysisSpec{Datasets: []analyst.Dataset{{Name: "insurance.csv", Content: []byte(csv)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(a.ID, "ana_") || a.SessionID == "" || len(a.Datasets) != 1 || !strings.Contains(a.ProfileText, "charges") {
		t.Fatalf("created %+v", a)
	}
	var p analyst.Profile
	if err := json.Unmarshal(a.Profile, &p); err != nil || len(p.Tables) != 1 || p.Tables[0].Rows != 2 {
		t.Fatalf("profile %s: %v", a.Profile, err)
	}
	if strings.Contains(string(a.Profile), secret) || strings.Contains(a.ProfileText, secret) {
		t.Errorf("the profile holds the secret:\n%s\n%s", a.Profile, a.ProfileText)
	}

	q, err := svc.AskAnalysis(ctx, "acme", a.ID, api.QuestionRequest{Question: "What is the mean charge? Plot it.", TextMode: true})
	if err != nil {
		t.Fatal(err)
	}
	if q.N != 1 || q.Run.Status != api.AgentRunning || q.Run.Task != "What is the mean charge? Plot it." {
		t.Fatalf("asked %+v", q)
	}
	events := followQuestion(t, svc, "acme", a.ID, 1, nil)
	for _, k := range []service.EventKind{service.EventAgentRun, service.EventStep, service.EventCode, service.EventStdout, service.EventExecution, service.EventAnswer, service.EventResult} {
		if !strings.Contains(" "+kinds(events)+" ", " "+string(k)+" ") {
			t.Errorf("no %s event in %s", k, kinds(events))
		}
	}
	var stdout string
	var last int64
	for _, e := range events {
		if e.ID <= last {
			t.Errorf("event %s has id %d after %d", e.Kind, e.ID, last)
		}
		last = e.ID
		if e.Kind == service.EventStdout {
			stdout += string(e.Output)
		}
	}
	if !strings.Contains(stdout, "mean 200.0 [REDACTED") {
		t.Errorf("streamed stdout %q, want the mean and the secret redacted", stdout)
	}
	got, err := svc.AnalysisQuestion(ctx, "acme", a.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	var ans analyst.Answer
	if err := json.Unmarshal(got.Answer, &ans); err != nil {
		t.Fatalf("answer %s: %v", got.Answer, err)
	}
	if got.Run.Status != "answered" || ans.Text != "the mean charge is 200" || len(ans.Charts) != 1 || ans.Charts[0].Title != "Charges over rows" || ans.Charts[0].Content != nil {
		t.Fatalf("question 1: run %s, answer %s", got.Run.Status, got.Answer)
	}
	for _, hidden := range []string{secret, providerKey} {
		if strings.Contains(string(got.Answer), hidden) || strings.Contains(string(got.Run.Trace), hidden) {
			t.Errorf("the answer or the trace holds %q", hidden)
		}
	}
	chart, err := svc.AnalysisFile(ctx, "acme", a.ID, ans.Charts[0].Name, 0)
	if err != nil || !strings.HasPrefix(string(chart.Content), "\x89PNG") {
		t.Errorf("AnalysisFile(%s): %v, %d bytes", ans.Charts[0].Name, err, len(chart.Content))
	}
	if _, err := svc.AnalysisFile(ctx, "acme", a.ID, "nope.png", 0); kindOf(err) != service.KindNotFound {
		t.Errorf("an unknown file: %v, want KindNotFound", err)
	}
	recs, _, err := svc.List(ctx, "acme", store.Filter{AgentRun: q.Run.ID})
	if err != nil || len(recs) == 0 || recs[0].SessionID != a.SessionID {
		t.Errorf("records of question 1: %v, %d", err, len(recs))
	}

	if _, err := svc.AskAnalysis(ctx, "acme", a.ID, api.QuestionRequest{Question: "And twice that?", TextMode: true}); err != nil {
		t.Fatal(err)
	}
	followQuestion(t, svc, "acme", a.ID, 2, nil)
	second, err := svc.AnalysisQuestion(ctx, "acme", a.ID, 2)
	if err != nil || second.Run.Status != "answered" || !strings.Contains(string(second.Answer), "again 400.0") {
		t.Fatalf("the follow-up: %v, %s %s", err, second.Run.Status, second.Answer)
	}
	// Followed after its end (a page reopened), the question's events
	// still hold what its program printed, not only how it ended.
	var replayed string
	for _, e := range followQuestion(t, svc, "acme", a.ID, 2, nil) {
		if e.Kind == service.EventStdout {
			replayed += string(e.Output)
		}
	}
	if replayed != "again 400.0\n" {
		t.Errorf("question 2's stdout replayed after its end: %q, want %q", replayed, "again 400.0\n")
	}

	if _, err := svc.AskAnalysis(ctx, "acme", a.ID, api.QuestionRequest{Question: "Print it", TextMode: true, Approve: true}); err != nil {
		t.Fatal(err)
	}
	followQuestion(t, svc, "acme", a.ID, 3, func(e service.Event) bool {
		if e.Kind != service.EventApproval {
			return true
		}
		if _, err := svc.AskAnalysis(ctx, "acme", a.ID, api.QuestionRequest{Question: "meanwhile?"}); kindOf(err) != service.KindConflict {
			t.Errorf("a question while one waits: %v, want KindConflict", err)
		}
		if _, err := svc.DecideQuestionApproval(ctx, "acme", a.ID, 3, e.Agent.Approval.ID, false, "not now"); err != nil {
			t.Errorf("refuse: %v", err)
		}
		return true
	})
	third, err := svc.AnalysisQuestion(ctx, "acme", a.ID, 3)
	if err != nil || third.Run.Status != "denied" {
		t.Errorf("the refused question: %v, %+v", err, third.Run)
	}
	conv, err := svc.AnalysisQuestions(ctx, "acme", a.ID)
	if err != nil || len(conv) != 3 || conv[0].Answer == nil {
		t.Errorf("conversation: %v, %d questions", err, len(conv))
	}

	for _, err := range []error{
		func() error { _, err := svc.Analysis(ctx, "other", a.ID); return err }(),
		func() error { _, err := svc.AnalysisQuestion(ctx, "other", a.ID, 1); return err }(),
		func() error { _, err := svc.AnalysisFile(ctx, "other", a.ID, ans.Charts[0].Name, 0); return err }(),
		svc.DeleteAnalysis(ctx, "other", a.ID),
	} {
		if kindOf(err) != service.KindNotFound {
			t.Errorf("another tenant: %v, want KindNotFound", err)
		}
	}
	if err := svc.DeleteAnalysis(ctx, "acme", a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Analysis(ctx, "acme", a.ID); kindOf(err) != service.KindSessionClosed {
		t.Errorf("a deleted analysis: %v, want KindSessionClosed", err)
	}
	if list, _, _ := svc.Analyses(ctx, "acme", 0, ""); len(list) != 0 {
		t.Errorf("Analyses after the delete: %+v", list)
	}
}

// TestAnalysisFromSessionFiles creates analyses from the files of a
// session, and refuses bad names, missing files and mixed sources,
// naming the field.
func TestAnalysisFromSessionFiles(t *testing.T) {
	ctx := context.Background()
	svc := analysisService(t, "unused", "print(1)")
	ss, err := svc.OpenSession(ctx, "acme", sandbox.SessionRequest{Files: []sandbox.File{
		{Name: "in/sales.csv", Content: sandbox.Data("a,b\n1,2\n3,4\n")}}}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	for _, tc := range []struct {
		name  string
		spec  service.AnalysisSpec
		field string
		kind  service.Kind
	}{
		{"a name leaving the directory", service.AnalysisSpec{SessionID: ss.ID(), Files: []string{"../etc/passwd"}}, "files[0]", 0},
		{"a missing file", service.AnalysisSpec{SessionID: ss.ID(), Files: []string{"in/sales.csv", "nope.csv"}}, "files[1]", service.KindNotFound},
		{"no file", service.AnalysisSpec{SessionID: ss.ID()}, "files", 0},
		{"files without a session", service.AnalysisSpec{Files: []string{"a.csv"}}, "session_id", 0},
		{"both sources", service.AnalysisSpec{SessionID: ss.ID(), Files: []string{"in/sales.csv"}, Datasets: []analyst.Dataset{{Name: "x.csv"}}}, "datasets", 0},
		{"another tenant's session", service.AnalysisSpec{SessionID: ss.ID(), Files: []string{"in/sales.csv"}}, "", service.KindNotFound},
		{"no dataset", service.AnalysisSpec{}, "datasets", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := "acme"
			if tc.name == "another tenant's session" {
				tenant = "other"
			}
			_, err := svc.CreateAnalysis(ctx, tenant, tc.spec, nil)
			var ie *sandbox.InputError
			var se *service.Error
			switch {
			case tc.kind != 0 && kindOf(err) != tc.kind:
				t.Errorf("err %v, want kind %v", err, tc.kind)
			case tc.kind != 0 && tc.field != "" && (!errors.As(err, &se) || se.Field != tc.field):
				t.Errorf("err %v, want field %s", err, tc.field)
			case tc.kind == 0 && (!errors.As(err, &ie) || ie.Field != tc.field):
				t.Errorf("err %v, want an input error naming %s", err, tc.field)
			}
		})
	}
	// A misspelt file is named, with the session's files nearest it.
	_, err = svc.CreateAnalysis(ctx, "acme", service.AnalysisSpec{SessionID: ss.ID(), Files: []string{"in/salse.csv"}}, nil)
	var se *service.Error
	if !errors.As(err, &se) || se.Kind != service.KindNotFound || se.Field != "files[0]" ||
		se.Message != fmt.Sprintf(`session %s has no file "in/salse.csv" (did you mean "in/sales.csv"?)`, ss.ID()) ||
		se.Rule != `must name a file of the session (did you mean "in/sales.csv"?)` {
		t.Errorf("a misspelt file: %#v, want it named with the file nearest it", err)
	}
	a, err := svc.CreateAnalysis(ctx, "acme", service.AnalysisSpec{SessionID: ss.ID(), Files: []string{"in/sales.csv"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Datasets) != 1 || a.Datasets[0] != "sales.csv" || !strings.Contains(a.ProfileText, "sales") {
		t.Errorf("from the session's file: %+v", a)
	}
}

// TestAnalysisLimitsTooLow: limits under which the session cannot even
// import numpy and pandas (numpy's math library starts a thread per CPU,
// which one process refuses; 30 MB of memory) are the request's fault:
// an input error naming limits, never a platform failure, and no session
// is left open.
func TestAnalysisLimitsTooLow(t *testing.T) {
	ctx := context.Background()
	svc := analysisService(t, "unused", "print(1)")
	csv := []analyst.Dataset{{Name: "sales.csv", Content: []byte("a,b\n1,2\n")}}
	for _, lim := range []sandbox.Limits{{Processes: 1}, {MemoryBytes: 30_000_000}} {
		_, err := svc.CreateAnalysis(ctx, "acme", service.AnalysisSpec{Datasets: csv, Limits: lim}, nil)
		var ie *sandbox.InputError
		if !errors.As(err, &ie) || ie.Field != "limits" || !strings.Contains(ie.Rule, "import numpy and pandas") {
			t.Errorf("limits %+v: %v; want an input error naming limits", lim, err)
		}
	}
	if n := len(svc.Sessions("acme")); n != 0 {
		t.Errorf("%d sessions left open", n)
	}
}
