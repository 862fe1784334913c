package server

import (
	"net/http/httptest"
	"testing"
)

// TestSafeContentType: untrusted content is served as a type a browser
// does not run, whatever the program's file name or bytes suggest.
func TestSafeContentType(t *testing.T) {
	cases := []struct{ in, want string }{
		{"image/png", "image/png"},
		{"image/jpeg", "image/jpeg"},
		{"application/json", "application/json"},
		{"text/plain; charset=utf-8", "text/plain; charset=utf-8"},
		{"text/csv", "text/csv; charset=utf-8"},
		{"text/html; charset=utf-8", "text/plain; charset=utf-8"},
		{"text/javascript; charset=utf-8", "text/plain; charset=utf-8"},
		{"application/javascript", "text/plain; charset=utf-8"},
		{"image/svg+xml", "text/plain; charset=utf-8"},
		{"application/xhtml+xml", "text/plain; charset=utf-8"},
		{"application/xml", "text/plain; charset=utf-8"},
		{"application/geo+json", "text/plain; charset=utf-8"},
		{"application/pdf", "application/octet-stream"},
		{"application/x-shockwave-flash", "application/octet-stream"},
		{"", "application/octet-stream"},
		{"not a type", "application/octet-stream"},
	}
	for _, c := range cases {
		if got := safeContentType(c.in); got != c.want {
			t.Errorf("safeContentType(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestServeUntrusted: the headers of an untrusted download, its file name
// encoded whatever the program called it.
func TestServeUntrusted(t *testing.T) {
	cases := []struct{ name, mime, disposition string }{
		{"plots/fig.png", "image/png", `attachment; filename=fig.png`},
		{"page.html", "text/html", `attachment; filename=page.html`},
		{`a"b;c.txt`, "text/plain", `attachment; filename="a\"b;c.txt"`},
		{"résumé.txt", "text/plain", `attachment; filename*=utf-8''r%C3%A9sum%C3%A9.txt`},
		{"evil\r\nSet-Cookie: x=1", "", `attachment; filename*=utf-8''evil%0D%0ASet-Cookie%3A%20x%3D1`},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		serveUntrusted(rec, c.name, c.mime, []byte("body"))
		h := rec.Header()
		if got := h.Get("Content-Disposition"); got != c.disposition {
			t.Errorf("%q: Content-Disposition %q, want %q", c.name, got, c.disposition)
		}
		if h.Get("Content-Security-Policy") != "sandbox" || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("Content-Type") != safeContentType(c.mime) || h.Get("Content-Length") != "4" || rec.Body.String() != "body" {
			t.Errorf("%q: headers %v, body %q", c.name, h, rec.Body)
		}
	}
}
