package server_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/policy"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// serverSecret is a secret the server is configured to hide.
const serverSecret = "srv-Secret-4c1d-88ab"

// leakCode writes the secret, built at run time so the code never holds
// it, into file names and contents of every kind, prints it and fails
// with it in the exception's type; page.html is a page that would run
// script in the API's origin were it served as HTML.
const leakCode = `import os
s = "srv-Secret" + "-4c1d-88ab"
os.makedirs("out", exist_ok=True)
open("out/" + s + ".txt", "w").write("key=" + s)
open("page.html", "w").write("<script>fetch('/v1/runs')</script>" + s)
open("pic.svg", "w").write("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>")
open("chart.png", "wb").write(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x19tEXtTitle\x00" + s.encode() + b"\x00\xff")
print(s)
raise type("E" + s, (Exception,), {})(s)
`

// TestSessionFilesAndArtifactsHideSecrets is the hostile test of the
// HTTP paths that return what a program made: a session's cell writes the
// secret into file names and into text and binary files, and its run's
// artifacts are the same files. Neither the cell's answer, its event
// stream, the file list, a download nor an artifact download gives the
// secret back, and none is served as a page: each download is an
// attachment, sandboxed, never sniffed, and of a type a browser does not
// run.
func TestSessionFilesAndArtifactsHideSecrets(t *testing.T) {
	red, err := policy.NewRedactor(policy.RedactConfig{Secrets: []string{serverSecret}, Patterns: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *config) { c.Redactor = red })
	noSecret := func(what string, b []byte) {
		t.Helper()
		if bytes.Contains(b, []byte(serverSecret)) {
			t.Errorf("%s leaks the secret: %q", what, b)
		}
	}
	var created api.SessionInfo
	ts.do("POST", "/v1/sessions", map[string]any{"language": "python"}).json(t, &created)
	base := "/v1/sessions/" + created.ID
	r := ts.do("POST", base+"/exec", map[string]any{"code": leakCode})
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte("[REDACTED:secret]")) {
		t.Fatalf("exec: %d %s", r.status, r.body)
	}
	noSecret("the cell's answer", r.body)
	var res sandbox.Result // binary artifacts are base64 in the JSON
	r.json(t, &res)
	for _, a := range res.Artifacts {
		noSecret("the cell's artifact "+a.Name, a.Content)
	}
	if png := artifactNamed(res.Artifacts, "chart.png"); png == nil || png.Withheld == "" || !png.ContentOmitted || png.SHA256 != "" {
		t.Errorf("chart.png in the answer: %+v, want it withheld, without content or digest", png)
	}
	noSecret("the cell's event stream", ts.do("POST", base+"/exec?stream=1", map[string]any{"code": leakCode}).body)
	noSecret("the file list", ts.do("GET", base+"/files", nil).body)
	run := ts.run("/v1/runs", python(leakCode))
	for _, a := range run.Artifacts {
		noSecret("the run's artifact "+a.Name, a.Content)
	}
	noSecret("the run's record", ts.do("GET", "/v1/runs/"+run.ID, nil).body)

	// What a browser must never take for a page of the API's origin.
	const attachment = "attachment"
	cases := []struct {
		name, path  string
		status      int
		contentType string // "" when the answer is an error
		secretFree  bool   // the body is served with the secret hidden
	}{
		{"session html page", base + "/files/page.html", http.StatusOK, "text/plain; charset=utf-8", true},
		{"session svg with script", base + "/files/pic.svg", http.StatusOK, "text/plain; charset=utf-8", true},
		{"session text file named after the secret", base + "/files/out/" + serverSecret + ".txt", http.StatusOK, "text/plain; charset=utf-8", true},
		{"session binary file holding the secret", base + "/files/chart.png", http.StatusForbidden, "", true},
		{"artifact html page", "/v1/runs/" + run.ID + "/artifacts/page.html", http.StatusOK, "text/plain; charset=utf-8", true},
		{"artifact svg", "/v1/runs/" + run.ID + "/artifacts/pic.svg", http.StatusOK, "text/plain; charset=utf-8", true},
		{"artifact text under its redacted name", "/v1/runs/" + run.ID + "/artifacts/out/[REDACTED:secret].txt", http.StatusOK, "text/plain; charset=utf-8", true},
		{"artifact binary holding the secret", "/v1/runs/" + run.ID + "/artifacts/chart.png", http.StatusNotFound, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.do("GET", c.path, nil)
			noSecret(c.name, r.body)
			if r.status != c.status {
				t.Fatalf("GET %s: status %d, want %d; body %q", c.path, r.status, c.status, r.body)
			}
			if c.contentType == "" {
				return
			}
			h := r.header
			if got := h.Get("Content-Type"); got != c.contentType {
				t.Errorf("Content-Type %q, want %q", got, c.contentType)
			}
			if h.Get("Content-Security-Policy") != "sandbox" || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("served without CSP sandbox and nosniff: %v", h)
			}
			if !strings.HasPrefix(h.Get("Content-Disposition"), attachment) {
				t.Errorf("Content-Disposition %q, want an attachment", h.Get("Content-Disposition"))
			}
		})
	}
}

// artifactNamed returns the artifact called name, or nil.
func artifactNamed(as []sandbox.Artifact, name string) *sandbox.Artifact {
	for i := range as {
		if as[i].Name == name {
			return &as[i]
		}
	}
	return nil
}
