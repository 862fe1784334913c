package e2bapi

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// HomeDir is the sandbox's working directory as E2B's SDKs and the code
// written for E2B name it: /home/user in the sandbox is the session's
// working directory (/work), and a relative path is relative to it.
const HomeDir = "/home/user"

// sessionPath maps a path of envd's file API to a session file name
// (relative to the working directory). Only the working directory is
// reachable: other absolute paths, and '..' leading out of it, are
// refused naming "path".
func sessionPath(p string) (string, error) {
	if p == "" {
		return "", invalid("path", "is required: a file under %s, or a path relative to it", HomeDir)
	}
	c := path.Clean(p)
	if strings.HasPrefix(p, "/") {
		if c == HomeDir {
			return "", invalid("path", "must name a file under %s, not the directory itself", HomeDir)
		}
		rel, ok := strings.CutPrefix(c, HomeDir+"/")
		if !ok {
			return "", invalid("path", "only files under %s (the sandbox's working directory) can be read and written, or paths relative to it; got %q", HomeDir, cut(p, 200))
		}
		return rel, nil
	}
	if c == "." {
		return "", invalid("path", "must name a file under %s, not the directory itself", HomeDir)
	}
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", invalid("path", "must stay under %s: no '..' leading out of it; got %q", HomeDir, cut(p, 200))
	}
	return c, nil
}

// fileFields renames the session's field of a file name to envd's.
var fileFields = map[string]string{"name": "path"}

// entryInfo describes a file written, as envd answers POST /files.
type entryInfo struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// readFile serves envd's GET /files?path=: the file's bytes, redacted by
// the service as every file read is. They are the sandbox's, so they go
// as an attachment a browser will not render.
func (h *Handler) readFile(w http.ResponseWriter, r *http.Request) {
	e, err := h.sandboxOf(r)
	if err != nil {
		h.fail(w, "read file", err, fileFields)
		return
	}
	name, err := sessionPath(r.URL.Query().Get("path"))
	if err != nil {
		h.fail(w, "read file", err, fileFields)
		return
	}
	content, err := e.session().ReadFile(r.Context(), name)
	if err != nil {
		h.fail(w, "read file", err, fileFields)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}))
	hd.Set("Content-Security-Policy", "sandbox")
	hd.Set("Content-Length", strconv.Itoa(len(content)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(content)
}

// upload is one file of a POST /files.
type upload struct {
	name    string // session file name
	content []byte
}

// writeFiles serves envd's POST /files: the body as
// application/octet-stream is the file ?path= names; as
// multipart/form-data, each part named "file" is one, at ?path= (one
// part only) or else at the part's file name (files.write of several
// files). It answers the files written.
func (h *Handler) writeFiles(w http.ResponseWriter, r *http.Request) {
	e, err := h.sandboxOf(r)
	if err != nil {
		h.fail(w, "write file", err, fileFields)
		return
	}
	gzipped := false
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip": // the SDKs' gzip option
		gzipped = true
		// What the body holds once decompressed is not known in advance:
		// reserve the most a body may be, as for a body of unknown length.
		r.ContentLength = -1
	default:
		writeError(w, &apiError{Code: http.StatusUnsupportedMediaType, Field: "Content-Encoding", Rule: "must be absent or gzip",
			Message: "Content-Encoding " + cut(enc, 40) + " is not supported: upload the file uncompressed or gzipped"})
		return
	}
	uploadTypes := []string{"multipart/form-data", "application/octet-stream"}
	if ct := r.Header.Get("Content-Type"); ct == "" {
		writeError(w, unsupportedType(ct, uploadTypes))
		return
	}
	if ae := needContentType(r, uploadTypes...); ae != nil {
		writeError(w, ae)
		return
	}
	query := r.URL.Query().Get("path")
	var files []upload
	limit := h.svc.MaxBodyBytes(e.tenant())
	payload, err := h.readBody(w, r, e.tenant(), func(body io.Reader) error {
		if gzipped {
			zr, err := gzip.NewReader(body)
			if err != nil {
				return invalid("body", "must be gzip data, as Content-Encoding says: %v", err)
			}
			// Decompressed, the body is bounded as an uncompressed one is:
			// a small gzip bomb must not fill memory.
			body = &boundedReader{r: zr, left: limit, limit: limit}
		}
		var err error
		files, err = readUploads(r.Header.Get("Content-Type"), query, body)
		return err
	})
	if err != nil {
		h.fail(w, "write file", err, fileFields)
		return
	}
	defer payload.Release()
	written := make([]entryInfo, 0, len(files))
	for _, f := range files {
		if err := e.session().WriteFile(r.Context(), f.name, f.content); err != nil {
			h.fail(w, "write file", err, fileFields)
			return
		}
		written = append(written, entryInfo{Path: HomeDir + "/" + f.name, Name: path.Base(f.name), Type: "file"})
	}
	writeJSON(w, http.StatusOK, written)
}

// readUploads reads the files of a POST /files body of contentType.
func readUploads(contentType, query string, body io.Reader) ([]upload, error) {
	mt, params, _ := mime.ParseMediaType(contentType)
	if mt == "application/octet-stream" {
		name, err := sessionPath(query)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(body)
		return []upload{{name, b}}, err
	}
	if params["boundary"] == "" {
		return nil, invalid("Content-Type", "must give the multipart boundary")
	}
	mr := multipart.NewReader(body, params["boundary"])
	var files []upload
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		var ae *apiError
		if errors.As(err, &ae) { // the body over its bound
			return nil, ae
		}
		if err != nil {
			return nil, invalid("body", "must be a multipart/form-data body: %v", err)
		}
		if part.FormName() != "file" {
			continue
		}
		target := query
		if target == "" {
			// The part's file name as sent: Part.FileName keeps only its
			// base name, and files.write of several files sends paths.
			_, dp, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			target = dp["filename"]
		}
		name, err := sessionPath(target)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, part); err != nil {
			return nil, err
		}
		files = append(files, upload{name, buf.Bytes()})
	}
	switch {
	case len(files) == 0:
		return nil, invalid("file", "is required: a multipart part named \"file\" holding the file")
	case len(files) > 1 && query != "":
		return nil, invalid("path", "must be absent when several files are sent: each part's file name is its path")
	}
	return files, nil
}

// boundedReader reads r until more than limit bytes came, then fails
// with the body's 413.
type boundedReader struct {
	r           io.Reader
	left, limit int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, tooLarge(b.limit)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, tooLarge(b.limit)
	}
	return n, err
}
