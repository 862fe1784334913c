package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/internal/testenv"
)

// TestServePoolFailuresReported starts `crucible serve` (the real binary)
// over a root filesystem without Python, where every zygote slot's build
// fails, and checks that /metrics counts the failures of the "warm" pool
// and that the server's log says why, once, not once per failure.
func TestServePoolFailuresReported(t *testing.T) {
	testenv.Root(t)
	rootfs := t.TempDir()
	if err := os.Mkdir(filepath.Join(rootfs, "usr"), 0o755); err != nil {
		t.Fatal(err)
	}
	base, logs := serveProcess(t, []string{"--rootfs", rootfs, "--prestart", "0", "--warm", "1"})
	failures := func() int {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		m := regexp.MustCompile(`(?m)^crucible_pool_build_failures_total\{pool="warm"\} (\d+)$`).FindSubmatch(b)
		if m == nil {
			return 0
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	for deadline := time.Now().Add(2 * time.Minute); failures() < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics did not count 3 failed builds of the warm pool within 2 minutes; server log:\n%s", logs.String())
		}
	}
	log := logs.String()
	lines := regexp.MustCompile(`(?m)^.*a build failed.*$`).FindAllString(log, -1)
	if len(lines) == 0 || len(lines) >= failures() {
		t.Fatalf("want the first failed build logged and later ones left out, got %d lines for %d failures:\n%s", len(lines), failures(), log)
	}
	for _, want := range []string{"level=ERROR", "pool=warm", "image=rootfs", "python3", "consecutive=1", "suppressed=0"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the first failure's line lacks %q: %s", want, lines[0])
		}
	}
}
