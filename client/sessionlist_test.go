package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestListAndGetSessions: the zero SessionRequest opens a Python session;
// ListSessions finds it, GetSession and Session.Info describe it, a
// handle attached from its listed ID keeps its state, and once closed it
// is neither listed nor described.
func TestListAndGetSessions(t *testing.T) {
	c := newClient(t, nil)
	ctx := context.Background()
	s, err := c.NewSession(ctx, sandbox.SessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(ctx, sandbox.Cell{Code: "x = 41"}); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListSessions(ctx)
	if err != nil || len(list) != 1 || list[0].ID != s.ID() || list[0].Language != sandbox.Python || list[0].Cells != 1 {
		t.Fatalf("ListSessions: %+v, %v; want the one session, python, 1 cell", list, err)
	}
	again := c.AttachSession(list[0].ID)
	if res, err := again.Exec(ctx, sandbox.Cell{Code: "x + 1"}); err != nil || res.Value != "42" {
		t.Fatalf("reattached session: %+v, %v; want 42", res, err)
	}
	info, err := again.Info(ctx)
	if err != nil || info.ID != s.ID() || info.Cells != 2 || info.Image != "default" || info.Limits != (sandbox.Limits{}).WithSessionDefaults() {
		t.Fatalf("Info: %+v, %v; want 2 cells in image default with the sessions' default limits", info, err)
	}
	if _, err := c.GetSession(ctx, "ses_nope"); !client.IsNotFound(err) {
		t.Errorf("GetSession(unknown): %v, want not found", err)
	}
	if images, err := c.Images(ctx); err != nil || images.Default != "default" || len(images.Images) != 1 {
		t.Errorf("Images: %+v, %v", images, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSession(ctx, s.ID()); !errors.Is(err, sandbox.ErrSessionClosed) {
		t.Errorf("GetSession(closed): %v, want session closed", err)
	}
	if list, err := c.ListSessions(ctx); err != nil || len(list) != 0 {
		t.Errorf("ListSessions after Close: %+v, %v; want none", list, err)
	}
}
