package service_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
	"github.com/crucible-sandbox/crucible/store"
)

// leakedSecret is the configured secret a hostile program puts into every
// field it controls.
const leakedSecret = "s3cr3t-Crucible-7f3a9c"

// pngWithSecret is a binary artifact with the secret in a text chunk, as a
// plotting library writes a title into a PNG's metadata.
var pngWithSecret = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x19tEXtTitle\x00"), leakedSecret+"\x00\xff\xfe"...)

// leakyResult is a result whose every program-made field holds the secret.
func leakyResult() sandbox.Result {
	text := []byte("key=" + leakedSecret + "\n")
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	return sandbox.Result{
		Status: sandbox.StatusError, Reason: "exited after printing " + leakedSecret,
		Stdout: sandbox.Data(leakedSecret + "\n"), Stderr: sandbox.Data("warn " + leakedSecret),
		Error: &sandbox.ExecError{Type: "Err_" + leakedSecret, Message: leakedSecret, Traceback: "at " + leakedSecret, Hint: "hint " + leakedSecret},
		Value: "'" + leakedSecret + "'", ValueHTML: "<b>" + leakedSecret + "</b>",
		Artifacts: []sandbox.Artifact{
			{Name: "out/" + leakedSecret + ".txt", MIME: "text/plain; charset=utf-8", Content: text, Size: int64(len(text)), SHA256: sum(text)},
			{Name: "chart.png", MIME: "image/png", Content: pngWithSecret, Size: int64(len(pngWithSecret)), SHA256: sum(pngWithSecret)},
		},
		Language: sandbox.Python,
	}
}

// leakyRuntime answers every run and cell with leakyResult; code "fail"
// is a platform failure whose error holds the secret.
type leakyRuntime struct{}

func (leakyRuntime) Run(_ context.Context, req sandbox.Request) (sandbox.Result, error) {
	if req.Code == "fail" {
		return sandbox.Result{}, errors.New("runtime broke on " + leakedSecret)
	}
	return leakyResult(), nil
}

func (leakyRuntime) NewSession(context.Context, sandbox.SessionRequest) (sandbox.Session, error) {
	return leakySession{}, nil
}

// leakySession's files have the secret in their names and contents.
type leakySession struct{}

func (leakySession) ID() string { return "ses_leaky" }
func (leakySession) Exec(_ context.Context, c sandbox.Cell) (sandbox.Result, error) {
	if c.Code == "fail" {
		return sandbox.Result{}, errors.New("kernel broke on " + leakedSecret)
	}
	return leakyResult(), nil
}
func (leakySession) WriteFile(context.Context, string, []byte) error { return nil }
func (leakySession) ReadFile(_ context.Context, name string) ([]byte, error) {
	if name == "chart.png" {
		return pngWithSecret, nil
	}
	return []byte("token: " + leakedSecret + "\n"), nil
}
func (leakySession) ListFiles(context.Context) ([]sandbox.FileInfo, error) {
	return []sandbox.FileInfo{{Name: leakedSecret + ".csv", Size: 3}, {Name: "dir-" + leakedSecret, Dir: true}}, nil
}
func (leakySession) Close() error { return nil }

// TestSecretLeaksNowhere is the hostile test of redaction: a program puts
// a configured secret into every field it controls (output, error type,
// reason, value, artifact names, text and binary artifact contents, file
// names and contents of its session), and its code holds it too. The
// secret must come back in no answer of any path, and be written nowhere
// in the store's files on disk.
func TestSecretLeaksNowhere(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	red, err := policy.NewRedactor(policy.RedactConfig{Secrets: []string{leakedSecret}, Patterns: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(service.Config{Runtime: leakyRuntime{}, Store: st, Redactor: red,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	code := "print('" + leakedSecret + "')"
	run, err := svc.Run(ctx, "t", py(code), service.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failed, err := svc.Run(ctx, "t", py("fail"), service.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{Language: sandbox.Python}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agentView, err := svc.SessionRuntime("t", "agent_1").NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		// seen returns everything the caller of one path is given.
		seen func(t *testing.T) any
	}{
		{"run answer", func(*testing.T) any { return run }},
		{"failed run answer", func(*testing.T) any { return failed }},
		{"run record", func(t *testing.T) any { return must(svc.Get(ctx, "t", run.ID)) }},
		{"failed run record", func(t *testing.T) any { return must(svc.Get(ctx, "t", failed.ID)) }},
		{"run list", func(t *testing.T) any {
			runs, _, err := svc.List(ctx, "t", store.Filter{})
			return orFail(t, runs, err)
		}},
		{"stored artifacts", func(t *testing.T) any { return storedArtifacts(t, svc, run) }},
		{"events of a started run", func(t *testing.T) any { return followed(t, svc, code) }},
		{"session cell", func(t *testing.T) any { return must(ss.Exec(ctx, sandbox.Cell{Code: code})) }},
		{"failed session cell's record", func(t *testing.T) any {
			_, err := ss.Exec(ctx, sandbox.Cell{Code: "fail"})
			runs, _, lerr := svc.List(ctx, "t", store.Filter{SessionID: ss.ID(), Status: sandbox.StatusInternal})
			if lerr != nil || len(runs) != 1 {
				t.Fatalf("records of the failed cell: %v, %v", runs, lerr)
			}
			return []any{runs, errText(err)}
		}},
		{"session file list", func(t *testing.T) any { return must(ss.ListFiles(ctx)) }},
		{"session text file", func(t *testing.T) any {
			b, err := ss.ReadFile(ctx, "notes.txt")
			if err != nil || !bytes.Contains(b, []byte("token: [REDACTED:secret]")) {
				t.Errorf("ReadFile(notes.txt) = %q, %v; want the secret replaced", b, err)
			}
			return string(b)
		}},
		{"session binary file", func(t *testing.T) any { return binaryRead(t, ss.ReadFile) }},
		{"agent's file list", func(t *testing.T) any { return must(agentView.ListFiles(ctx)) }},
		{"agent's binary file", func(t *testing.T) any { return binaryRead(t, agentView.ReadFile) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.seen(t))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(leakedSecret)) {
				t.Errorf("the secret leaked: %s", b)
			}
		})
	}

	// From the host's side: no file of the store holds the secret.
	_ = ss.Close()
	_ = svc.Shutdown(ctx)
	_ = st.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "runs.db*"))
	if len(files) == 0 {
		t.Fatal("no store file to check")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte(leakedSecret)); i >= 0 {
			t.Errorf("store file %s holds the secret at byte %d: %q", filepath.Base(f), i, b[max(0, i-40):i+len(leakedSecret)])
		}
	}
}

