package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestLacks: an image whose runtime lacks sessions or network allowlists
// (service.Lacks) has a request that needs one refused before its runtime
// sees it, KindUnsuitableImage naming the field and carrying the reason;
// another image of the same service, and requests that need neither, are
// served as usual.
func TestLacks(t *testing.T) {
	ctx := context.Background()
	lacking, full := &fakeRuntime{}, &fakeRuntime{}
	const sessionsWhy, networkWhy = "the docker runtime has no sessions yet", "the docker runtime's containers have no network yet"
	svc := newService(t, lacking, func(c *service.Config) {
		c.ImageName = "docker-img"
		c.Lacks = service.Lacks{Sessions: sessionsWhy, Network: networkWhy}
		c.Images = []service.Image{{Name: "native-img", Runtime: full}}
		allow := true
		c.TenantDefaults.AllowNetwork = &allow
	})
	withNet := func(image string) sandbox.Request {
		r := py("x")
		r.Image, r.Network = image, sandbox.Network{Allow: []string{"example.com"}}
		return r
	}
	for _, tc := range []struct {
		name, field, why string
		call             func() error
	}{
		{"session", "image", sessionsWhy, func() error {
			_, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{Image: "docker-img"}, service.SessionOptions{})
			return err
		}},
		{"analysis", "image", sessionsWhy, func() error {
			_, err := svc.CreateAnalysis(ctx, "t", service.AnalysisSpec{Image: "docker-img"}, nil)
			return err
		}},
		{"run with network", "network", networkWhy, func() error {
			_, err := svc.Run(ctx, "t", withNet(""), service.RunOptions{})
			return err
		}},
	} {
		err := tc.call()
		var se *service.Error
		if kindOf(err) != service.KindUnsuitableImage || !errors.As(err, &se) || se.Field != tc.field || !strings.Contains(se.Message, tc.why) {
			t.Errorf("%s: err = %#v, want KindUnsuitableImage naming %s and saying %q", tc.name, err, tc.field, tc.why)
		}
	}
	if n := lacking.runs.Load(); n != 0 {
		t.Errorf("the lacking runtime was called %d times for requests it cannot serve", n)
	}
	if res, err := svc.Run(ctx, "t", py("x"), service.RunOptions{}); err != nil || res.Result.Status != sandbox.StatusOK {
		t.Errorf("a run without network in the lacking image: %v, %v", res.Result.Status, err)
	}
	if _, err := svc.Run(ctx, "t", withNet("native-img"), service.RunOptions{}); err != nil {
		t.Errorf("a run with network in the other image: %v", err)
	}
	s, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{Image: "native-img"}, service.SessionOptions{})
	if err != nil {
		t.Fatalf("a session in the other image: %v", err)
	}
	s.Close()
}
