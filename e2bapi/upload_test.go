package e2bapi_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"testing"

	"github.com/crucible-sandbox/crucible/e2bapi"
	"github.com/crucible-sandbox/crucible/service"
)

// gzipped returns b compressed.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGzipUploads: POST /files with Content-Encoding gzip (the SDKs'
// gzip option) writes the file decompressed; data that is not gzip is
// bad input; a small body that decompresses past the body limit (a gzip
// bomb) is refused with 413, nothing written; other encodings are 415.
func TestGzipUploads(t *testing.T) {
	ts := newTestServer(t, func(c *service.Config) { c.MaxBodyBytes = 1 << 20 })
	key := ts.newKey("acme")
	c := ts.create(key, map[string]any{"templateID": "code-interpreter-v1"})
	upload := func(name string, body []byte, encoding string) response {
		return ts.do("POST", "/files?path=/home/user/"+name, body, append(data(c.SandboxID, e2bapi.EnvdPort, c.EnvdAccessToken),
			"Content-Type", "application/octet-stream", "Content-Encoding", encoding)...)
	}
	content := bytes.Repeat([]byte("crucible,"), 1000)
	if r := upload("z.csv", gzipped(t, content), "gzip"); r.status != http.StatusOK {
		t.Fatalf("gzip upload: %d %s", r.status, r.body)
	}
	r := ts.do("GET", "/files?path=/home/user/z.csv", nil, data(c.SandboxID, e2bapi.EnvdPort, c.EnvdAccessToken)...)
	if r.status != http.StatusOK || !bytes.Equal(r.body, content) {
		t.Errorf("the gzipped file read back: %d, %d bytes, want %d bytes as sent before compression", r.status, len(r.body), len(content))
	}
	upload("bad", []byte("not gzip"), "gzip").wantError(t, http.StatusBadRequest)
	bomb := gzipped(t, make([]byte, 8<<20)) // 8 MiB of zeros in a few KiB
	if len(bomb) > 64<<10 {
		t.Fatalf("the bomb is %d bytes compressed", len(bomb))
	}
	upload("bomb", bomb, "gzip").wantError(t, http.StatusRequestEntityTooLarge)
	ts.do("GET", "/files?path=/home/user/bomb", nil, data(c.SandboxID, e2bapi.EnvdPort, c.EnvdAccessToken)...).wantError(t, http.StatusNotFound)
	upload("br", []byte("x"), "br").wantError(t, http.StatusUnsupportedMediaType)
}

// TestExecuteNullFields: E2B's Python SDK sends every field of /execute,
// null when unset (context_id, language, env_vars): null is unset.
func TestExecuteNullFields(t *testing.T) {
	ts := newTestServer(t, nil)
	c := ts.create(ts.newKey("acme"), map[string]any{"templateID": "code-interpreter-v1"})
	msgs := execute(t, ts, c, map[string]any{"code": "21 * 2", "context_id": nil, "language": nil, "env_vars": nil})
	if res := ofType(msgs, "result"); len(res) != 1 || res[0]["text"] != "42" {
		t.Errorf("a cell with null fields: %v", msgs)
	}
}
