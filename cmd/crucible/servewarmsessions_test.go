package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestServeWarmSessions starts `crucible serve --warm-sessions 1` (the real
// binary, the host image) and checks that /metrics reports the pool as
// "warm-sessions", that a session created through the API is served from
// it, and that its cells run.
func TestServeWarmSessions(t *testing.T) {
	testenv.Root(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := crucibleCommand("serve", "--addr", addr, "--image", "host", "--prestart", "0", "--warm-sessions", "1", "--db", filepath.Join(t.TempDir(), "runs.db"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	base := "http://" + addr
	pool := func(metric string) string {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^crucible_pool_` + metric + `\{pool="warm-sessions"\} (\S+)$`).FindSubmatch(b)
		if m == nil {
			return ""
		}
		return string(m[1])
	}
	for deadline := time.Now().Add(time.Minute); pool("ready") != "1"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the warm-session pool did not fill within a minute; server stderr:\n%s", stderr.String())
		}
	}
	post := func(path, body string, out any) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 || json.Unmarshal(b, out) != nil {
			t.Fatalf("POST %s: %s %s", path, resp.Status, b)
		}
	}
	var ses struct {
		ID string `json:"id"`
	}
	post("/v1/sessions", `{}`, &ses)
	if got := pool("hits_total"); got != "1" {
		t.Errorf("warm-sessions hits after one session: %q, want 1", got)
	}
	var res struct {
		Status string `json:"status"`
		Value  string `json:"value"`
	}
	post(fmt.Sprintf("/v1/sessions/%s/exec", ses.ID), `{"code": "6 * 7"}`, &res)
	if res.Status != "ok" || res.Value != "42" {
		t.Errorf("cell in the warm session: %+v", res)
	}
}
