package server

import (
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// serveUntrusted answers content a program made: an artifact or a
// session's file called name, of media type mimeType as its name or bytes
// suggest. Whatever the program chose, a browser must never treat it as a
// page of the API's origin, where its script could call the API with the
// user's credentials: it is an attachment (downloaded, not shown), under
// a CSP sandbox (no script, a unique origin, should it be shown anyway),
// never sniffed into something more active than its type, and of a type
// a browser does not run (safeContentType).
func serveUntrusted(w http.ResponseWriter, name, mimeType string, content []byte) {
	h := w.Header()
	h.Set("Content-Type", safeContentType(mimeType))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("Content-Disposition", attachment(name))
	h.Set("Content-Length", strconv.Itoa(len(content)))
	_, _ = w.Write(content)
}

// passiveTypes are the media types served as they are: a browser shows
// them, and runs nothing in them.
var passiveTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
	"application/json": true, "application/octet-stream": true,
}

// safeContentType returns the Content-Type to serve untrusted content of
// media type mimeType with: a passive type as it is; plain text and CSV
// as UTF-8 text; any other text, HTML, XML, SVG and script included, as
// plain text, so that it reads as source and never runs; anything else
// (PDF, archives, unknown) as application/octet-stream.
func safeContentType(mimeType string) string {
	mt, _, err := mime.ParseMediaType(mimeType)
	switch {
	case err != nil:
		return "application/octet-stream"
	case passiveTypes[mt]:
		return mt
	case mt == "text/csv":
		return "text/csv; charset=utf-8"
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+xml"), strings.HasSuffix(mt, "+json"),
		mt == "application/xml", mt == "application/javascript", mt == "application/xhtml+xml":
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// attachment is the Content-Disposition of a download of the file name:
// an attachment named after its base name (the program chose it, so it is
// encoded, never pasted into the header).
func attachment(name string) string {
	if d := mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}); d != "" {
		return d
	}
	return "attachment"
}
