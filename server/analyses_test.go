package server_test

import (
	"bytes"
	"context"
	"errors"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/llm"
	"github.com/crucible-sandbox/crucible/llm/llmtest"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// form is a multipart/form-data body: parts of [name, filename, content]
// (filename "" for a field).
func form(t testing.TB, parts ...[3]string) (body []byte, contentType string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range parts {
		var err error
		if p[1] != "" {
			w, e := mw.CreateFormFile(p[0], p[1])
			if e == nil {
				_, e = w.Write([]byte(p[2]))
			}
			err = e
		} else {
			err = mw.WriteField(p[0], p[2])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), mw.FormDataContentType()
}

// post sends body with contentType to path.
func (ts *testServer) post(path, contentType string, body []byte) response {
	ts.Helper()
	req, err := http.NewRequest("POST", ts.http.URL+path, bytes.NewReader(body))
	if err != nil {
		ts.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := ts.http.Client().Do(req)
	if err != nil {
		ts.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: out.Bytes()}
}

// TestAnalysesBadInput: the requests refused before any session opens,
// each with its status and the field it names. No root needed.
func TestAnalysesBadInput(t *testing.T) {
	ts := newFakeServer(t, &imageRuntime{name: "default"}, func(c *config) { c.MaxBodyBytes = 1 << 20 })
	noFile, noFileType := form(t, [3]string{"image", "", "datascience"})
	bigField, bigFieldType := form(t, [3]string{"limits", "", `{"memory_bytes": 1` + strings.Repeat(" ", 70<<10) + `}`}, [3]string{"datasets", "a.csv", "a\n1\n"})
	unknown, unknownType := form(t, [3]string{"colour", "", "blue"}, [3]string{"datasets", "a.csv", "a\n1\n"})
	badLimits, badLimitsType := form(t, [3]string{"limits", "", `{"bogus": 1}`}, [3]string{"datasets", "a.csv", "a\n1\n"})
	twice, twiceType := form(t, [3]string{"image", "", "a"}, [3]string{"image", "", "b"}, [3]string{"datasets", "a.csv", "a\n1\n"})
	huge, hugeType := form(t, [3]string{"datasets", "big.csv", strings.Repeat("1,2\n", 300<<10)})
	for _, tc := range []struct {
		name, path, contentType string
		body                    []byte
		status                  int
		field                   string
	}{
		{"multipart without files", "/v1/analyses", noFileType, noFile, 400, "datasets"},
		{"an over-size field part", "/v1/analyses", bigFieldType, bigField, 400, "limits"},
		{"an unknown part", "/v1/analyses", unknownType, unknown, 400, "colour"},
		{"limits with an unknown field", "/v1/analyses", badLimitsType, badLimits, 400, "limits.bogus"},
		{"a field twice", "/v1/analyses", twiceType, twice, 400, "image"},
		{"multipart without a boundary", "/v1/analyses", "multipart/form-data", noFile, 400, "Content-Type"},
		{"a part over the body limit", "/v1/analyses", hugeType, huge, 413, "body"},
		{"a bad session file name", "/v1/analyses", "application/json", []byte(`{"session_id": "ses_x", "files": ["../../etc/passwd"]}`), 400, "files[0]"},
		{"datasets and session files", "/v1/analyses", "application/json", []byte(`{"session_id": "ses_x", "files": ["a.csv"], "datasets": [{"name": "b.csv", "content": "1"}]}`), 400, "datasets"},
		{"no datasets", "/v1/analyses", "application/json", []byte(`{}`), 400, "datasets"},
		{"a repeated dataset name", "/v1/analyses", "application/json", []byte(`{"datasets": [{"name": "a.csv", "content": "1"}, {"name": "a.csv", "content": "2"}]}`), 400, "datasets[1].name"},
		{"a session of no one", "/v1/analyses", "application/json", []byte(`{"session_id": "ses_x", "files": ["a.csv"]}`), 404, ""},
		{"a question about no analysis", "/v1/analyses/ana_0000000000000000/questions", "application/json", []byte(`{"question": "why?"}`), 501, "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ts.post(tc.path, tc.contentType, tc.body)
			var e apiError
			r.json(t, &e)
			if r.status != tc.status || e.Error.Field != tc.field {
				t.Errorf("%d %+v, want %d naming %q", r.status, e.Error, tc.status, tc.field)
			}
		})
	}
	for _, tc := range []struct {
		method, path string
		status       int
		field        string
	}{
		{"GET", "/v1/analyses/ana_0000000000000000", 404, "id"},
		{"DELETE", "/v1/analyses/ana_0000000000000000", 404, "id"},
		{"GET", "/v1/analyses/ana_0000000000000000/questions", 404, "id"},
		{"GET", "/v1/analyses/ana_0000000000000000/questions/x", 400, "n"},
		{"GET", "/v1/analyses/ana_0000000000000000/questions/0/events", 400, "n"},
		{"GET", "/v1/analyses/ana_0000000000000000/files/a.png?question=-1", 400, "question"},
		{"GET", "/v1/analyses/ana_0000000000000000/files/a.png", 404, "id"},
		{"GET", "/v1/analyses?cursor=not-a-cursor", 400, "cursor"},
		{"GET", "/v1/analyses?limit=0", 400, "limit"},
	} {
		r := ts.do(tc.method, tc.path, nil)
		var e apiError
		r.json(t, &e)
		if r.status != tc.status || e.Error.Field != tc.field {
			t.Errorf("%s %s: %d %+v, want %d naming %q", tc.method, tc.path, r.status, e.Error, tc.status, tc.field)
		}
	}
	if r := ts.do("GET", "/v1/analyses", nil); r.status != 200 || !strings.Contains(string(r.body), `"analyses":[]`) {
		t.Errorf("GET /v1/analyses: %d %s", r.status, r.body)
	}
}

// dataScienceServer starts a server on the data-science image (it needs
// root and the image) whose model is scripted (llmtest: a local server
// speaking the OpenAI wire format, since no model can run here), with API
// keys for the tenants acme and other; it returns a client of each.
func dataScienceServer(t *testing.T, answer string, codes ...string) (acme, other *client.Client, ts *testServer) {
	t.Helper()
	testenv.Root(t)
	img := testenv.Image(t, "datascience")
	rt, err := linux.New(linux.Options{RootFS: img.RootFS, Env: img.Manifest.Env, TmpSeed: img.Manifest.TmpSeed, ImageDigest: img.Digest})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	srv := llmtest.OpenAI(t, llmtest.Script{Key: providerKey, Codes: codes, Answer: answer})
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "scripted", BaseURL: srv.URL + "/v1", APIKey: providerKey})
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	cfg := config{}
	cfg.Runtime, cfg.Store, cfg.Agents.Model = rt, st, model
	s, svc := newServer(t, cfg)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	ts = &testServer{T: t, srv: s, svc: svc, http: hs, store: st}
	clientOf := func(tenant string) *client.Client {
		c, err := client.New(hs.URL, client.WithAPIKey(ts.newKey(tenant)))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return clientOf("acme"), clientOf("other"), ts
}

// TestAnalysisAPI drives an analysis through the API and the SDK in a
// real session of the data-science image: an upload (multipart, streamed
// by the SDK) and its profile; a question waiting for approval while a
// second question is refused (409), approved, its answer with a chart,
// downloaded as untrusted content; its events replayed after its end,
// output included; the conversation; another tenant gets
// 404 for all of it; a deleted analysis is 410.
func TestAnalysisAPI(t *testing.T) {
	acme, other, ts := dataScienceServer(t, "the mean is 2",
		"import matplotlib.pyplot as plt\nprint('mean', df['x'].mean())\nplt.figure()\ndf['x'].plot()\nplt.title('x by row')")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := acme.UploadAnalysis(ctx, []client.Upload{{Name: "numbers.csv", Content: strings.NewReader("x,y\n1,a\n3,b\n")}}, "", sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.ProfileText, "numbers") || len(a.Profile) == 0 || a.Datasets[0] != "numbers.csv" {
		t.Fatalf("created %+v", a)
	}
	var events []string
	q, err := acme.Ask(ctx, a.ID, api.QuestionRequest{Question: "What is the mean of x? Plot it.", TextMode: true, Approve: true}, func(e client.AgentEvent) {
		events = append(events, e.Kind)
		if e.Kind != "approval" {
			return
		}
		var ae *client.APIError
		if _, err := acme.Ask(ctx, a.ID, api.QuestionRequest{Question: "meanwhile?"}, nil); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
			t.Errorf("a question while one runs: %v, want 409", err)
		}
		if _, err := acme.ApproveQuestion(ctx, a.ID, 1, e.Approval.ID, true, "fine"); err != nil {
			t.Errorf("ApproveQuestion: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("events: %s", strings.Join(events, " "))
	if q.N != 1 || q.Run.Status != "answered" || q.Run.Answer != "the mean is 2" || !strings.Contains(string(q.Answer), `"title":"x by row"`) || !strings.Contains(string(q.Answer), "mean 2.0") {
		t.Fatalf("answered %+v, %s", q.Run, q.Answer)
	}
	conv, err := acme.Conversation(ctx, a.ID)
	if err != nil || len(conv) != 1 || conv[0].Answer == nil {
		t.Fatalf("Conversation: %v, %+v", err, conv)
	}
	var name string
	if i := strings.Index(string(q.Answer), `"charts":[{"name":"`); i >= 0 {
		rest := string(q.Answer)[i+len(`"charts":[{"name":"`):]
		name = rest[:strings.IndexByte(rest, '"')]
	}
	png, err := acme.AnalysisFile(ctx, a.ID, name, 1)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("AnalysisFile(%q): %v, %d bytes", name, err, len(png))
	}
	r := ts.as(ts.newKey("acme")).do("GET", "/v1/analyses/"+a.ID+"/files/"+name, nil)
	if r.header.Get("Content-Security-Policy") != "sandbox" || r.header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.HasPrefix(r.header.Get("Content-Disposition"), "attachment") || r.header.Get("Content-Type") != "image/png" {
		t.Errorf("download headers: %v", r.header)
	}
	// A client that follows the question after its end gets its output
	// in the replay, then the answer and the result.
	replay := ts.as(ts.newKey("acme")).do("GET", "/v1/analyses/"+a.ID+"/questions/1/events", nil)
	if body := string(replay.body); replay.status != http.StatusOK || !strings.Contains(body, "event: stdout\ndata: \"mean 2.0\\n\"") ||
		!strings.Contains(body, "event: answer") || !strings.Contains(body, "event: result") {
		t.Errorf("the events replayed after the question's end: %d\n%s", replay.status, body)
	}

	for what, err := range map[string]error{
		"GetAnalysis":  func() error { _, err := other.GetAnalysis(ctx, a.ID); return err }(),
		"Conversation": func() error { _, err := other.Conversation(ctx, a.ID); return err }(),
		"GetQuestion":  func() error { _, err := other.GetQuestion(ctx, a.ID, 1); return err }(),
		"AnalysisFile": func() error { _, err := other.AnalysisFile(ctx, a.ID, name, 0); return err }(),
		"Ask":          func() error { _, err := other.Ask(ctx, a.ID, api.QuestionRequest{Question: "q"}, nil); return err }(),
		"Delete":       other.DeleteAnalysis(ctx, a.ID),
	} {
		if !client.IsNotFound(err) {
			t.Errorf("another tenant's %s: %v, want 404", what, err)
		}
	}
	if list, err := other.ListAnalyses(ctx); err != nil || len(list) != 0 {
		t.Errorf("another tenant's list: %v, %+v", err, list)
	}
	if list, err := acme.ListAnalyses(ctx); err != nil || len(list) != 1 || list[0].Profile != nil || list[0].Questions != 1 {
		t.Errorf("the list: %v, %+v", err, list)
	}
	if err := acme.DeleteAnalysis(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	var ae *client.APIError
	if _, err := acme.GetAnalysis(ctx, a.ID); !errors.As(err, &ae) || ae.Status != http.StatusGone {
		t.Errorf("a deleted analysis: %v, want 410", err)
	}
}
