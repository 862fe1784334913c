// Package webui is Crucible's web UI: a page served at / by `crucible
// serve`, with its assets (ES modules, a style sheet) embedded in the
// binary and served under AssetPrefix. Nothing is fetched at run time and
// there is no build step: the assets are the files in assets/, as written.
//
// The page talks to the server only through the public /v1 API, with the
// API key the user gives it (kept in the browser's sessionStorage), so it
// can do nothing a client of the API could not. Every answer of the
// handler carries a strict Content-Security-Policy (scripts and styles
// from the page's origin only, no inline script, images from the origin,
// data: and blob: URLs only, no framing), X-Content-Type-Options: nosniff
// and Referrer-Policy: no-referrer.
package webui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/crucible-sandbox/crucible/api"
)

// AssetPrefix is the path under which the UI's assets are served; the
// page itself is served at "/".
const AssetPrefix = "/ui/"

// ContentSecurityPolicy is the policy of every answer of Handler. The UI
// builds its DOM with textContent and a table sanitiser; the policy is the
// second line of defence should program output ever reach the DOM as
// markup: no inline script or style, no plug-ins, no <base>, no form
// posting elsewhere, and no framing of the UI by another page.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; object-src 'none'; " +
	"frame-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed assets
var assets embed.FS

// asset is one embedded file, ready to serve.
type asset struct {
	content []byte
	ctype   string
	etag    string
}

// Handler serves the UI: GET / is the page, GET AssetPrefix+NAME an asset;
// anything else is 404, with the API's JSON error body. Assets are
// revalidated with their ETag (a hash of their content) on every load, so
// a new binary's UI is never mixed with an old one's cached files.
func Handler() http.Handler {
	files := loadAssets()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		name, ok := assetName(r.URL.Path)
		a, found := files[name]
		if !ok || !found {
			notFound(w, r.URL.Path)
			return
		}
		h.Set("Content-Type", a.ctype)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.content))
	})
}

// notFound answers 404 with the API's JSON error body, as every route of
// the server does.
func notFound(w http.ResponseWriter, p string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: api.Error{Code: api.CodeNotFound,
		Message: "no such page or asset of the web UI: " + strconv.Quote(p)}})
}

// assetName maps a request path to the embedded file it names: "/" is
// index.html, AssetPrefix+NAME is NAME; ok is false for any other path.
func assetName(p string) (name string, ok bool) {
	if p == "/" {
		return "index.html", true
	}
	name, ok = strings.CutPrefix(p, AssetPrefix)
	if !ok || name == "" || name == "index.html" || !fs.ValidPath(name) {
		return "", false
	}
	return name, true
}

// loadAssets reads the embedded files once, with their types and ETags.
func loadAssets() map[string]asset {
	files := map[string]asset{}
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // "assets" is a valid path: cannot happen
	}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		files[name] = asset{content: b, ctype: contentType(name), etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return nil
	})
	if err != nil {
		panic(err) // the embedded FS cannot fail to read
	}
	return files
}

// contentType is the media type of an asset, by its extension (the
// host's MIME table is not consulted, so the answer never depends on it).
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}
