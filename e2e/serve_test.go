package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/sandbox"
)

func py(code string) sandbox.Request { return sandbox.Request{Language: sandbox.Python, Code: code} }

// TestServeEndpoints proves that the crucible binary, started as an
// operator starts it (`crucible serve --db ...`), serves every route of
// server.routes correctly end to end: runs (sync, async, cached, redacted,
// with artifacts, listed and paged), sessions (state, files, close, 410), /healthz,
// /metrics, /openapi.json, and the JSON error contract for bad input. The
// subtests share one server and run in order: later ones (listing,
// metrics) check what earlier ones created.
func TestServeEndpoints(t *testing.T) {
	// The body limit is the default 64 MiB unless serve takes a --config
	// file, which lowers it so that 413 is cheap to trigger.
	var extra []string
	bodyLimit := int64(64 << 20)
	if serveHasFlag(t, "config") {
		bodyLimit = 1 << 20
		extra = configFlag(t, fmt.Sprintf(`{"max_body_bytes": %d}`, bodyLimit))
	}
	s := startServer(t, "server", filepath.Join(t.TempDir(), "runs.db"), extra...)
	c := s.Client
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	// ids collects the runs created, by what they were, for the listing checks.
	ids := map[string]string{}
	var allIDs []string
	track := func(t *testing.T, kind, id string) {
		t.Helper()
		if id == "" {
			t.Fatalf("%s: the run has no id", kind)
		}
		ids[kind] = id
		allIDs = append(allIDs, id)
	}

	// Proves GET /healthz answers 200 {"status":"ok"} in JSON.
	t.Run("healthz", func(t *testing.T) {
		r := s.do(t, "GET", "/healthz", "", nil)
		var body map[string]string
		if r.Status != 200 || json.Unmarshal(r.Body, &body) != nil || body["status"] != "ok" {
			t.Errorf("GET /healthz: %d %s, want 200 {\"status\":\"ok\"}", r.Status, clip(r.Body))
		}
	})

	// Proves synchronous POST /v1/runs returns the program's outcome
	// (ok, structured error, exit code, timeout) and that GET
	// /v1/runs/{id} then returns the same, stored record.
	t.Run("sync runs", func(t *testing.T) {
		cases := []struct {
			kind  string
			req   sandbox.Request
			want  sandbox.Status
			check func(t *testing.T, res *api.RunResponse)
		}{
			{kind: "ok", req: py("print(6 * 7)"), want: sandbox.StatusOK, check: func(t *testing.T, res *api.RunResponse) {
				if string(res.Stdout) != "42\n" || res.ExitCode != 0 {
					t.Errorf("stdout %q exit %d, want \"42\\n\" and 0", res.Stdout, res.ExitCode)
				}
			}},
			{kind: "error", req: py("def f():\n    raise ValueError('boom')\nf()\n"), want: sandbox.StatusError, check: func(t *testing.T, res *api.RunResponse) {
				if res.Error == nil {
					t.Fatalf("no structured error; stderr %q", res.Stderr)
				}
				if res.Error.Type != "ValueError" || !strings.Contains(res.Error.Message, "boom") || res.Error.Line == 0 {
					t.Errorf("error %+v, want type ValueError, message with boom, a line number", *res.Error)
				}
				if res.ExitCode == 0 {
					t.Errorf("exit code 0 for a raised exception")
				}
			}},
			{kind: "exit3", req: py("import sys\nsys.exit(3)\n"), want: sandbox.StatusError, check: func(t *testing.T, res *api.RunResponse) {
				if res.ExitCode != 3 {
					t.Errorf("exit code %d, want 3", res.ExitCode)
				}
			}},
			{kind: "bash", req: sandbox.Request{Language: sandbox.Bash, Code: "echo hello from bash"}, want: sandbox.StatusOK, check: func(t *testing.T, res *api.RunResponse) {
				if string(res.Stdout) != "hello from bash\n" {
					t.Errorf("stdout %q", res.Stdout)
				}
			}},
			{kind: "timeout", req: sandbox.Request{Language: sandbox.Python, Code: "import time\ntime.sleep(30)\n",
				Limits: sandbox.Limits{WallTimeMS: 1000}}, want: sandbox.StatusTimeout, check: func(t *testing.T, res *api.RunResponse) {
				if res.Reason == "" {
					t.Errorf("a timeout without a reason")
				}
				if res.Metrics.WallMS < 900 || res.Metrics.WallMS > 10_000 {
					t.Errorf("wall_ms %.0f, want about 1000", res.Metrics.WallMS)
				}
			}},
		}
		for _, tc := range cases {
			t.Run(tc.kind, func(t *testing.T) {
				res, err := c.CreateRun(ctx, tc.req)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				track(t, tc.kind, res.ID)
				if res.Status != tc.want {
					t.Fatalf("status %q (reason %q, stderr %q), want %q", res.Status, res.Reason, res.Stderr, tc.want)
				}
				if res.CacheHit {
					t.Errorf("first run of its code is a cache hit")
				}
				if res.Language != tc.req.Language || res.CodeHash == "" {
					t.Errorf("language %q code_hash %q", res.Language, res.CodeHash)
				}
				tc.check(t, res)
				rec, err := c.GetRun(ctx, res.ID)
				if err != nil {
					t.Fatalf("GetRun(%s): %v", res.ID, err)
				}
				if rec.ID != res.ID || rec.Status != res.Status || string(rec.Stdout) != string(res.Stdout) ||
					rec.ExitCode != res.ExitCode || rec.Code != tc.req.Code || rec.FinishedAt == nil {
					t.Errorf("stored record %+v does not match the answer %+v", rec, res)
				}
			})
		}
	})

	// Proves POST /v1/runs?async=1 answers 202 at once with the id, a
	// Location and status queued, and that polling GET /v1/runs/{id} sees
	// the run end with its output.
	t.Run("async", func(t *testing.T) {
		r := s.do(t, "POST", "/v1/runs?async=1", "application/json",
			strings.NewReader(`{"language":"python","code":"import time\ntime.sleep(1)\nprint('async done')"}`))
		var ans struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if r.Status != http.StatusAccepted || json.Unmarshal(r.Body, &ans) != nil {
			t.Fatalf("POST /v1/runs?async=1: %d %s, want 202 with JSON", r.Status, clip(r.Body))
		}
		track(t, "async", ans.ID)
		if ans.Status != "queued" {
			t.Errorf("async answer status %q, want queued", ans.Status)
		}
		if loc := r.Header.Get("Location"); loc != "/v1/runs/"+ans.ID {
			t.Errorf("Location %q, want /v1/runs/%s", loc, ans.ID)
		}
		first, err := c.GetRun(ctx, ans.ID)
		if err != nil {
			t.Fatalf("GetRun: %v", err)
		}
		if first.Status != api.StatusQueued && first.Status != api.StatusRunning {
			t.Errorf("a 1s run read right after submission has status %q, want queued or running", first.Status)
		}
		rec, err := c.WaitRun(ctx, ans.ID, 100*time.Millisecond)
		if err != nil {
			t.Fatalf("WaitRun: %v", err)
		}
		if rec.Status != sandbox.StatusOK || string(rec.Stdout) != "async done\n" || rec.StartedAt == nil || rec.FinishedAt == nil {
			t.Errorf("final record: status %q stdout %q started %v finished %v", rec.Status, rec.Stdout, rec.StartedAt, rec.FinishedAt)
		}

		// The same through the SDK.
		id, err := c.RunAsync(ctx, sandbox.Request{Language: sandbox.Bash, Code: "echo sdk async"})
		if err != nil {
			t.Fatalf("RunAsync: %v", err)
		}
		track(t, "async-sdk", id)
		rec, err = c.WaitRun(ctx, id, 50*time.Millisecond)
		if err != nil {
			t.Fatalf("WaitRun: %v", err)
		}
		if rec.Status != sandbox.StatusOK || string(rec.Stdout) != "sdk async\n" {
			t.Errorf("SDK async run: status %q stdout %q", rec.Status, rec.Stdout)
		}
	})

	// Proves a second identical run asking for the cache is answered from
	// it (a new record marked cache_hit, same output), also under
	// ?async=1, and that a run not asking runs the code again.
	t.Run("cache", func(t *testing.T) {
		req := py("import random\nprint('cached', random.random())")
		first, err := c.CreateRun(ctx, req, client.UseCache())
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		track(t, "cache-first", first.ID)
		second, err := c.CreateRun(ctx, req, client.UseCache())
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		track(t, "cache-hit", second.ID)
		if first.CacheHit || !second.CacheHit {
			t.Errorf("cache_hit %v then %v, want false then true", first.CacheHit, second.CacheHit)
		}
		if second.ID == first.ID || string(second.Stdout) != string(first.Stdout) || second.Status != sandbox.StatusOK {
			t.Errorf("cache hit: id %s (first %s), stdout %q (first %q), status %q", second.ID, first.ID, second.Stdout, first.Stdout, second.Status)
		}
		if rec, err := c.GetRun(ctx, second.ID); err != nil || !rec.CacheHit || string(rec.Stdout) != string(first.Stdout) {
			t.Errorf("stored cache-hit record: %+v, %v", rec, err)
		}

		id, err := c.RunAsync(ctx, req, client.UseCache())
		if err != nil {
			t.Fatalf("RunAsync: %v", err)
		}
		track(t, "cache-hit-async", id)
		if rec, err := c.GetRun(ctx, id); err != nil || !rec.CacheHit || rec.Status != sandbox.StatusOK {
			t.Errorf("async cache hit, read at once: %+v, %v; want a finished cache hit", rec, err)
		}

		fresh, err := c.CreateRun(ctx, req)
		if err != nil {
			t.Fatalf("Run without the cache: %v", err)
		}
		track(t, "cache-bypass", fresh.ID)
		if fresh.CacheHit || string(fresh.Stdout) == string(first.Stdout) {
			t.Errorf("without the cache: cache_hit %v stdout %q (cached %q), want a fresh run with new random output",
				fresh.CacheHit, fresh.Stdout, first.Stdout)
		}
	})

	// Proves that a secret a program prints (an AWS access key id) never
	// reaches the client or the stored record, and that the record counts
	// the redactions.
	t.Run("redaction", func(t *testing.T) {
		const key = "AKIAIOSFODNN7EXAMPLE"
		res, err := c.CreateRun(ctx, py("import sys\nk = 'AKIA' + 'IOSFODNN7EXAMPLE'\nprint('key:', k)\nprint('err key:', k, file=sys.stderr)\n"))
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		track(t, "redaction", res.ID)
		if res.Status != sandbox.StatusOK {
			t.Fatalf("status %q stderr %q", res.Status, res.Stderr)
		}
		for name, out := range map[string]string{"stdout": string(res.Stdout), "stderr": string(res.Stderr)} {
			if strings.Contains(out, key) || !strings.Contains(out, "[REDACTED:") {
				t.Errorf("answer %s %q: want the key replaced by [REDACTED:...]", name, out)
			}
		}
		rec, err := c.GetRun(ctx, res.ID)
		if err != nil {
			t.Fatalf("GetRun: %v", err)
		}
		if strings.Contains(string(rec.Stdout)+string(rec.Stderr), key) {
			t.Errorf("stored record holds the key: stdout %q stderr %q", rec.Stdout, rec.Stderr)
		}
		if rec.Redactions < 2 {
			t.Errorf("record counts %d redactions, want at least 2 (stdout and stderr)", rec.Redactions)
		}
	})

	// Proves a file a run writes comes back as an artifact: described in
	// the answer and the record (name, size, SHA-256), downloadable with
	// GET /v1/runs/{id}/artifacts/{name...} with its type, an ETag of its
	// digest and headers that keep a browser from rendering it, and 404
	// for an artifact or run that does not exist.
	t.Run("artifacts", func(t *testing.T) {
		const content = "hello artifact\n"
		res, err := c.CreateRun(ctx, py("import os\nos.makedirs('out', exist_ok=True)\nopen('out/report.txt', 'w').write('hello artifact\\n')\n"))
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		track(t, "artifact", res.ID)
		if res.Status != sandbox.StatusOK {
			t.Fatalf("status %q stderr %q", res.Status, res.Stderr)
		}
		sum := sha256.Sum256([]byte(content))
		digest := hex.EncodeToString(sum[:])
		var found *sandbox.Artifact
		for i := range res.Artifacts {
			if res.Artifacts[i].Name == "out/report.txt" {
				found = &res.Artifacts[i]
			}
		}
		if found == nil {
			t.Fatalf("answer artifacts %+v lack out/report.txt", res.Artifacts)
		}
		if found.Size != int64(len(content)) || found.SHA256 != digest || string(found.Content) != content {
			t.Errorf("artifact %+v, want size %d sha256 %s and its content", *found, len(content), digest)
		}
		rec, err := c.GetRun(ctx, res.ID)
		if err != nil {
			t.Fatalf("GetRun: %v", err)
		}
		if len(rec.Artifacts) != len(res.Artifacts) || !slices.ContainsFunc(rec.Artifacts, func(a api.ArtifactMeta) bool {
			return a.Name == "out/report.txt" && a.SHA256 == digest && a.Size == int64(len(content))
		}) {
			t.Errorf("record artifacts %+v do not describe out/report.txt", rec.Artifacts)
		}
		b, err := c.Artifact(ctx, res.ID, "out/report.txt")
		if err != nil || string(b) != content {
			t.Errorf("SDK Artifact = %q, %v; want %q", b, err, content)
		}
		r := s.do(t, "GET", "/v1/runs/"+res.ID+"/artifacts/out/report.txt", "", nil)
		if r.Status != 200 || string(r.Body) != content {
			t.Errorf("GET artifact: %d %q", r.Status, clip(r.Body))
		}
		for h, want := range map[string]string{
			"Content-Type":            "text/plain",
			"ETag":                    `"` + digest + `"`,
			"X-Content-Type-Options":  "nosniff",
			"Content-Security-Policy": "sandbox",
		} {
			if got := r.Header.Get(h); !strings.HasPrefix(got, want) {
				t.Errorf("GET artifact: header %s %q, want %q", h, got, want)
			}
		}
		_, err = c.Artifact(ctx, res.ID, "out/nothing.txt")
		checkSDKError(t, "an artifact the run did not write", err, 404, "not_found", "")
		checkAPIError(t, "an artifact of an unknown run", s.do(t, "GET", "/v1/runs/no-such-run/artifacts/out/report.txt", "", nil), 404, "not_found", "")
	})

	// Proves GET /v1/runs lists the runs newest first, filters by status,
	// language and since, pages with limit and cursor without losing or
	// repeating a run, and refuses bad parameters naming them.
	t.Run("list", func(t *testing.T) {
		all, next, err := c.ListRuns(ctx, client.ListOptions{Limit: 500})
		if err != nil {
			t.Fatalf("ListRuns: %v", err)
		}
		if next != "" {
			t.Errorf("a listing of everything has next %q", next)
		}
		var listed []string
		for i, r := range all {
			listed = append(listed, r.ID)
			if i > 0 && r.CreatedAt.After(all[i-1].CreatedAt) {
				t.Errorf("not newest first: %s (%v) after %s (%v)", r.ID, r.CreatedAt, all[i-1].ID, all[i-1].CreatedAt)
			}
		}
		for _, id := range allIDs {
			if !slices.Contains(listed, id) {
				t.Errorf("run %s missing from the listing", id)
			}
		}
		if len(listed) != len(allIDs) {
			t.Errorf("listing holds %d runs, %d were created", len(listed), len(allIDs))
		}

		filters := []struct {
			opts    client.ListOptions
			mustHas []string
			keep    func(api.Run) bool
		}{
			{client.ListOptions{Status: "error"}, []string{ids["error"], ids["exit3"]}, func(r api.Run) bool { return r.Status == sandbox.StatusError }},
			{client.ListOptions{Status: "timeout"}, []string{ids["timeout"]}, func(r api.Run) bool { return r.Status == sandbox.StatusTimeout }},
			{client.ListOptions{Language: "bash"}, []string{ids["bash"], ids["async-sdk"]}, func(r api.Run) bool { return r.Language == sandbox.Bash }},
			{client.ListOptions{Language: "python", Status: "ok"}, []string{ids["ok"], ids["async"]}, func(r api.Run) bool {
				return r.Language == sandbox.Python && r.Status == sandbox.StatusOK
			}},
		}
		for _, f := range filters {
			got, _, err := c.ListRuns(ctx, f.opts)
			if err != nil {
				t.Errorf("ListRuns(%+v): %v", f.opts, err)
				continue
			}
			var gotIDs []string
			for _, r := range got {
				gotIDs = append(gotIDs, r.ID)
				if !f.keep(r) {
					t.Errorf("ListRuns(%+v) returned run %s with status %q language %q", f.opts, r.ID, r.Status, r.Language)
				}
			}
			for _, id := range f.mustHas {
				if !slices.Contains(gotIDs, id) {
					t.Errorf("ListRuns(%+v) lacks run %s", f.opts, id)
				}
			}
			// Every run of the full listing that matches must be there.
			want := 0
			for _, r := range all {
				if f.keep(r) {
					want++
				}
			}
			if len(got) != want {
				t.Errorf("ListRuns(%+v): %d runs, the full listing has %d matching", f.opts, len(got), want)
			}
		}

		// since: only runs created from then on.
		mark := time.Now()
		var recent []string
		for i := range 2 {
			res, err := c.CreateRun(ctx, sandbox.Request{Language: sandbox.Bash, Code: fmt.Sprintf("echo since %d", i)})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			track(t, fmt.Sprintf("since-%d", i), res.ID)
			recent = append(recent, res.ID)
		}
		got, _, err := c.ListRuns(ctx, client.ListOptions{Since: mark})
		if err != nil {
			t.Fatalf("ListRuns(since): %v", err)
		}
		var gotIDs []string
		for _, r := range got {
			gotIDs = append(gotIDs, r.ID)
		}
		slices.Sort(gotIDs)
		slices.Sort(recent)
		if !slices.Equal(gotIDs, recent) {
			t.Errorf("ListRuns(since %v) = %v, want exactly the runs created after it %v", mark, gotIDs, recent)
		}

		// Pagination: pages of 2 make up the full listing, in order.
		all, _, err = c.ListRuns(ctx, client.ListOptions{Limit: 500})
		if err != nil {
			t.Fatalf("ListRuns: %v", err)
		}
		var paged []string
		cursor := ""
		for page := 0; ; page++ {
			if page > len(all) {
				t.Fatalf("pagination does not end after %d pages", page)
			}
			runs, next, err := c.ListRuns(ctx, client.ListOptions{Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatalf("ListRuns page %d: %v", page, err)
			}
			if len(runs) > 2 {
				t.Errorf("page %d holds %d runs, limit 2", page, len(runs))
			}
			for _, r := range runs {
				paged = append(paged, r.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		var full []string
		for _, r := range all {
			full = append(full, r.ID)
		}
		if !slices.Equal(paged, full) {
			t.Errorf("pages of 2 give %v,\nthe full listing is %v", paged, full)
		}

		// Bad parameters are refused with the parameter named.
		for _, bad := range []struct{ query, field string }{
			{"status=bogus", "status"},
			{"language=cobol", "language"},
			{"since=yesterday", "since"},
			{"limit=0", "limit"},
			{"limit=x", "limit"},
			{"cursor=not-a-cursor", "cursor"},
		} {
			r := s.do(t, "GET", "/v1/runs?"+bad.query, "", nil)
			checkAPIError(t, "GET /v1/runs?"+bad.query, r, 400, "invalid_request", bad.field)
		}
	})

	// Proves sessions keep interpreter state between cells, read and
	// write files both through the API and from the program, list them,
	// report a cell's structured error, and that a deleted session answers
	// 410 session_closed while an unknown one answers 404.
	t.Run("sessions", func(t *testing.T) {
		sess, err := c.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
		if err != nil {
			t.Fatalf("NewSession: %v", err)
		}
		closed := false
		t.Cleanup(func() {
			if !closed {
				_ = sess.Close()
			}
		})
		exec := func(code string) sandbox.Result {
			t.Helper()
			res, err := sess.Exec(ctx, sandbox.Cell{Code: code})
			if err != nil {
				t.Fatalf("Exec(%q): %v", code, err)
			}
			return res
		}
		if res := exec("x = 41"); res.Status != sandbox.StatusOK {
			t.Fatalf("x = 41: status %q stderr %q", res.Status, res.Stderr)
		}
		if res := exec("x + 1"); res.Status != sandbox.StatusOK || res.Value != "42" {
			t.Errorf("x + 1: status %q value %q, want ok 42 (the variable must persist)", res.Status, res.Value)
		}
		if res := exec("undefined_name + 1"); res.Status != sandbox.StatusError || res.Error == nil || res.Error.Type != "NameError" {
			t.Errorf("a failing cell: status %q error %+v, want error with type NameError", res.Status, res.Error)
		}

		if err := sess.WriteFile(ctx, "data/in.txt", []byte("hello e2e")); err != nil {
			t.Fatalf("WriteFile: %v", err)
		}
		if b, err := sess.ReadFile(ctx, "data/in.txt"); err != nil || string(b) != "hello e2e" {
			t.Errorf("ReadFile(data/in.txt) = %q, %v", b, err)
		}
		if res := exec("print(open('data/in.txt').read().upper())\nopen('out.txt', 'w').write('from python')"); res.Status != sandbox.StatusOK || string(res.Stdout) != "HELLO E2E\n" {
			t.Errorf("reading the uploaded file in a cell: status %q stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
		}
		if b, err := sess.ReadFile(ctx, "out.txt"); err != nil || string(b) != "from python" {
			t.Errorf("ReadFile(out.txt) = %q, %v", b, err)
		}
		files, err := sess.ListFiles(ctx)
		if err != nil {
			t.Fatalf("ListFiles: %v", err)
		}
		sizes := map[string]int64{}
		for _, f := range files {
			if !f.Dir {
				sizes[f.Name] = f.Size
			}
		}
		if sizes["data/in.txt"] != 9 || sizes["out.txt"] != 11 {
			t.Errorf("ListFiles = %+v, want data/in.txt (9 bytes) and out.txt (11 bytes)", files)
		}
		_, err = sess.ReadFile(ctx, "no/such/file")
		checkSDKError(t, "ReadFile of a missing file", err, 404, "not_found", "")
		// A file one byte over the body limit is refused with 413 (cheap
		// even at 64 MiB: the body is not parsed).
		r := sendOversized(t, s.URL, "PUT", "/v1/sessions/"+sess.ID()+"/files/big.bin", "application/octet-stream", "", "", bodyLimit)
		checkAPIError(t, fmt.Sprintf("PUT of a %d-byte file", bodyLimit+1), r, 413, "payload_too_large", "")
		if _, err := sess.ReadFile(ctx, "big.bin"); !client.IsNotFound(err) {
			t.Errorf("ReadFile of the refused file: %v, want 404", err)
		}

		// The metric counts the open session.
		if m := s.do(t, "GET", "/metrics", "", nil); !strings.Contains(string(m.Body), "\ncrucible_active_sessions 1\n") {
			t.Errorf("/metrics with one open session lacks \"crucible_active_sessions 1\"")
		}

		if err := sess.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		closed = true
		_, err = sess.Exec(ctx, sandbox.Cell{Code: "x"})
		checkSDKError(t, "Exec after DELETE", err, 410, "session_closed", "")
		_, err = sess.ReadFile(ctx, "out.txt")
		checkSDKError(t, "ReadFile after DELETE", err, 410, "session_closed", "")
		checkSDKError(t, "a second DELETE", sess.Close(), 410, "session_closed", "")

		r = s.do(t, "POST", "/v1/sessions/no-such-session/exec", "application/json", strings.NewReader(`{"code":"1"}`))
		checkAPIError(t, "exec in an unknown session", r, 404, "not_found", "")
		_, err = c.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Bash})
		checkSDKError(t, "a bash session", err, 400, "invalid_request", "language")
	})

	// Proves GET /metrics serves the Prometheus text format with the
	// server's own metrics, each named crucible_* (server/metrics.go:
	// "namespace prefixes every metric of the server's own"), beside the Go
	// and process collectors, and that they count what the earlier
	// subtests did.
	t.Run("metrics", func(t *testing.T) {
		r := s.do(t, "GET", "/metrics", "", nil)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("GET /metrics: %d %q", r.Status, r.Header.Get("Content-Type"))
		}
		body := string(r.Body)
		for _, want := range []string{
			`crucible_runs_total{language="python",status="ok"}`,
			`crucible_runs_total{language="python",status="error"}`,
			`crucible_runs_total{language="python",status="timeout"}`,
			`crucible_runs_total{language="bash",status="ok"}`,
			"crucible_run_duration_seconds_bucket", "crucible_run_duration_seconds_count",
			"crucible_queue_depth 0", "crucible_active_sessions 0",
			"crucible_cache_hits_total", "crucible_cache_misses_total",
			"go_goroutines", "process_resident_memory_bytes",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
		// Every metric the server defines itself carries the prefix.
		for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(body, -1) {
			name := m[1]
			if !strings.HasPrefix(name, "crucible_") && !strings.HasPrefix(name, "go_") &&
				!strings.HasPrefix(name, "process_") && !strings.HasPrefix(name, "promhttp_") {
				t.Errorf("/metrics serves %s, a metric of the server's own without the crucible_ prefix", name)
			}
		}
		value := func(name string) float64 {
			m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
			if m == nil {
				t.Errorf("/metrics has no sample %s", name)
				return -1
			}
			v, _ := strconv.ParseFloat(m[1], 64)
			return v
		}
		if v := value("crucible_cache_hits_total"); v < 2 {
			t.Errorf("crucible_cache_hits_total %v, want at least 2 (one sync, one async hit)", v)
		}
		if v := value(`crucible_runs_total{language="python",status="timeout"}`); v != 1 {
			t.Errorf("timeout runs counted %v, want 1", v)
		}
	})

	// Proves GET /openapi.json serves a JSON OpenAPI 3 document that
	// describes every route the server registers.
	t.Run("openapi", func(t *testing.T) {
		r := s.do(t, "GET", "/openapi.json", "", nil)
		var doc struct {
			OpenAPI string                                `json:"openapi"`
			Paths   map[string]map[string]json.RawMessage `json:"paths"`
		}
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("GET /openapi.json: %d %q", r.Status, r.Header.Get("Content-Type"))
		}
		if err := json.Unmarshal(r.Body, &doc); err != nil {
			t.Fatalf("/openapi.json is not JSON: %v", err)
		}
		if !strings.HasPrefix(doc.OpenAPI, "3.") {
			t.Errorf("openapi field %q, want 3.x", doc.OpenAPI)
		}
		for _, route := range []struct{ method, path string }{
			{"post", "/v1/runs"}, {"get", "/v1/runs"}, {"get", "/v1/runs/{id}"}, {"get", "/v1/runs/{id}/artifacts/{name}"},
			{"post", "/v1/sessions"}, {"post", "/v1/sessions/{id}/exec"}, {"get", "/v1/sessions/{id}/files"},
			{"put", "/v1/sessions/{id}/files/{path}"}, {"get", "/v1/sessions/{id}/files/{path}"},
			{"delete", "/v1/sessions/{id}"}, {"get", "/healthz"}, {"get", "/metrics"}, {"get", "/openapi.json"},
		} {
			if _, ok := doc.Paths[route.path][route.method]; !ok {
				t.Errorf("/openapi.json does not describe %s %s", strings.ToUpper(route.method), route.path)
			}
		}
	})

	// Proves bad requests are refused with the JSON error shape
	// {"error": {"code", "message", "field", "rule"}}, the right status
	// and code, and the offending field named where there is one.
	t.Run("errors", func(t *testing.T) {
		cases := []struct {
			name, method, path, body string
			status                   int
			code, field              string
		}{
			{"unknown language", "POST", "/v1/runs", `{"language":"cobol","code":"x"}`, 400, "invalid_request", "language"},
			{"image not offered", "POST", "/v1/runs", `{"code":"print(1)","image":"nope"}`, 400, "invalid_request", "image"},
			{"session image not offered", "POST", "/v1/sessions", `{"image":"nope"}`, 400, "invalid_request", "image"},
			{"malformed JSON", "POST", "/v1/runs", `{"language": "python", "code": `, 400, "invalid_request", ""},
			{"not JSON", "POST", "/v1/runs", `language=python`, 400, "invalid_request", ""},
			{"empty body", "POST", "/v1/runs", ``, 400, "invalid_request", ""},
			{"unknown field", "POST", "/v1/runs", `{"language":"python","code":"1","colour":"red"}`, 400, "invalid_request", ""},
			{"wrong type", "POST", "/v1/runs", `{"language":"python","code":7}`, 400, "invalid_request", "code"},
			{"trailing data", "POST", "/v1/runs", `{"language":"python","code":"1"} {}`, 400, "invalid_request", ""},
			{"negative limit", "POST", "/v1/runs", `{"language":"python","code":"1","limits":{"wall_time_ms":-5}}`, 400, "invalid_request", "limits.wall_time_ms"},
			{"bad file name", "POST", "/v1/runs", `{"language":"python","code":"1","files":[{"name":"../x","content":""}]}`, 400, "invalid_request", "files[0].name"},
			{"bad async", "POST", "/v1/runs?async=maybe", `{"language":"python","code":"1"}`, 400, "invalid_request", "async"},
			{"bad cache", "POST", "/v1/runs?cache=2", `{"language":"python","code":"1"}`, 400, "invalid_request", "cache"},
			{"session language", "POST", "/v1/sessions", `{"language":"cobol"}`, 400, "invalid_request", "language"},
			{"unknown route", "GET", "/v1/nope", ``, 404, "not_found", ""},
			{"unknown root route", "GET", "/nope", ``, 404, "not_found", ""},
			{"unknown UI asset", "GET", "/ui/nope.js", ``, 404, "not_found", ""},
			{"wrong method on the UI", "POST", "/", `{}`, 405, "method_not_allowed", ""},
			{"unknown run", "GET", "/v1/runs/no-such-run", ``, 404, "not_found", ""},
			{"wrong method", "DELETE", "/v1/runs", ``, 405, "method_not_allowed", ""},
			{"wrong method on healthz", "POST", "/healthz", `{}`, 405, "method_not_allowed", ""},
		}
		for _, tc := range cases {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			r := s.do(t, tc.method, tc.path, "application/json", body)
			checkAPIError(t, tc.name+" ("+tc.method+" "+tc.path+")", r, tc.status, tc.code, tc.field)
		}

		// The SDK surfaces the same error as an *client.APIError.
		_, err := c.Run(ctx, sandbox.Request{Language: "cobol", Code: "x"})
		checkSDKError(t, "SDK Run in cobol", err, 400, "invalid_request", "language")
		_, err = c.GetRun(ctx, "no-such-run")
		if !client.IsNotFound(err) {
			t.Errorf("SDK GetRun of an unknown id: %v, want IsNotFound", err)
		}

		// A run request one byte over the body limit is refused with 413.
		// Only with a small limit: decoding 64 MiB of JSON takes seconds.
		if bodyLimit < 8<<20 {
			r := sendOversized(t, s.URL, "POST", "/v1/runs", "application/json", `{"language":"python","code":"`, `"}`, bodyLimit)
			checkAPIError(t, fmt.Sprintf("a run request of %d bytes", bodyLimit+1), r, 413, "payload_too_large", "")
		}
	})

	// The server is still healthy after all of it.
	if r := s.do(t, "GET", "/healthz", "", nil); r.Status != 200 {
		t.Errorf("GET /healthz at the end: %d", r.Status)
	}
}

// sendOversized sends method path with a body of limit+1 bytes (prefix,
// padding, suffix) over a raw connection and returns the answer. The
// server answers 413 as soon as it has read past the limit, without reading
// the rest, so the body is written in the background and write errors are
// ignored.
func sendOversized(t *testing.T, baseURL, method, path, contentType, prefix, suffix string, limit int64) httpResult {
	t.Helper()
	host := strings.TrimPrefix(baseURL, "http://")
	conn, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", host, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	total := limit + 1
	pad := total - int64(len(prefix)+len(suffix))
	go func() {
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
			method, path, host, contentType, total)
		io.WriteString(conn, prefix)
		chunk := []byte(strings.Repeat("a", 64<<10))
		for pad > 0 {
			n := min(pad, int64(len(chunk)))
			if _, err := conn.Write(chunk[:n]); err != nil {
				return // the server has answered and closed
			}
			pad -= n
		}
		io.WriteString(conn, suffix)
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%s %s with %d bytes: reading the answer: %v", method, path, total, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("%s %s with %d bytes: reading the body: %v", method, path, total, err)
	}
	return httpResult{Status: resp.StatusCode, Header: resp.Header, Body: b}
}
