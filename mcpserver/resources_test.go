package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/mcpserver"
)

// TestResources: a run's record and its artifacts are readable at the
// URIs run_code gives; others are not found.
func TestResources(t *testing.T) {
	cs, _ := connect(t, newService(t))
	var run mcpserver.RunOutput
	call(t, cs, "run_code", map[string]any{"code": "import os\nos.mkdir('d')\nopen('d/out.csv','w').write('a,b\\n1,2\\n')\nprint(6*7)"}, &run)
	if len(run.Artifacts) != 1 {
		t.Fatalf("artifacts %+v, want d/out.csv", run.Artifacts)
	}
	for _, tc := range []struct {
		name, uri, want string
		notFound        bool
	}{
		{"the record", "crucible://runs/" + run.ID, `"stdout":"42\n"`, false},
		{"an artifact", run.Artifacts[0].URI, "a,b\n1,2\n", false},
		{"no such run", "crucible://runs/nosuch", "", true},
		{"no such artifact", "crucible://runs/" + run.ID + "/artifacts/nosuch", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: tc.uri})
			if tc.notFound {
				if err == nil || !strings.Contains(err.Error(), "not found") {
					t.Fatalf("read %s: %v, want not found", tc.uri, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Contents[0].Text; !strings.Contains(got, tc.want) {
				t.Fatalf("read %s: %q, want %q", tc.uri, got, tc.want)
			}
		})
	}
}
