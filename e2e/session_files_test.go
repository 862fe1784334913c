package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestRemoteSessionFIFOUpload proves, through a real `crucible serve`, that
// a cell cannot hang the server with a FIFO in its working directory: PUT
// and GET of the FIFO answer with a 400 naming the file (the upload used to
// wait for a reader for ever, holding the session), the session still runs
// cells, DELETE answers, and the server then stops on SIGTERM (the cleanup
// fails the test unless it exits 0).
func TestRemoteSessionFIFOUpload(t *testing.T) {
	srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sess, err := srv.Client.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	if res, err := sess.Exec(ctx, sandbox.Cell{Code: "import os\nos.mkfifo('data.csv')"}); err != nil || res.Status != sandbox.StatusOK {
		t.Fatalf("making the FIFO: %v, status %s, stderr %q", err, res.Status, res.Stderr)
	}
	path := "/v1/sessions/" + sess.ID() + "/files/data.csv"
	r := srv.do(t, http.MethodPut, path, "application/octet-stream", strings.NewReader("a,b\n1,2\n"))
	checkAPIError(t, "PUT onto a FIFO", r, http.StatusBadRequest, "invalid_request", "name")
	if !strings.Contains(string(r.Body), "data.csv") {
		t.Errorf("PUT onto a FIFO: the error does not name the file: %s", clip(r.Body))
	}
	r = srv.do(t, http.MethodGet, path, "", nil)
	checkAPIError(t, "GET of a FIFO", r, http.StatusBadRequest, "invalid_request", "name")
	if res, err := sess.Exec(ctx, sandbox.Cell{Code: "1 + 1"}); err != nil || res.Value != "2" {
		t.Errorf("a cell after the refused upload: %v, value %q, want 2", err, res.Value)
	}
	if r := srv.do(t, http.MethodDelete, "/v1/sessions/"+sess.ID(), "", nil); r.Status/100 != 2 {
		t.Errorf("DELETE of the session: status %d, body %s", r.Status, clip(r.Body))
	}
}