// storedArtifacts downloads every stored artifact of run, checking that
// each one's digest matches its content, and returns what was served.
func storedArtifacts(t *testing.T, svc *service.Service, run any) []any {
	var resp struct {
		ID        string
		Artifacts []sandbox.Artifact
	}
	b, _ := json.Marshal(run)
	_ = json.Unmarshal(b, &resp)
	var seen []any
	for _, a := range resp.Artifacts {
		meta, content, err := svc.Artifact(context.Background(), "t", resp.ID, a.Name)
		if a.ContentOmitted {
			if err == nil {
				t.Errorf("artifact %s: omitted from the answer but stored: %q", a.Name, content)
			}
			continue
		}
		if err != nil {
			t.Fatalf("artifact %s: %v", a.Name, err)
		}
		if sum := sha256.Sum256(content); meta.SHA256 != hex.EncodeToString(sum[:]) || meta.SHA256 != a.SHA256 || meta.Size != int64(len(content)) {
			t.Errorf("artifact %s: served %d bytes, digest %s; stored %+v, answered %s", a.Name, len(content), hex.EncodeToString(sum[:]), meta, a.SHA256)
		}
		seen = append(seen, meta, string(content))
	}
	return seen
}

// followed starts a run of code and returns every event it gave.
func followed(t *testing.T, svc *service.Service, code string) []service.Event {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acc, err := svc.Start(ctx, "t", py(code), service.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var events []service.Event
	if err := svc.Follow(ctx, "t", acc.ID, func(e service.Event) bool { events = append(events, e); return true }); err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 || events[len(events)-1].Kind != service.EventResult {
		t.Fatalf("events %+v end without a result", events)
	}
	return events
}

// binaryRead reads the session's binary file that holds the secret: it
// must be withheld, not altered. What comes back is returned to be
// checked.
func binaryRead(t *testing.T, read func(context.Context, string) ([]byte, error)) []any {
	b, err := read(context.Background(), "chart.png")
	if kindOf(err) != service.KindWithheld || b != nil {
		t.Errorf("ReadFile(chart.png) = %q, %v; want it withheld", b, err)
	}
	return []any{string(b), errText(err)}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// must returns v, or panics on err: a path that fails cannot be checked.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// orFail returns v, failing t on err.
func orFail[T any](t *testing.T, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestReplayKeepsWithheld proves a finished run followed from its record
// gives its artifacts as the live run did: an artifact withheld for
// holding a secret still says why.
func TestReplayKeepsWithheld(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	red, err := policy.NewRedactor(policy.RedactConfig{Secrets: []string{leakedSecret}})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.New(service.Config{Runtime: leakyRuntime{}, Store: st, Redactor: red,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	run, err := svc.Run(ctx, "t", py("print(1)"), service.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withheld := map[string]string{}
	for _, a := range run.Artifacts {
		if a.Withheld != "" {
			withheld[a.Name] = a.Withheld
		}
	}
	if len(withheld) == 0 {
		t.Fatal("the run withheld no artifact: the test shows nothing")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if rec, err := svc.Get(ctx, "t", run.ID); err == nil && rec.Status != "running" && rec.Status != "queued" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run's record was not finished in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var replayed *api.RunResponse
	if err := svc.Follow(ctx, "t", run.ID, func(e service.Event) bool {
		if e.Kind == service.EventResult {
			replayed = e.Result
		}
		return true
	}); err != nil || replayed == nil {
		t.Fatalf("Follow of the finished run: %v, result %v", err, replayed)
	}
	for _, a := range replayed.Artifacts {
		if want, ok := withheld[a.Name]; ok && a.Withheld != want {
			t.Errorf("replayed artifact %q: withheld %q, want %q", a.Name, a.Withheld, want)
		}
	}
}
