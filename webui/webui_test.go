package webui

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHandler: the page at /, each asset under AssetPrefix with its type,
// every answer with the security headers, 404 (JSON) for anything else,
// and 304 for a revalidated asset.
func TestHandler(t *testing.T) {
	h := Handler()
	cases := []struct {
		path, ifNoneMatch string
		status            int
		ctype, body       string
	}{
		{"/", "", 200, "text/html; charset=utf-8", `<script type="module" src="/ui/app.js">`},
		{"/ui/app.js", "", 200, "text/javascript; charset=utf-8", "import"},
		{"/ui/notebook.js", "", 200, "text/javascript; charset=utf-8", "export async function render"},
		{"/ui/runs.js", "", 200, "text/javascript; charset=utf-8", "export async function render"},
		{"/ui/analyst.js", "", 200, "text/javascript; charset=utf-8", "export async function render"},
		{"/ui/agentruns.js", "", 200, "text/javascript; charset=utf-8", "export async function render"},
		{"/ui/swe.js", "", 200, "text/javascript; charset=utf-8", "export function diffView"},
		{"/ui/sweform.js", "", 200, "text/javascript; charset=utf-8", "export function sweForm"},
		{"/ui/profile.js", "", 200, "text/javascript; charset=utf-8", "export function profileView"},
		{"/ui/question.js", "", 200, "text/javascript; charset=utf-8", "export class Question"},
		{"/ui/app.css", "", 200, "text/css; charset=utf-8", ":root"},
		{"/ui/icon.svg", "", 200, "image/svg+xml", "<svg"},
		{"/ui/", "", 404, "application/json", `"not_found"`},
		{"/ui/index.html", "", 404, "application/json", `"not_found"`},
		{"/ui/nope.js", "", 404, "application/json", `"not_found"`},
		{"/ui/../go.mod", "", 404, "application/json", `"not_found"`},
		{"/index.html", "", 404, "application/json", `"not_found"`},
		{"/ui/app.js", etagOf(t, h, "/ui/app.js"), 304, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.path+tc.ifNoneMatch, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.path, nil)
			if tc.ifNoneMatch != "" {
				req.Header.Set("If-None-Match", tc.ifNoneMatch)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d; body %q", rec.Code, tc.status, rec.Body.String())
			}
			if got := rec.Header().Get("Content-Type"); tc.ctype != "" && got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if !strings.Contains(rec.Body.String(), tc.body) {
				t.Errorf("body does not hold %q: %.300s", tc.body, rec.Body.String())
			}
			for k, want := range map[string]string{
				"Content-Security-Policy": ContentSecurityPolicy,
				"X-Content-Type-Options":  "nosniff",
				"Referrer-Policy":         "no-referrer",
			} {
				if got := rec.Header().Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
		})
	}
}

// TestContentSecurityPolicy: the policy allows no inline script, no
// plug-in, no framing, and images only from the page, data: and blob:.
func TestContentSecurityPolicy(t *testing.T) {
	directives := map[string]string{}
	for d := range strings.SplitSeq(ContentSecurityPolicy, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	for name, want := range map[string]string{
		"default-src":     "'self'",
		"script-src":      "'self'",
		"style-src":       "'self'",
		"img-src":         "'self' data: blob:",
		"connect-src":     "'self'",
		"object-src":      "'none'",
		"frame-src":       "'none'",
		"base-uri":        "'none'",
		"frame-ancestors": "'none'",
	} {
		if got := directives[name]; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// TestAssetsUseNoInlineCode: the policy forbids inline script and style,
// so the page must hold none (it would silently not run), and no asset
// may set innerHTML or use eval.
func TestAssetsUseNoInlineCode(t *testing.T) {
	files := loadAssets()
	page := string(files["index.html"].content)
	for _, bad := range []string{"<script>", "<style", " style=", " onclick=", " onload=", "javascript:"} {
		if strings.Contains(page, bad) {
			t.Errorf("index.html holds %q, which the policy blocks", bad)
		}
	}
	for name, a := range files {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
			if strings.Contains(string(a.content), bad) {
				t.Errorf("%s uses %s: program output must only reach the page as text", name, bad)
			}
		}
	}
}

func etagOf(t *testing.T, h http.Handler, path string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	e := rec.Header().Get("ETag")
	if e == "" {
		t.Fatalf("GET %s: no ETag", path)
	}
	return e
}
