package e2e

import (
	"bytes"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// configuredSecret is the secret the server's --config tells it to hide.
const configuredSecret = "e2e-Secret-93be-f00d"

// secretEverywhere is a program that puts the secret (its code holds it
// once, in a comment; the program builds it at run time) into every place
// it controls: output, its exception's type and message, file names, a
// text file, an HTML page and a binary file.
const secretEverywhere = `# e2e-Secret-93be-f00d
import os, sys
s = "e2e-Secret" + "-93be-f00d"
os.makedirs("out", exist_ok=True)
open("out/" + s + ".txt", "w").write("key=" + s)
open("page.html", "w").write("<script>alert(1)</script>" + s)
open("chart.png", "wb").write(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x19tEXtTitle\x00" + s.encode() + b"\x00\xff")
print(s)
print(s, file=sys.stderr)
raise type("E" + s, (Exception,), {})(s)
`

// TestSecretNowhere is the hostile end-to-end test of redaction through a
// real crucible serve with a "redact" config: a program spreads the
// configured secret over everything it controls, as a run and as a
// session's cell, and the secret comes back in no answer (the run's, its
// artifacts' names and bytes, the session's file list and downloads, GET
// /v1/runs/{id}, the run list, the event streams), and, read from the
// host once the server stopped, is in no file of its SQLite store.
func TestSecretNowhere(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	s := startServer(t, "server", db, configFlag(t, `{"redact": {"secrets": ["`+configuredSecret+`"]}}`)...)
	code, _ := json.Marshal(map[string]string{"language": "python", "code": secretEverywhere})
	cell, _ := json.Marshal(map[string]string{"code": secretEverywhere})
	post := func(path string, body []byte) httpResult {
		return s.do(t, "POST", path, "application/json", bytes.NewReader(body))
	}
	get := func(path string) httpResult { return s.do(t, "GET", path, "", nil) }
	var seen []struct {
		what string
		body []byte
	}
	see := func(what string, r httpResult) httpResult {
		seen = append(seen, struct {
			what string
			body []byte
		}{what, r.Body})
		return r
	}
	// artifacts sees the decoded artifact contents of an answer (binary
	// ones are base64 in JSON) and downloads those the run stored.
	artifacts := func(what, runID string, body []byte) {
		var res sandbox.Result
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatalf("%s: %v: %s", what, err, clip(body))
		}
		if len(res.Artifacts) < 3 {
			t.Fatalf("%s: artifacts %+v, want the program's 3 files", what, res.Artifacts)
		}
		for _, a := range res.Artifacts {
			see(what+": content of artifact "+a.Name, httpResult{Body: a.Content})
			if runID != "" && !a.ContentOmitted {
				see("artifact download "+a.Name, get("/v1/runs/"+runID+"/artifacts/"+escapePath(a.Name)))
			}
		}
	}

	run := see("run answer", post("/v1/runs", code))
	var acc api.RunAccepted
	_ = json.Unmarshal(run.Body, &acc)
	if run.Status != 200 || acc.ID == "" {
		t.Fatalf("POST /v1/runs: %d %s", run.Status, clip(run.Body))
	}
	artifacts("run answer", acc.ID, run.Body)
	see("GET /v1/runs/{id}", get("/v1/runs/"+acc.ID))
	see("GET /v1/runs", get("/v1/runs"))
	see("POST /v1/runs?stream=1", post("/v1/runs?stream=1", code))
	see("GET /v1/runs/{id}/events", get("/v1/runs/"+acc.ID+"/events"))

	var created api.SessionInfo
	if r := post("/v1/sessions", []byte(`{"language": "python"}`)); json.Unmarshal(r.Body, &created) != nil || created.ID == "" {
		t.Fatalf("POST /v1/sessions: %d %s", r.Status, clip(r.Body))
	}
	base := "/v1/sessions/" + created.ID
	artifacts("cell answer", "", see("cell answer", post(base+"/exec", cell)).Body)
	see("cell event stream", post(base+"/exec?stream=1", cell))
	list := see("session file list", get(base+"/files"))
	var files api.FileList
	if err := json.Unmarshal(list.Body, &files); err != nil || len(files.Files) < 4 {
		t.Fatalf("file list: %v %s", err, clip(list.Body))
	}
	for _, f := range files.Files {
		if !f.Dir {
			see("session file download "+f.Name, get(base+"/files/"+escapePath(f.Name)))
		}
	}
	for _, name := range []string{"page.html", "chart.png", "out/" + configuredSecret + ".txt"} {
		see("session file download "+name, get(base+"/files/"+escapePath(name)))
	}
	if r := get(base + "/files/page.html"); strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
		!strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment") || r.Header.Get("Content-Security-Policy") != "sandbox" {
		t.Errorf("page.html served as %q, %q, CSP %q; want no HTML, an attachment, sandboxed",
			r.Header.Get("Content-Type"), r.Header.Get("Content-Disposition"), r.Header.Get("Content-Security-Policy"))
	}

	for _, v := range seen {
		if i := bytes.Index(v.body, []byte(configuredSecret)); i >= 0 {
			t.Errorf("%s holds the secret: %q", v.what, clip(v.body[max(0, i-60):]))
		}
	}

	// From the host: the store's files, once the server stopped.
	s.Stop()
	dbFiles, _ := filepath.Glob(db + "*")
	for _, f := range dbFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte(configuredSecret)); i >= 0 {
			t.Errorf("store file %s holds the secret at byte %d: %q", filepath.Base(f), i, b[max(0, i-60):i+len(configuredSecret)])
		}
	}
	if len(dbFiles) == 0 {
		t.Errorf("no store file at %s", db)
	}
}

// escapePath escapes each segment of a slash-separated name for a URL.
func escapePath(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
