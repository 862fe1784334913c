package linux

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestRateLog checks that a rateLog writes the first occurrence, then
// nothing until its interval has passed, then one line saying how many
// it left out.
func TestRateLog(t *testing.T) {
	var buf bytes.Buffer
	l := newRateLog(slog.New(slog.NewTextHandler(&buf, nil)), slog.LevelWarn, "it failed")
	l.every = 200 * time.Millisecond
	for i := range 5 {
		l.add(slog.Int("n", i))
	}
	if got := strings.Count(buf.String(), "it failed"); got != 1 || !strings.Contains(buf.String(), "n=0 suppressed=0") {
		t.Fatalf("5 occurrences at once wrote %d lines, want the first alone:\n%s", got, buf.String())
	}
	time.Sleep(l.every)
	l.add(slog.Int("n", 5))
	if got := strings.Count(buf.String(), "it failed"); got != 2 || !strings.Contains(buf.String(), "n=5 suppressed=4") {
		t.Fatalf("after the interval, want a second line with n=5 suppressed=4:\n%s", buf.String())
	}
}
