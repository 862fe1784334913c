package e2e

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/internal/testenv"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestImagesPerRequest: `crucible serve --image datascience --image host`
// offers both images, datascience the default. `import pandas` works in
// datascience and fails in host, for runs and sessions alike; each record
// and session names its image; a language alias and an empty session
// request work through the real server; an image not offered is refused
// naming the field.
func TestImagesPerRequest(t *testing.T) {
	crucibleBinary(t)
	testenv.Image(t, "datascience")
	srv := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"), "--image", "datascience", "--image", "host")
	c, ctx := srv.Client, context.Background()

	images, err := c.Images(ctx)
	if err != nil || images.Default != "datascience" || len(images.Images) != 2 ||
		images.Images[1].Name != "host" || !strings.HasPrefix(images.Images[0].Digest, "sha256:") {
		t.Fatalf("Images: %+v, %v; want datascience (with its digest) then host", images, err)
	}

	const code = "import pandas; print('pandas', pandas.__version__ != '')"
	for _, tc := range []struct {
		image, want string
		ok          bool
	}{{"", "datascience", true}, {"datascience", "datascience", true}, {"host", "host", false}} {
		res, err := c.CreateRun(ctx, sandbox.Request{Language: "py", Code: code, Image: tc.image})
		if err != nil {
			t.Fatalf("image %q: %v", tc.image, err)
		}
		rec, err := c.GetRun(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Image != tc.want || res.Image != tc.want || rec.Language != sandbox.Python {
			t.Errorf("image %q: answer %q, record %q %q; want %q and python", tc.image, res.Image, rec.Image, rec.Language, tc.want)
		}
		if tc.want == "datascience" && rec.ImageDigest != images.Images[0].Digest || tc.want == "host" && rec.ImageDigest != "" {
			t.Errorf("image %q: record digest %q", tc.image, rec.ImageDigest)
		}
		switch {
		case tc.ok && (res.Status != sandbox.StatusOK || string(res.Stdout) != "pandas True\n"):
			t.Errorf("image %q: %s %q %q, want pandas imported", tc.image, res.Status, res.Stdout, res.Stderr)
		case !tc.ok && (res.Status != sandbox.StatusError || res.Error == nil || res.Error.Type != "ModuleNotFoundError"):
			t.Errorf("image %q: %s %+v, want ModuleNotFoundError", tc.image, res.Status, res.Error)
		}
	}
	r := srv.do(t, "POST", "/v1/runs", "application/json", strings.NewReader(`{"code": "1", "image": "ubuntu"}`))
	checkAPIError(t, "an image not offered", r, http.StatusBadRequest, "invalid_request", "image")
	if !strings.Contains(string(r.Body), "datascience, host") {
		t.Errorf("an image not offered: %s; want the images offered listed", r.Body)
	}

	// A session with no body at all is Python in the default image.
	r = srv.do(t, "POST", "/v1/sessions", "", nil)
	if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), `"image":"datascience"`) {
		t.Fatalf("POST /v1/sessions without a body: %d %s", r.Status, r.Body)
	}
	host, err := c.NewSession(ctx, sandbox.SessionRequest{Image: "host"})
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := c.ListSessions(ctx)
	if err != nil || len(sessions) != 2 || sessions[0].ID != host.ID() || sessions[0].Image != "host" || sessions[1].Image != "datascience" {
		t.Fatalf("ListSessions: %+v, %v; want the host session then the datascience one", sessions, err)
	}
	for _, s := range sessions {
		res, err := c.AttachSession(s.ID).Exec(ctx, sandbox.Cell{Code: "import pandas"})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Status == sandbox.StatusOK; got != (s.Image == "datascience") {
			t.Errorf("session in %s: import pandas %s %+v", s.Image, res.Status, res.Error)
		}
		if err := c.AttachSession(s.ID).Close(); err != nil {
			t.Error(err)
		}
	}
}
