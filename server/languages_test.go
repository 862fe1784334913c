package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
)

// TestLanguageNames: the API takes the names and aliases the command line
// takes, in runs, sessions and the listing's filter, and reports the
// canonical name; a run without a language is Python, like `crucible run`;
// an unknown name is refused naming "language" and listing the accepted
// names.
func TestLanguageNames(t *testing.T) {
	ts := newFakeServer(t, &imageRuntime{name: "default"}, nil)
	for _, tc := range []struct {
		name string
		want string
	}{
		{"py", "python"}, {"python3", "python"}, {"Python", "python"},
		{"js", "javascript"}, {"node", "javascript"}, {"sh", "bash"}, {"shell", "bash"},
		{"", "python"},
	} {
		body := map[string]any{"code": "1"}
		if tc.name != "" {
			body["language"] = tc.name
		}
		rr := ts.run("/v1/runs", body)
		if string(rr.Language) != tc.want {
			t.Errorf("language %q: result says %q, want %q", tc.name, rr.Language, tc.want)
		}
		if rec := ts.record(rr.ID); string(rec.Language) != tc.want {
			t.Errorf("language %q: record says %q, want %q", tc.name, rec.Language, tc.want)
		}
	}
	e := ts.do("POST", "/v1/runs", map[string]any{"language": "cobol", "code": "1"}).wantError(t, http.StatusBadRequest, "invalid_request")
	for _, want := range []string{"python", "py", "javascript", "js", "node", "bash", "sh", `"cobol"`} {
		if e.Error.Field != "language" || !strings.Contains(e.Error.Rule, want) {
			t.Errorf("unknown language: %+v; want field language and a rule naming %s", e.Error, want)
		}
	}

	var list api.RunList
	r := ts.do("GET", "/v1/runs?language=js", nil)
	r.json(t, &list)
	if r.status != http.StatusOK || len(list.Runs) != 2 {
		t.Errorf("GET /v1/runs?language=js: %d, %d runs, want 2; %s", r.status, len(list.Runs), r.body)
	}
	ts.do("GET", "/v1/runs?language=cobol", nil).wantError(t, http.StatusBadRequest, "invalid_request")

	if r := ts.do("POST", "/v1/sessions", map[string]any{"language": "py"}); r.status != http.StatusCreated {
		t.Errorf(`POST /v1/sessions {"language": "py"}: %d %s`, r.status, r.body)
	}
	e = ts.do("POST", "/v1/sessions", map[string]any{"language": "js"}).wantError(t, http.StatusBadRequest, "invalid_request")
	if e.Error.Field != "language" || !strings.Contains(e.Error.Rule, "python") {
		t.Errorf("javascript session: %+v; want field language and a rule naming python", e.Error)
	}
}
