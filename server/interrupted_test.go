package server_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// fakeRuntime answers every run with ok and has no sessions. It counts the
// runs it gets, and the invalid ones among them.
type fakeRuntime struct{ runs, invalid atomic.Int64 }

func (f *fakeRuntime) Run(ctx context.Context, req sandbox.Request) (sandbox.Result, error) {
	f.runs.Add(1)
	if err := req.Validate(); err != nil {
		f.invalid.Add(1)
		return sandbox.Result{}, err
	}
	return sandbox.Result{Status: sandbox.StatusOK, Language: req.Language, Stdout: sandbox.Data{}, Stderr: sandbox.Data{}}, nil
}

func (*fakeRuntime) NewSession(context.Context, sandbox.SessionRequest) (sandbox.Session, error) {
	return nil, errors.New("fake runtime: no sessions")
}

func (*fakeRuntime) Session(string) (sandbox.Session, bool) { return nil, false }

func TestMarkInterruptedAtNew(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	rec := &api.Run{Tenant: "default", Language: sandbox.Python, Code: "1", Status: api.StatusRunning, ExitCode: -1}
	if err := st.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	newServer(t, config{Config: service.Config{Runtime: &fakeRuntime{}, Store: st}})
	got, err := st.Get(ctx, "default", rec.ID)
	if err != nil || got.Status != api.StatusInterrupted {
		t.Fatalf("after New: %+v, %v; want interrupted", got, err)
	}
}
