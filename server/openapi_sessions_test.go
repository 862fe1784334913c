package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestOpenAPISessionDefaults proves the OpenAPI document states the one
// set of session defaults the service applies (sandbox.DefaultSessionLimits):
// as the default of SessionRequest.limits, field by field, and in words
// where a session is opened.
func TestOpenAPISessionDefaults(t *testing.T) {
	doc := openAPIDoc(t)
	schemas := obj(t, obj(t, doc, "components"), "schemas")
	limits := obj(t, obj(t, obj(t, schemas, "SessionRequest"), "properties"), "limits")
	b, err := json.Marshal(limits["default"])
	if err != nil {
		t.Fatal(err)
	}
	var got sandbox.Limits
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("SessionRequest.limits.default is no Limits: %v", err)
	}
	if want := sandbox.DefaultSessionLimits().WithSessionDefaults(); got != want {
		t.Errorf("SessionRequest.limits.default = %+v\nthe service's session defaults are %+v", got, want)
	}
	d := sandbox.DefaultSessionLimits()
	words := []string{
		fmt.Sprintf("%d s of wall and CPU time", d.WallTimeMS/1000),
		fmt.Sprintf("%d GiB of memory", d.MemoryBytes/sandbox.GiB),
		fmt.Sprintf("a %d GiB working directory", d.DiskBytes/sandbox.GiB),
	}
	post := obj(t, obj(t, obj(t, doc, "paths"), "/v1/sessions"), "post")
	for _, where := range []struct {
		name string
		text any
	}{{"SessionRequest.limits", limits["description"]}, {"POST /v1/sessions", post["description"]}} {
		for _, w := range words {
			if s, _ := where.text.(string); !strings.Contains(s, w) {
				t.Errorf("the description of %s does not say %q: %q", where.name, w, s)
			}
		}
	}
}
