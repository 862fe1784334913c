package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/crucible-sandbox/crucible/service"
)

// FuzzDecodeRunRequest posts arbitrary bodies to POST /v1/runs on a fake
// runtime: the server must never panic, must answer 200 or a JSON error,
// and must never hand the runtime an invalid request.
func FuzzDecodeRunRequest(f *testing.F) {
	for _, seed := range []string{
		`{"language":"python","code":"print(1)"}`,
		`{"language":"bash","code":"echo hi","stdin":{"base64":"AAE="},"env":{"A":"b"}}`,
		`{"language":"python","code":"1","files":[{"name":"a/b.txt","content":"x","executable":true}]}`,
		`{"language":"python","code":"1","limits":{"wall_time_ms":-1}}`,
		`{"language":"python","code":"1","files":[{"name":"../x","content":""}]}`,
		`{"language":"python","code":"1","env":{"1A":"x"}}`,
		`{"language":"javascript","code":"a\u0000b"}`,
		`{"language":"cobol"}`,
		`{"language":"python","code":"1","network":"host"}`,
		`{"language":"python","code":"1"} trailing`,
		`{"language":"python","code":"1","extra":true}`,
		`null`, `[]`, `"x"`, ``, `{`,
	} {
		f.Add([]byte(seed))
	}
	rt := &fakeRuntime{}
	srv, _ := newServer(f, config{Config: service.Config{Runtime: rt, MaxBodyBytes: 1 << 16}})
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		runsBefore := rt.runs.Load()
		w := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "http://localhost/v1/runs?cache=0", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK:
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			var e struct {
				Error struct{ Code string } `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Code == "" {
				t.Fatalf("status %d with body %q", w.Code, w.Body)
			}
			if rt.runs.Load() != runsBefore {
				t.Fatalf("a request refused with %d reached the runtime: %q", w.Code, body)
			}
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		}
		if n := rt.invalid.Load(); n > 0 {
			t.Fatalf("the runtime got an invalid request: %q", body)
		}
	})
}
