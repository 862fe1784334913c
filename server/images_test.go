package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestImageField: a request may name the image it runs in; the server's
// one image is "default" unless named, GET /v1/images lists it, and an
// image the server does not offer is refused naming "image" and listing
// those it does.
func TestImageField(t *testing.T) {
	ts := newFakeServer(t, &imageRuntime{name: "default"}, nil)
	rr := ts.run("/v1/runs", map[string]any{"language": "python", "code": "1", "image": "default"})
	if rec := ts.record(rr.ID); rec.Status != "ok" {
		t.Errorf("run in image default: %+v", rec)
	}
	e := ts.do("POST", "/v1/runs", map[string]any{"code": "1", "image": "nope"}).wantError(t, http.StatusBadRequest, "invalid_request")
	if e.Error.Field != "image" || !strings.Contains(e.Error.Rule, "default") || !strings.Contains(e.Error.Rule, `"nope"`) {
		t.Errorf("unknown image: %+v; want field image and a rule listing default", e.Error)
	}
	e = ts.do("POST", "/v1/sessions", map[string]any{"image": "nope"}).wantError(t, http.StatusBadRequest, "invalid_request")
	if e.Error.Field != "image" {
		t.Errorf("session in an unknown image: %+v; want field image", e.Error)
	}
	r := ts.do("GET", "/v1/images", nil)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"name":"default"`) {
		t.Errorf("GET /v1/images: %d %s", r.status, r.body)
	}
}

// TestImagesPerRequest: a server offering two images runs each request
// in the image it names, on that image's runtime; the answer, the record
// and the session say which, and GET /v1/images lists both, the default
// first.
func TestImagesPerRequest(t *testing.T) {
	host, ds := &imageRuntime{name: "host"}, &imageRuntime{name: "datascience", digest: "sha256:ds"}
	ts := newFakeServer(t, host, func(c *config) {
		c.ImageName = "host"
		c.Images = []service.Image{{Name: "datascience", Digest: ds.digest, Runtime: ds}}
	})
	var images api.ImageList
	ts.do("GET", "/v1/images", nil).json(t, &images)
	if images.Default != "host" || len(images.Images) != 2 || images.Images[0].Name != "host" ||
		images.Images[1] != (api.Image{Name: "datascience", Digest: "sha256:ds"}) {
		t.Errorf("GET /v1/images: %+v", images)
	}
	for _, tc := range []struct{ image, want, digest string }{
		{"", "host", ""}, {"host", "host", ""}, {"datascience", "datascience", "sha256:ds"},
	} {
		rr := ts.run("/v1/runs", map[string]any{"code": "1", "image": tc.image})
		rec := ts.record(rr.ID)
		if string(rr.Stdout) != tc.want || rr.Image != tc.want || rr.ImageDigest != tc.digest || rec.Image != tc.want || rec.ImageDigest != tc.digest {
			t.Errorf("image %q: ran in %q, answer %q %q, record %q %q; want %q %q",
				tc.image, rr.Stdout, rr.Image, rr.ImageDigest, rec.Image, rec.ImageDigest, tc.want, tc.digest)
		}
	}
	e := ts.do("POST", "/v1/runs", map[string]any{"code": "1", "image": "pandas"}).wantError(t, http.StatusBadRequest, "invalid_request")
	if e.Error.Field != "image" || !strings.Contains(e.Error.Rule, "host, datascience") {
		t.Errorf("unknown image: %+v", e.Error)
	}

	var info api.SessionInfo
	r := ts.do("POST", "/v1/sessions", map[string]any{"image": "datascience"})
	r.json(t, &info)
	if r.status != http.StatusCreated || info.Image != "datascience" || info.ImageDigest != "sha256:ds" || ds.sessions.Load() != 1 {
		t.Fatalf("session in datascience: %d %s", r.status, r.body)
	}
	var res sandbox.Result
	ts.do("POST", "/v1/sessions/"+info.ID+"/exec", map[string]any{"code": "1"}).json(t, &res)
	if string(res.Stdout) != "datascience:1" {
		t.Errorf("cell ran in %q, want datascience", res.Stdout)
	}
}
