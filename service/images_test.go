package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestImages: a run or a session names one of the images the service
// offers and runs on that image's runtime; its record and answer name the
// image and carry its digest; the cache tells images apart; an image not
// offered is refused naming "image" and listing those offered.
func TestImages(t *testing.T) {
	ctx := context.Background()
	host, ds := &fakeRuntime{}, &fakeRuntime{}
	svc := newService(t, host, func(c *service.Config) {
		c.ImageName = "host"
		c.Images = []service.Image{{Name: "datascience", Digest: "sha256:ds", Runtime: ds}}
	})
	if got := svc.Images(); got.Default != "host" || len(got.Images) != 2 || got.Images[1].Name != "datascience" || got.Images[1].Digest != "sha256:ds" {
		t.Errorf("Images() = %+v", got)
	}
	for _, tc := range []struct {
		image, want, digest string
		rt                  *fakeRuntime
	}{
		{"", "host", "", host},
		{"host", "host", "", host},
		{"datascience", "datascience", "sha256:ds", ds},
	} {
		before := tc.rt.runs.Load()
		req := py("x")
		req.Image = tc.image
		res, err := svc.Run(ctx, "t", req, service.RunOptions{})
		if err != nil {
			t.Fatalf("image %q: %v", tc.image, err)
		}
		rec, err := svc.Get(ctx, "t", res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tc.rt.runs.Load() != before+1 || res.Image != tc.want || rec.Image != tc.want || rec.ImageDigest != tc.digest {
			t.Errorf("image %q: ran on the right runtime %v, answer %q, record %q %q; want %q %q",
				tc.image, tc.rt.runs.Load() == before+1, res.Image, rec.Image, rec.ImageDigest, tc.want, tc.digest)
		}
	}

	// The same code, cached in one image, runs anew in the other.
	cached := func(image string) bool {
		req := py("cached")
		req.Image = image
		res, err := svc.Run(ctx, "t", req, service.RunOptions{Cache: true})
		if err != nil {
			t.Fatal(err)
		}
		return res.CacheHit
	}
	if cached("host") || !cached("host") || cached("datascience") || !cached("datascience") {
		t.Error("the cache does not tell the images apart")
	}

	req := py("x")
	req.Image = "nope"
	_, err := svc.Run(ctx, "t", req, service.RunOptions{})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || ie.Field != "image" || !strings.Contains(ie.Rule, "host, datascience") {
		t.Errorf("unknown image: %v; want an input error naming image and listing host, datascience", err)
	}

	sess, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{Image: "datascience"}, service.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info := sess.Info(); info.Image != "datascience" || info.ImageDigest != "sha256:ds" || len(ds.opened) != 1 {
		t.Errorf("session in datascience: %+v, opened on its runtime: %d", info, len(ds.opened))
	}
	if _, err := sess.Exec(ctx, sandbox.Cell{Code: "1"}); err != nil {
		t.Fatal(err)
	}
	runs, _, err := svc.List(ctx, "t", storeFilterSession(sess.ID()))
	if err != nil || len(runs) != 1 || runs[0].Image != "datascience" || runs[0].ImageDigest != "sha256:ds" {
		t.Errorf("the cell's record: %+v, %v; want image datascience", runs, err)
	}
}

// TestImagesConfig: the images offered must have valid, distinct names
// and a runtime each.
func TestImagesConfig(t *testing.T) {
	rt := &fakeRuntime{}
	for _, tc := range []struct {
		name   string
		adjust func(*service.Config)
		err    string // "" for none
	}{
		{"one image", nil, ""},
		{"two", func(c *service.Config) { c.Images = []service.Image{{Name: "ds", Runtime: rt}} }, ""},
		{"duplicate", func(c *service.Config) { c.Images = []service.Image{{Name: "default", Runtime: rt}} }, `image "default" is offered twice`},
		{"bad name", func(c *service.Config) { c.ImageName = "Data Science" }, `image name "Data Science" must match`},
		{"no runtime", func(c *service.Config) { c.Images = []service.Image{{Name: "ds"}} }, "Config.Images[0] (ds) has no Runtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			red, err := policy.NewRedactor(policy.RedactConfig{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := service.Config{Runtime: rt, Redactor: red}
			if tc.adjust != nil {
				tc.adjust(&cfg)
			}
			_, err = service.New(cfg)
			if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("New: %v; want an error saying %q", err, tc.err)
			}
		})
	}
}
