package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// The defaults of a plain `crucible serve` (issue 25): the fast path and
// the data-science image without a flag.

// wantWarm is the zygote slots a server keeps per image without --warm:
// one per CPU, at most 8.
func wantWarm() int { return min(runtime.NumCPU(), 8) }

// metric returns the value of the /metrics sample name{pool="pool"} of s,
// -1 when there is none.
func (s *server) metric(t *testing.T, name, pool string) int {
	t.Helper()
	r := s.do(t, "GET", "/metrics", "", nil)
	m := regexp.MustCompile(`(?m)^` + name + `\{pool="` + regexp.QuoteMeta(pool) + `"\} ([0-9]+)$`).FindSubmatch(r.Body)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// csvUpload is a multipart body uploading one CSV file as datasets, and
// image when it is not "".
func csvUpload(t *testing.T, name, content, image string) (string, io.Reader) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	f, err := w.CreateFormFile("datasets", name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte(content))
	if image != "" {
		_ = w.WriteField("image", image)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), &b
}

// TestServeDefaults starts `crucible serve` with no flag but those that
// place it (--addr, --db, --socket), where the data-science image is
// built, and checks what a new user gets: one line giving the web UI's
// URL; the host image for runs and datascience for sessions and
// analyses (GET /v1/images says so); zygote slots in both (a pool of one
// per CPU, by /metrics) that serve a stateless run; a session and an
// analysis that name no image in datascience; and an analysis that names
// the host image refused up front, 422 naming the image that can.
func TestServeDefaults(t *testing.T) {
	crucibleBinary(t)
	testenv.Image(t, "datascience")
	srv := startServerPlaced(t, "server", filepath.Join(t.TempDir(), "runs.db"))

	lines := regexp.MustCompile(`(?m)^web UI: (\S+)$`).FindAllStringSubmatch(srv.Logs(), -1)
	if len(lines) != 1 || lines[0][1] != srv.URL+"/" {
		t.Errorf("the log's web UI lines: %q; want one, \"web UI: %s/\"", lines, srv.URL)
	}

	var images struct {
		Default        string `json:"default"`
		SessionDefault string `json:"session_default"`
		Images         []struct {
			Name string `json:"name"`
		} `json:"images"`
	}
	if r := srv.do(t, "GET", "/v1/images", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &images) != nil {
		t.Fatalf("GET /v1/images: %d %s", r.Status, r.Body)
	}
	if images.Default != "host" || images.SessionDefault != "datascience" || len(images.Images) != 2 || images.Images[1].Name != "datascience" {
		t.Errorf("GET /v1/images = %+v; want host for runs, datascience for sessions, both offered", images)
	}

	for _, pool := range []string{"warm", "datascience/warm"} {
		if got := srv.metric(t, "crucible_pool_size", pool); got != wantWarm() {
			t.Errorf("crucible_pool_size{pool=%q} = %d, want %d (a zygote slot per CPU)", pool, got, wantWarm())
		}
	}
	if !poll(2*time.Minute, func() bool { return srv.metric(t, "crucible_pool_ready", "warm") > 0 }) {
		t.Fatal("no zygote slot of the host image ready within 2 minutes")
	}
	hits := srv.metric(t, "crucible_pool_hits_total", "warm")
	var run api.RunResponse
	if r := srv.do(t, "POST", "/v1/runs", "application/json", strings.NewReader(`{"code": "print(1)"}`)); r.Status != 200 || json.Unmarshal(r.Body, &run) != nil ||
		string(run.Stdout) != "1\n" || run.Image != "host" {
		t.Fatalf("print(1): %d %s; want 1 in the host image", r.Status, clip(r.Body))
	}
	if got := srv.metric(t, "crucible_pool_hits_total", "warm"); got != hits+1 {
		t.Errorf("the run was not served by a zygote slot: hits %d, then %d", hits, got)
	}

	r := srv.do(t, "POST", "/v1/sessions", "application/json", strings.NewReader(`{}`))
	var sess struct {
		ID    string `json:"id"`
		Image string `json:"image"`
	}
	if r.Status != 201 || json.Unmarshal(r.Body, &sess) != nil || sess.Image != "datascience" {
		t.Errorf("POST /v1/sessions {}: %d %s; want a session in datascience", r.Status, clip(r.Body))
	}
	srv.do(t, "DELETE", "/v1/sessions/"+sess.ID, "", nil)

	ct, body := csvUpload(t, "sales.csv", "region,amount\nnorth,10\nsouth,32\n", "")
	r = srv.do(t, "POST", "/v1/analyses", ct, body)
	var an struct {
		Image       string `json:"image"`
		ProfileText string `json:"profile_text"`
	}
	if r.Status != 201 || json.Unmarshal(r.Body, &an) != nil || an.Image != "datascience" || !strings.Contains(an.ProfileText, "amount") {
		t.Errorf("POST /v1/analyses naming no image: %d %s; want an analysis in datascience with its profile", r.Status, clip(r.Body))
	}

	ct, body = csvUpload(t, "sales.csv", "region,amount\nnorth,10\n", "host")
	r = srv.do(t, "POST", "/v1/analyses", ct, body)
	checkAPIError(t, "an analysis in the host image", r, http.StatusUnprocessableEntity, "unsuitable_image", "image")
	if !bytes.Contains(r.Body, []byte(`\"image\": \"datascience\"`)) {
		t.Errorf("the refusal names no image that has pandas: %s", r.Body)
	}
}

// TestServeAnalysisWithoutPandas: on a server offering only the host's
// directories, which have no pandas, an analysis is refused before
// anything runs, 422 unsuitable_image naming image, and the message
// says how to build an image that has it; no session is left open.
func TestServeAnalysisWithoutPandas(t *testing.T) {
	crucibleBinary(t)
	srv := startServerPlaced(t, "server", filepath.Join(t.TempDir(), "runs.db"), "--image", "host", "--warm", "0", "--prestart", "0")
	if !strings.Contains(srv.Logs(), "no image offered has pandas") {
		t.Errorf("the log does not warn that analyses are refused:\n%s", srv.Logs())
	}
	ct, body := csvUpload(t, "sales.csv", "region,amount\nnorth,10\n", "")
	r := srv.do(t, "POST", "/v1/analyses", ct, body)
	checkAPIError(t, "an analysis without pandas", r, http.StatusUnprocessableEntity, "unsuitable_image", "image")
	if !bytes.Contains(r.Body, []byte("crucible image build")) {
		t.Errorf("the refusal does not say how to build an image with pandas: %s", r.Body)
	}
	var open struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	if r := srv.do(t, "GET", "/v1/sessions", "", nil); r.Status != 200 || json.Unmarshal(r.Body, &open) != nil || len(open.Sessions) != 0 {
		t.Errorf("GET /v1/sessions after the refusal: %d %s; want none open", r.Status, clip(r.Body))
	}
}
