package linux_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox/linux"
)

// logRecorder is a slog.Handler that keeps every record, with the
// attributes of the logger's With.
type logRecorder struct {
	mu      *sync.Mutex
	records *[]map[string]string // each: "msg", "level", then the attributes
	attrs   []slog.Attr
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: &sync.Mutex{}, records: &[]map[string]string{}}
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	rec := map[string]string{"msg": r.Message, "level": r.Level.String()}
	for _, a := range h.attrs {
		rec[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { rec[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	*h.records = append(*h.records, rec)
	h.mu.Unlock()
	return nil
}

func (h *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logRecorder{mu: h.mu, records: h.records, attrs: append(append([]slog.Attr{}, h.attrs...), attrs...)}
}

func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// lines returns the records whose message holds msg.
func (h *logRecorder) lines(msg string) []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]string
	for _, r := range *h.records {
		if strings.Contains(r["msg"], msg) {
			out = append(out, r)
		}
	}
	return out
}

// TestPoolBuildFailureReported proves that a pool whose builds fail for
// good (a zygote slot over a root filesystem without Python) counts every
// failure, backs off, and logs the first failure with its cause, not one
// line per failure.
func TestPoolBuildFailureReported(t *testing.T) {
	rootfs := t.TempDir()
	if err := os.Mkdir(filepath.Join(rootfs, "usr"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := newLogRecorder()
	rt := newRuntime(t, linux.Options{RootFS: rootfs, Warm: 1, Logger: slog.New(rec)})
	start := time.Now()
	deadline := start.Add(2 * time.Minute)
	for rt.WarmStats().BuildFailures < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not report 4 failed builds within 2 minutes: %+v", rt.WarmStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	failures := rt.WarmStats().BuildFailures
	lines := rec.lines("a build failed")
	if len(lines) == 0 {
		t.Fatalf("%d failed builds and no log line; records: %v", failures, rec.lines(""))
	}
	first := lines[0]
	if first["level"] != "ERROR" || first["pool"] != "warm" || first["consecutive"] != "1" || first["suppressed"] != "0" ||
		!strings.Contains(first["err"], "python3") {
		t.Errorf("the first failure's line is %v, want level ERROR, pool warm, consecutive 1, suppressed 0, and the cause (no python3)", first)
	}
	// Builds retried with a backoff, logged at most once per 30 seconds.
	if max := 1 + int(elapsed/(30*time.Second)); len(lines) > max {
		t.Errorf("%d failed builds in %s logged %d lines, want at most %d: %v", failures, elapsed, len(lines), max, lines)
	}
	if st := rt.WarmStats(); st.Ready != 0 || st.Hits != 0 {
		t.Errorf("a pool that built nothing reports %+v", st)
	}
}
