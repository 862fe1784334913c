package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/analyst"
	"github.com/crucible-sandbox/crucible/hint"
	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// rootWith returns a root filesystem whose Python finds modules (as
// package directories in dist-packages), and what hint reads of it.
func rootWith(t *testing.T, modules ...string) *hint.Hinter {
	t.Helper()
	root := t.TempDir()
	for _, m := range modules {
		if err := os.MkdirAll(filepath.Join(root, "usr/lib/python3/dist-packages", m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return hint.New(hint.Config{RootFS: root})
}

// TestSessionImage: sessions, analyses and agent runs that name no image
// go to the first image offered with pandas and numpy, runs to the
// default; GET /v1/images says both. An analysis in an image without
// them is refused before any session starts, as KindUnsuitableImage
// naming "image", with an image that has them or how to build one; an
// image whose contents are unknown is not refused up front.
func TestSessionImage(t *testing.T) {
	bare, data, half := rootWith(t, "json"), rootWith(t, "numpy", "pandas", "matplotlib"), rootWith(t, "numpy")
	csv := []analyst.Dataset{{Name: "sales.csv", Content: []byte("a,b\n1,2\n")}}
	for _, tc := range []struct {
		name        string
		first       service.Contents // the default image's ("host")
		others      []service.Contents
		sessionsIn  string // the session default
		analysis    string // the image an analysis names
		refused     string // a part of the refusal; "" for none up front
		refusedRule string
	}{
		{"host and datascience", bare, []service.Contents{data}, "img1", "", "", ""},
		{"datascience first", data, []service.Contents{bare}, "host", "", "", ""},
		{"host named", bare, []service.Contents{data}, "img1", "host", `the host image has no pandas and numpy, which an analysis needs to load and profile its data: name an image that has them ("image": "img1"`, "numpy and pandas"},
		{"host only", bare, nil, "host", "", "no image this server offers has them: build the data-science image with `crucible image build`", "numpy and pandas"},
		{"numpy is not enough", bare, []service.Contents{half}, "host", "", "crucible image build", "numpy and pandas"},
		{"unknown contents", nil, []service.Contents{data}, "host", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rts := map[string]*fakeRuntime{"host": {}}
			svc := newService(t, rts["host"], func(c *service.Config) {
				c.ImageName, c.Contents = "host", tc.first
				for i, contents := range tc.others {
					name := "img" + string(rune('1'+i))
					rts[name] = &fakeRuntime{}
					c.Images = append(c.Images, service.Image{Name: name, Runtime: rts[name], Contents: contents})
				}
			})
			if got := svc.Images(); got.Default != "host" || got.SessionDefault != tc.sessionsIn {
				t.Errorf("Images() = default %q, session default %q; want host, %q", got.Default, got.SessionDefault, tc.sessionsIn)
			}
			if svc.CanAnalyse() != (tc.refused == "" || tc.analysis != "") {
				t.Errorf("CanAnalyse() = %v", svc.CanAnalyse())
			}
			res, err := svc.Run(ctx, "t", py("x"), service.RunOptions{})
			if err != nil || res.Image != "host" {
				t.Errorf("a run that names no image ran in %q (%v), want host", res.Image, err)
			}
			sess, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{}, service.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := sess.Info().Image; got != tc.sessionsIn || len(rts[tc.sessionsIn].opened) != 1 {
				t.Errorf("a session that names no image opened in %q, want %q", got, tc.sessionsIn)
			}
			_ = sess.Close()

			before := 0
			for _, rt := range rts {
				before += len(rt.opened)
			}
			_, err = svc.CreateAnalysis(ctx, "t", service.AnalysisSpec{Datasets: csv, Image: tc.analysis}, nil)
			var se *service.Error
			refused := errors.As(err, &se) && se.Kind == service.KindUnsuitableImage
			switch {
			case tc.refused == "" && refused:
				t.Errorf("the analysis was refused: %v", err)
			case tc.refused != "" && (!refused || se.Field != "image" || !strings.Contains(se.Message, tc.refused) || !strings.Contains(se.Rule, tc.refusedRule)):
				t.Errorf("the analysis: %v (%+v); want KindUnsuitableImage naming image and saying %q", err, se, tc.refused)
			}
			after := 0
			for _, rt := range rts {
				after += len(rt.opened)
			}
			if tc.refused != "" && after != before {
				t.Errorf("a refused analysis opened %d sessions", after-before)
			}
		})
	}
}
