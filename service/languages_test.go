package service_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
	"github.com/crucible-sandbox/crucible/service"
)

// TestLanguageResolved: the service takes every name ParseLanguage knows
// and an empty one for Python, runs and records the canonical name, and
// caches "py" and "python" as one program; an unknown name is refused
// listing the accepted ones.
func TestLanguageResolved(t *testing.T) {
	ctx := context.Background()
	svc := newService(t, &fakeRuntime{}, nil)
	for _, tc := range []struct {
		name sandbox.Language
		want sandbox.Language
	}{{"", sandbox.Python}, {"py", sandbox.Python}, {"Node", sandbox.JavaScript}, {"sh", sandbox.Bash}} {
		res, err := svc.Run(ctx, "t", sandbox.Request{Language: tc.name, Code: "1"}, service.RunOptions{})
		if err != nil {
			t.Fatalf("%q: %v", tc.name, err)
		}
		rec, err := svc.Get(ctx, "t", res.ID)
		if err != nil || res.Language != tc.want || rec.Language != tc.want {
			t.Errorf("%q: result %q, record %+v (%v); want %q", tc.name, res.Language, rec, err, tc.want)
		}
	}
	a, _ := svc.Run(ctx, "t", sandbox.Request{Language: "python", Code: "same"}, service.RunOptions{Cache: true})
	b, _ := svc.Run(ctx, "t", sandbox.Request{Language: "py", Code: "same"}, service.RunOptions{Cache: true})
	if a.CacheHit || !b.CacheHit {
		t.Errorf("py after python: hit %v, want a cache hit", b.CacheHit)
	}
	_, err := svc.Run(ctx, "t", sandbox.Request{Language: "cobol", Code: "1"}, service.RunOptions{})
	var ie *sandbox.InputError
	if !errors.As(err, &ie) || ie.Field != "language" || !strings.Contains(ie.Rule, "py") || !strings.Contains(ie.Rule, `"cobol"`) {
		t.Errorf("cobol: %v; want an input error naming language and listing the names", err)
	}

	sess, err := svc.OpenSession(ctx, "t", sandbox.SessionRequest{Language: "PY"}, service.SessionOptions{})
	if err != nil || sess.Info().Language != sandbox.Python {
		t.Errorf(`session "PY": %v`, err)
	}
}
